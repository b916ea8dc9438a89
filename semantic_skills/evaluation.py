"""Measure routing quality on labelled messages, and fit the decision gate to them.

A labelled file is JSON lines: ``{"query": ..., "gold": [names], "acceptable":
[names], "source": ...}``; ``gold: []`` means nothing should be injected, and
``acceptable`` names other skills that also count as right. Metrics are
computed from the decisions exactly as ``route --queries`` prints them: the
``skill`` field for injections, ``candidates[0]`` for top-1.
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
    query embedding of the same text, timed for every ``BARE_EMBEDDING_EVERY``-th message, else None)."""

    labelled: LabelledQuery
    decision: object  # router.Decision
    route_ms: float
    embed_ms: float | None = None


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


def route_all(router, queries: Sequence[LabelledQuery],
              progress: Callable[[int], None] | None = None) -> list[RoutedQuery]:
    """Route every query, timing ``route()`` and, for comparison, a bare embedding of some of the texts."""
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


def _first_right_rank(query: LabelledQuery, decision: dict) -> int:
    """1-based rank of the first right skill among the candidates, 0 if none."""
    for rank, candidate in enumerate(decision.get("candidates") or [], 1):
        if candidate["name"] in query.right:
            return rank
    return 0


def _rate(count: float, total: int) -> float | None:
    return count / total if total else None


def evaluation_report(routed: Sequence[RoutedQuery]) -> dict:
    """Overall and per-``source`` quality, plus route and bare-embedding latency."""
    labelled = [r.labelled for r in routed]
    decisions = [r.decision.as_dict() for r in routed]
    sources = sorted({q.source for q in labelled})
    route_ms = np.array([r.route_ms for r in routed])
    embed_ms = np.array([r.embed_ms for r in routed if r.embed_ms is not None])
    return {
        "overall": quality(labelled, decisions),
        "by_source": {
            source: quality([q for q in labelled if q.source == source],
                            [d for q, d in zip(labelled, decisions) if q.source == source])
            for source in sources
        },
        "latency_ms": {
            "route_median": float(np.median(route_ms)),
            "route_p95": float(np.percentile(route_ms, 95)),
            "embed_median": float(np.median(embed_ms)),
            "embed_p95": float(np.percentile(embed_ms, 95)),
            "route_over_embed": float(np.median(route_ms) / max(np.median(embed_ms), 1e-9)),
        },
    }


# --------------------------------------------------------------------------- calibration


@dataclass(frozen=True)
class GatePoint:
    """What one gate setting does on a labelled set."""

    gate: Gate
    correct_injection: float
    wrong_injection: float
    false_injection: float | None
    precision: float | None
    injections: int


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
    """Fit the gate: the setting with the most correct injections whose precision is >= ``min_precision``.

    Decisions are re-judged from the features the router recorded, so no
    message is embedded twice. When no setting is that precise, the most
    precise one is chosen and ``meets_target`` is False.
    """
    positive = np.array([r.labelled.positive for r in routed])
    top_right = np.array([bool(r.decision.candidates) and r.decision.candidates[0].name in r.labelled.right
                          for r in routed])
    judged = np.array([bool(r.decision.features) for r in routed])
    similarity = np.array([r.decision.features.get("similarity", 0.0) for r in routed])
    gap = np.array([r.decision.features.get("relative_gap", 0.0) for r in routed])
    points = []
    for floor in floors:
        for min_gap in gaps:
            gate = Gate(floor, min_gap)
            inject = judged & (similarity >= gate.floor) & (gap >= gate.min_relative_gap)
            correct = int((inject & positive & top_right).sum())
            wrong = int((inject & positive & ~top_right).sum())
            false = int((inject & ~positive).sum())
            points.append(GatePoint(
                gate,
                correct / max(int(positive.sum()), 1),
                wrong / max(int(positive.sum()), 1),
                false / int((~positive).sum()) if (~positive).any() else None,
                correct / (correct + wrong + false) if correct + wrong + false else None,
                correct + wrong + false,
            ))
    precise = [p for p in points if p.precision is not None and p.precision >= min_precision]
    if precise:
        chosen = max(precise, key=lambda p: (p.correct_injection, p.precision, -p.gate.floor))
    else:
        chosen = max((p for p in points if p.precision is not None),
                     key=lambda p: (p.precision, p.correct_injection), default=points[0])
    return Calibration(chosen, bool(precise), min_precision, points)


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
            "correct_injection": point.correct_injection,
            "calibrated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
    }
    write_router_section(Path(index_dir), router)
    return router
