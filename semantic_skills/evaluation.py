"""Measure routing quality on labelled messages, and fit the decision gate to them.

A labelled file is JSON lines: ``{"query": ..., "gold": [names], "acceptable":
[names], "source": ...}``; ``gold: []`` means nothing should be injected, and
``acceptable`` names other skills that also count as right. Metrics are
computed from the decisions exactly as ``route --queries`` prints them: the
``skill`` field for injections, ``candidates[0]`` for top-1.

The leave-out evaluation routes every message that has a skill a second time
with its gold and acceptable skills made ineligible. The right answer is then
"inject nothing": the nearest remaining skills are genuine look-alikes, so any
injection is a false injection into a neighbouring-domain message.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np

from .errors import SemanticSkillsError
from .gates import FLOOR, Gate
from .index.store import write_router_section

DEFAULT_MIN_PRECISION = 0.80
FLOOR_GRID = tuple(round(FLOOR + 0.02 * i, 2) for i in range(26))  # 0.30 .. 0.80
GAP_GRID = tuple(round(0.01 * i, 2) for i in range(101))  # 0.00 .. 1.00
BARE_EMBEDDING_EVERY = 5


class LabelledFileError(SemanticSkillsError):
    """A labelled queries file that cannot be read."""


@dataclass(frozen=True)
class LabelledQuery:
    """One labelled message."""

    query: str
    gold: tuple[str, ...]
    acceptable: tuple[str, ...] = ()
    source: str = ""

    @property
    def right(self) -> frozenset[str]:
        """Every skill whose injection counts as right."""
        return frozenset(self.gold) | frozenset(self.acceptable)

    @property
    def positive(self) -> bool:
        return bool(self.gold)


@dataclass(frozen=True)
class RoutedQuery:
    """A labelled message, the router's decision for it and how long it took (``embed_ms``: a bare
    query embedding of the same text, timed for every ``BARE_EMBEDDING_EVERY``-th message, else None).

    ``left_out`` marks a leave-out copy: the message routed with its right skills excluded.
    """

    labelled: LabelledQuery
    decision: object  # router.Decision
    route_ms: float
    embed_ms: float | None = None
    left_out: bool = False


def read_labelled(path: str | Path) -> list[LabelledQuery]:
    """Parse a labelled JSONL file; raises :class:`LabelledFileError` naming the bad line."""
    queries = []
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                query, gold = record["query"], record.get("gold", [])
                acceptable = record.get("acceptable", [])
                if not isinstance(query, str) or not isinstance(gold, list) or not isinstance(acceptable, list):
                    raise ValueError('"query" must be a string, "gold" and "acceptable" lists')
            except (ValueError, KeyError, TypeError) as exc:
                raise LabelledFileError(f"{path}, line {number}: not a labelled query ({exc})") from None
            queries.append(LabelledQuery(query, tuple(map(str, gold)), tuple(map(str, acceptable)),
                                         str(record.get("source", ""))))
    if not queries:
        raise LabelledFileError(f"{path} holds no labelled queries")
    return queries


def route_all(router, queries: Sequence[LabelledQuery], progress: Callable[[int], None] | None = None,
              leave_out: bool = False) -> list[RoutedQuery]:
    """Route every query, timing ``route()`` and, for comparison, a bare embedding of some of the texts.

    With ``leave_out``, each message with a skill is also routed with its right
    skills excluded (right after the first route, so its embedding is cached;
    leave-out copies are not timed).
    """
    routed = []
    for number, labelled in enumerate(queries):
        started = time.perf_counter()
        decision = router.route(labelled.query)
        route_ms = (time.perf_counter() - started) * 1000
        embed_ms = None
        if number % BARE_EMBEDDING_EVERY == 0:
            started = time.perf_counter()
            router.embedder.embed_query(labelled.query)
            embed_ms = (time.perf_counter() - started) * 1000
        routed.append(RoutedQuery(labelled, decision, route_ms, embed_ms))
        if leave_out and labelled.positive:
            routed.append(RoutedQuery(labelled, router.route(labelled.query, exclude=labelled.right), 0.0,
                                      left_out=True))
        if progress:
            progress(1)
    return routed


def quality(labelled: Sequence[LabelledQuery], decisions: Sequence[dict]) -> dict:
    """Routing metrics of ``decisions`` (dicts as ``route --queries`` prints them) against the labels.

    Rates over messages with a skill: ``top1``, ``recall_at_5``, ``mrr``,
    ``correct_injection``, ``wrong_injection``; over messages without one:
    ``false_injection``; over all injections: ``precision`` (None when a
    rate has no messages to count).
    """
    positives = [(q, d) for q, d in zip(labelled, decisions) if q.positive]
    negatives = [d for q, d in zip(labelled, decisions) if not q.positive]
    ranks = [_first_right_rank(q, d) for q, d in positives]
    correct = sum(d["skill"] is not None and d["skill"] in q.right for q, d in positives)
    wrong = sum(d["skill"] is not None and d["skill"] not in q.right for q, d in positives)
    false = sum(d["skill"] is not None for d in negatives)
    injections = correct + wrong + false
    return {
        "messages": len(decisions),
        "positives": len(positives),
        "negatives": len(negatives),
        "top1": _rate(sum(r == 1 for r in ranks), len(positives)),
        "recall_at_5": _rate(sum(0 < r <= 5 for r in ranks), len(positives)),
        "mrr": _rate(sum(1 / r for r in ranks if r), len(positives)),
        "correct_injection": _rate(correct, len(positives)),
        "wrong_injection": _rate(wrong, len(positives)),
        "false_injection": _rate(false, len(negatives)),
        "precision": _rate(correct, injections),
        "injections": injections,
    }


def leave_out_quality(decisions: Sequence[dict]) -> dict:
    """False injections among leave-out decisions (every one of them should inject nothing)."""
    injections = sum(d["skill"] is not None for d in decisions)
    return {"messages": len(decisions), "injections": injections, "false_injection": _rate(injections, len(decisions))}


def _first_right_rank(query: LabelledQuery, decision: dict) -> int:
    """1-based rank of the first right skill among the candidates, 0 if none."""
    for rank, candidate in enumerate(decision.get("candidates") or [], 1):
        if candidate["name"] in query.right:
            return rank
    return 0


def _rate(count: float, total: int) -> float | None:
    return count / total if total else None


def evaluation_report(routed: Sequence[RoutedQuery]) -> dict:
    """Overall and per-``source`` quality, plus route and bare-embedding latency; with leave-out
    copies in ``routed``, also their false-injection rate overall and per source."""
    first = [r for r in routed if not r.left_out]
    labelled = [r.labelled for r in first]
    decisions = [r.decision.as_dict() for r in first]
    sources = sorted({q.source for q in labelled})
    route_ms = np.array([r.route_ms for r in first])
    embed_ms = np.array([r.embed_ms for r in first if r.embed_ms is not None])
    report = {
        "overall": quality(labelled, decisions),
        "by_source": {
            source: quality([q for q in labelled if q.source == source],
                            [d for q, d in zip(labelled, decisions) if q.source == source])
            for source in sources
        },
    }
    left_out = [r for r in routed if r.left_out]
    if left_out:
        report["leave_out"] = {
            "overall": leave_out_quality([r.decision.as_dict() for r in left_out]),
            "by_source": {
                source: leave_out_quality([r.decision.as_dict() for r in left_out if r.labelled.source == source])
                for source in sorted({r.labelled.source for r in left_out})
            },
        }
    report["latency_ms"] = {
        "route_median": float(np.median(route_ms)),
        "route_p95": float(np.percentile(route_ms, 95)),
        "embed_median": float(np.median(embed_ms)),
        "embed_p95": float(np.percentile(embed_ms, 95)),
        "route_over_embed": float(np.median(route_ms) / max(np.median(embed_ms), 1e-9)),
    }
    return report


# --------------------------------------------------------------------------- calibration


@dataclass(frozen=True)
class GatePoint:
    """What one gate setting does on a labelled set.

    ``precision`` is over the labelled messages, as ``eval`` reports it;
    ``leave_out_false_injection`` is over the leave-out copies (None without
    any); ``objective_precision`` counts those false injections too, and is
    what calibration holds to ``min_precision``.
    """

    gate: Gate
    correct_injection: float
    wrong_injection: float
    false_injection: float | None
    precision: float | None
    injections: int
    leave_out_false_injection: float | None = None
    objective_precision: float | None = None


@dataclass(frozen=True)
class Calibration:
    """The chosen gate, whether it meets the precision asked for, and every setting tried."""

    chosen: GatePoint
    meets_target: bool
    min_precision: float
    points: list[GatePoint]

    def floor_table(self) -> list[GatePoint]:
        """Every relative-gap threshold at the chosen floor."""
        return [p for p in self.points if p.gate.floor == self.chosen.gate.floor]

    def gap_table(self) -> list[GatePoint]:
        """Every floor at the chosen relative-gap threshold."""
        return [p for p in self.points if p.gate.min_relative_gap == self.chosen.gate.min_relative_gap]


def calibrate(routed: Sequence[RoutedQuery], min_precision: float = DEFAULT_MIN_PRECISION,
              floors: Iterable[float] = FLOOR_GRID, gaps: Iterable[float] = GAP_GRID) -> Calibration:
    """Fit the gate: the setting with the most correct injections whose objective precision is >= ``min_precision``.

    The objective precision is right injections over all injections, those
    into leave-out copies included: each copy is one more message that must
    get nothing. Decisions are re-judged from the features the router
    recorded, so no message is embedded twice. When no setting is that
    precise, the most precise one is chosen and ``meets_target`` is False.
    """
    left_out = np.array([r.left_out for r in routed], dtype=bool)
    positive = np.array([r.labelled.positive for r in routed], dtype=bool) & ~left_out
    negative = ~positive & ~left_out
    top_right = np.array([bool(r.decision.candidates) and r.decision.candidates[0].name in r.labelled.right
                          for r in routed], dtype=bool)
    judged = np.array([bool(r.decision.features) for r in routed], dtype=bool)
    similarity = np.array([r.decision.features.get("similarity", 0.0) for r in routed])
    gap = np.array([r.decision.features.get("relative_gap", 0.0) for r in routed])
    points = []
    for floor in floors:
        for min_gap in gaps:
            gate = Gate(floor, min_gap)
            inject = judged & (similarity >= gate.floor) & (gap >= gate.min_relative_gap)
            points.append(_gate_point(gate, inject, positive, negative, left_out, top_right))
    precise = [p for p in points if p.objective_precision is not None and p.objective_precision >= min_precision]
    if precise:
        chosen = max(precise, key=lambda p: (p.correct_injection, p.objective_precision, -p.gate.floor))
    else:
        chosen = max((p for p in points if p.objective_precision is not None),
                     key=lambda p: (p.objective_precision, p.correct_injection), default=points[0])
    return Calibration(chosen, bool(precise), min_precision, points)


def _gate_point(gate: Gate, inject: np.ndarray, positive: np.ndarray, negative: np.ndarray,
                left_out: np.ndarray, top_right: np.ndarray) -> GatePoint:
    correct = int((inject & positive & top_right).sum())
    wrong = int((inject & positive & ~top_right).sum())
    false = int((inject & negative).sum())
    leave_out_false = int((inject & left_out).sum())
    labelled_injections = correct + wrong + false
    all_injections = labelled_injections + leave_out_false
    return GatePoint(
        gate,
        correct / max(int(positive.sum()), 1),
        wrong / max(int(positive.sum()), 1),
        _rate(false, int(negative.sum())),
        _rate(correct, labelled_injections),
        labelled_injections,
        _rate(leave_out_false, int(left_out.sum())),
        _rate(correct, all_injections),
    )


def save_gate(index_dir: str | Path, calibration: Calibration, queries_file: str, messages: int) -> dict:
    """Store the chosen gate in the index manifest's ``router`` section; returns that section."""
    point = calibration.chosen
    router = {
        "threshold": point.gate.floor,
        "min_relative_gap": point.gate.min_relative_gap,
        "calibration": {
            "queries": queries_file,
            "messages": messages,
            "min_precision": calibration.min_precision,
            "precision": point.precision,
            "leave_out_false_injection": point.leave_out_false_injection,
            "objective_precision": point.objective_precision,
            "correct_injection": point.correct_injection,
            "calibrated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
    }
    write_router_section(Path(index_dir), router)
    return router
