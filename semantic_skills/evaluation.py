"""Measure routing quality on labelled messages (calibration.py fits the gate to them).

A labelled file is JSON lines: ``{"query": ..., "gold": [names], "acceptable":
[names], "source": ...}``; ``gold: []`` means nothing should be injected, and
``acceptable`` names other skills that also count as right. Metrics are
computed from the decisions exactly as ``route --queries`` prints them: the
``skill``, ``mode`` and ``named`` fields for injections (a decision without a
``mode`` is a full one), ``candidates`` for top-1.

The leave-out evaluation routes every message that has a skill a second time
with its gold and acceptable skills made ineligible. The right answer is then
"inject nothing": the nearest remaining skills are genuine look-alikes, so any
injection is a false injection into a neighbouring-domain message.
"""

from __future__ import annotations

import functools
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np

from .errors import SemanticSkillsError
from .files import read_regular_file
from .gates import FULL, HINT
from .injection import skill_block, skill_body
from .limits import MAX_HINT_CHARS
from .skills.discovery import MAX_SKILL_BYTES

BARE_EMBEDDING_EVERY = 5
MAX_LABELLED_BYTES = 64 << 20  # a labelled queries file (the project's sets are a few hundred KB)


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
    for number, line in enumerate(read_regular_file(path, MAX_LABELLED_BYTES).decode("utf-8").split("\n"), 1):
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


def quality(labelled: Sequence[LabelledQuery], decisions: Sequence[dict],
            block_chars: Callable[[str], int] | None = None) -> dict:
    """Routing metrics of ``decisions`` (dicts as ``route --queries`` prints them) against the labels.

    Over messages with a skill: ``top1``, ``recall_at_5``, ``mrr`` (from the
    candidates), ``full_correct`` (the right skill injected whole) and
    ``named_correct`` (the right skill injected whole or named by a hint);
    over messages without one: ``false_full`` and ``false_any``; over all full
    injections: ``full_precision``. With ``block_chars`` (a skill's full block
    size), ``injected_chars`` is the mean number of characters injected per
    message, a hint counted at ``MAX_HINT_CHARS``. A rate with no messages to
    count is None.
    """
    positives = [(q, d) for q, d in zip(labelled, decisions) if q.positive]
    negatives = [d for q, d in zip(labelled, decisions) if not q.positive]
    ranks = [_first_right_rank(q, d) for q, d in positives]
    full_right = sum(_mode(d) == FULL and d["skill"] in q.right for q, d in positives)
    full = sum(_mode(d) == FULL for d in decisions)
    report = {
        "messages": len(decisions),
        "positives": len(positives),
        "negatives": len(negatives),
        "top1": rate(sum(r == 1 for r in ranks), len(positives)),
        "recall_at_5": rate(sum(0 < r <= 5 for r in ranks), len(positives)),
        "mrr": rate(sum(1 / r for r in ranks if r), len(positives)),
        "full_precision": rate(full_right, full),
        "full_correct": rate(full_right, len(positives)),
        "named_correct": rate(sum(not q.right.isdisjoint(_named(d)) for q, d in positives), len(positives)),
        "false_full": rate(sum(_mode(d) == FULL for d in negatives), len(negatives)),
        "false_any": rate(sum(_mode(d) is not None for d in negatives), len(negatives)),
        "full_injections": full,
        "hints": sum(_mode(d) == HINT for d in decisions),
    }
    if block_chars is not None:
        injected = sum(block_chars(d["skill"]) if _mode(d) == FULL else MAX_HINT_CHARS
                       for d in decisions if _mode(d) is not None)
        report["injected_chars"] = rate(injected, len(decisions))
    return report


def leave_out_quality(decisions: Sequence[dict]) -> dict:
    """False injections among leave-out decisions (every one of them should inject nothing)."""
    full = sum(_mode(d) == FULL for d in decisions)
    injected = sum(_mode(d) is not None for d in decisions)
    return {"messages": len(decisions), "full_injections": full, "injections": injected,
            "false_full": rate(full, len(decisions)), "false_any": rate(injected, len(decisions))}


def _mode(decision: dict) -> str | None:
    """The decision's mode: None when nothing is injected; a decision without one (an older router) is full."""
    if decision.get("skill") is None:
        return None
    return decision.get("mode") or FULL


def _named(decision: dict) -> frozenset[str]:
    """The skills a decision injects or names (none when it injects nothing)."""
    if _mode(decision) is None:
        return frozenset()
    return frozenset(decision.get("named") or [decision["skill"]])


def full_block_chars(records: Iterable) -> Callable[[str], int]:
    """Characters of a skill's full block as a host builds it with the default caps, by skill name.

    Each SKILL.md named by ``records`` (manifest records) is read once, when
    first asked for; an unreadable one counts 0.
    """
    paths = {r.name: r.path for r in records}

    @functools.lru_cache(maxsize=None)
    def chars(name: str) -> int:
        try:
            text = read_regular_file(paths[name], MAX_SKILL_BYTES).decode("utf-8", "replace")
        except (KeyError, OSError):
            return 0
        return len(skill_block(name, skill_body(text)).text)

    return chars


def _first_right_rank(query: LabelledQuery, decision: dict) -> int:
    """1-based rank of the first right skill among the candidates, 0 if none."""
    for rank, candidate in enumerate(decision.get("candidates") or [], 1):
        if candidate["name"] in query.right:
            return rank
    return 0


def rate(count: float, total: int) -> float | None:
    """``count / total``, or None when there is nothing to count."""
    return count / total if total else None


def evaluation_report(routed: Sequence[RoutedQuery], block_chars: Callable[[str], int] | None = None) -> dict:
    """Overall and per-``source`` quality (see :func:`quality`), plus route and bare-embedding latency;
    with leave-out copies in ``routed``, also their false-injection rates overall and per source."""
    first = [r for r in routed if not r.left_out]
    labelled = [r.labelled for r in first]
    decisions = [r.decision.as_dict() for r in first]
    sources = sorted({q.source for q in labelled})
    route_ms = np.array([r.route_ms for r in first])
    embed_ms = np.array([r.embed_ms for r in first if r.embed_ms is not None])
    report = {
        "overall": quality(labelled, decisions, block_chars),
        "by_source": {
            source: quality([q for q in labelled if q.source == source],
                            [d for q, d in zip(labelled, decisions) if q.source == source], block_chars)
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
