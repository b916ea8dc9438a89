"""Measure routing quality on labelled messages (calibration.py fits the gate to them).

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
from typing import Callable, Sequence

import numpy as np

from .errors import SemanticSkillsError

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
        "top1": rate(sum(r == 1 for r in ranks), len(positives)),
        "recall_at_5": rate(sum(0 < r <= 5 for r in ranks), len(positives)),
        "mrr": rate(sum(1 / r for r in ranks if r), len(positives)),
        "correct_injection": rate(correct, len(positives)),
        "wrong_injection": rate(wrong, len(positives)),
        "false_injection": rate(false, len(negatives)),
        "precision": rate(correct, injections),
        "injections": injections,
    }


def leave_out_quality(decisions: Sequence[dict]) -> dict:
    """False injections among leave-out decisions (every one of them should inject nothing)."""
    injections = sum(d["skill"] is not None for d in decisions)
    return {"messages": len(decisions), "injections": injections, "false_injection": rate(injections, len(decisions))}


def _first_right_rank(query: LabelledQuery, decision: dict) -> int:
    """1-based rank of the first right skill among the candidates, 0 if none."""
    for rank, candidate in enumerate(decision.get("candidates") or [], 1):
        if candidate["name"] in query.right:
            return rank
    return 0


def rate(count: float, total: int) -> float | None:
    """``count / total``, or None when there is nothing to count."""
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
        left_decisions = [r.decision.as_dict() for r in left_out]
        left_sources = [r.labelled.source for r in left_out]
        report["leave_out"] = {
            "overall": leave_out_quality(left_decisions),
            "by_source": {
                source: leave_out_quality([d for s, d in zip(left_sources, left_decisions) if s == source])
                for source in sorted(set(left_sources))
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
