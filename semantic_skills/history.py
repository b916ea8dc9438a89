"""What the decision record says: how often each mode, the most injected skills, near misses (nothing that
nearly got a hint, hints that nearly got the whole skill), the slowest routes, and whether fitting the gate
to the user's own messages (``calibrate``) would help.

Pure functions of the entries :mod:`~semantic_skills.decision_log` reads.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter, defaultdict
from datetime import datetime, timezone

from .decision_log import ALREADY_LIVE, INJECTED, NOTHING, UNANSWERED, DecisionEntry
from .gates import FLOOR, FULL, HINT

NEAR_SIMILARITY = 0.03  # a similarity this close under the floor is a near miss
NEAR_GAP = 0.05         # a relative gap or margin this close under its threshold is a near miss
TOP_SKILLS, SLOWEST, NEAR_MISS_SKILLS = 10, 5, 5  # how many skills, slowest routes and near misses are shown
# calibrate is worth it when this many fixable near misses of one gate, at least this share of the decisions,
# piled up, or when one skill takes this share of at least that many injections (a skill that wins everything)
MIN_NEAR_MISSES, NEAR_MISS_SHARE = 5, 0.05
DOMINANT_SHARE, MIN_INJECTIONS = 0.5, 20

_DURATION = re.compile(r"^\s*(\d{1,6})\s*([mhdw])\s*$")
_UNIT_SECONDS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_since(text: str, now: float) -> float:
    """``--since``: a duration back from ``now`` (``30m``, ``12h``, ``7d``, ``2w``) or an ISO date or time
    (UTC unless it names its zone), as seconds since the epoch; ValueError otherwise."""
    match = _DURATION.match(text)
    if match:
        return now - int(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is neither a duration such as 7d, 12h or 30m nor a date such as "
                         "2026-11-20 or 2026-11-20T08:00") from None
    return (when if when.tzinfo else when.replace(tzinfo=timezone.utc)).timestamp()


def summarise(entries: list[DecisionEntry], default_embedder: bool = True) -> dict:
    """The summary ``history`` prints, as plain data (``--json`` prints it as it is).

    ``near_misses`` is keyed by the gate the decisions fell just short of:
    ``hint`` (nothing injected) and ``full`` (a hint injected).
    """
    answered = [e for e in entries if e.outcome != UNANSWERED]
    injected = [e for e in entries if e.outcome == INJECTED]
    misses = {gate: [e for e in answered if near_miss(e) == gate] for gate in (HINT, FULL)}
    return {
        "decisions": len(entries),
        "first": _iso(entries[0].time) if entries else None,
        "last": _iso(entries[-1].time) if entries else None,
        "paths": dict(Counter(e.path for e in entries).most_common()),
        "modes": {"full": sum(e.mode != HINT for e in answered if e.skill),
                  "hint": sum(e.mode == HINT for e in answered if e.skill),
                  "nothing": sum(e.skill is None for e in answered)},
        "outcomes": {outcome: sum(e.outcome == outcome for e in entries)
                     for outcome in (INJECTED, ALREADY_LIVE, NOTHING, UNANSWERED)},
        "most_injected": _most_injected(injected),
        "near_misses": {gate: {"count": len(found), "fixable": sum(_fixable(e) for e in found),
                               "skills": _near_miss_skills(found)} for gate, found in misses.items()},
        "slowest": [_brief(e) for e in sorted(entries, key=lambda e: -(e.latency_ms or 0.0))[:SLOWEST]
                    if e.latency_ms is not None],
        "latency_ms": _latency_by_path(entries),
        "calibrate": calibrate_advice(answered, injected, misses, default_embedder),
    }


def near_miss(entry: DecisionEntry) -> str | None:
    """The gate ``entry`` fell just short of, or None.

    HINT: nothing was injected, but each of similarity and relative gap
    clears its threshold or misses it by at most NEAR_SIMILARITY / NEAR_GAP.
    FULL: a hint was injected, but each of relative gap and relative margin
    clears the full gate's threshold or misses it by at most NEAR_GAP.
    """
    if entry.outcome == NOTHING and entry.skill is None:
        return HINT if _just_short((entry.similarity, entry.floor, NEAR_SIMILARITY),
                                   (entry.gap, entry.min_gap, NEAR_GAP)) else None
    if entry.outcome in (INJECTED, ALREADY_LIVE) and entry.mode == HINT:
        return FULL if _just_short((entry.gap, entry.full_gap, NEAR_GAP),
                                   (entry.margin, entry.full_margin, NEAR_GAP)) else None
    return None


def _just_short(*checks: tuple[float | None, float | None, float]) -> bool:
    """True when some ``(value, threshold, slack)`` misses its threshold and none misses it by more than its slack."""
    if any(value is None or threshold is None for value, threshold, _ in checks):
        return False
    shortfalls = [(threshold - value, slack) for value, threshold, slack in checks]
    return any(short > 0 for short, _ in shortfalls) and all(short <= slack for short, slack in shortfalls)


def _fixable(entry: DecisionEntry) -> bool:
    """A near miss a calibrated gate could let through: a hint's similarity clears the lowest floor there is
    (0.30); the full gate's thresholds can be calibrated down to 0, so every hint is."""
    return entry.skill is not None or entry.similarity >= FLOOR


def calibrate_advice(answered: list[DecisionEntry], injected: list[DecisionEntry],
                     misses: dict[str, list[DecisionEntry]], default_embedder: bool) -> list[str]:
    """Why ``calibrate`` on the user's own labelled messages would help here; empty when nothing says so.

    ``misses`` holds the near misses by the gate they fell short of (see :func:`near_miss`).
    """
    reasons = []
    for gate, what in ((HINT, "injected nothing but fell just short of a hint"),
                       (FULL, "got a hint but fell just short of the whole skill")):
        fixable = sum(_fixable(e) for e in misses.get(gate, ()))
        if fixable >= MIN_NEAR_MISSES and fixable >= NEAR_MISS_SHARE * len(answered):
            gate_name = "the gate" if gate == HINT else "the full gate"
            reasons.append(f"{fixable} of {len(answered)} decisions ({fixable / len(answered):.0%}) {what}: if "
                           f"their skills were the right ones, {gate_name} is stricter than your skills need")
    counts = Counter(e.skill for e in injected)
    if len(injected) >= MIN_INJECTIONS and counts:
        skill, count = counts.most_common(1)[0]
        if count >= DOMINANT_SHARE * len(injected):
            reasons.append(f"{skill} took {count} of {len(injected)} injections ({count / len(injected):.0%}): "
                           "if many of those messages did not need it, the gate is looser than your skills need")
    if not default_embedder:
        reasons.append("the embedder is not the bundled default, for which the default gate was measured "
                       "(unless calibrate --write already fitted the gate to it)")
    return reasons


def _most_injected(injected: list[DecisionEntry]) -> list[dict]:
    modes: dict[str, Counter] = defaultdict(Counter)
    for entry in injected:
        modes[entry.skill][HINT if entry.mode == HINT else FULL] += 1
    ranked = sorted(modes.items(), key=lambda item: (-sum(item[1].values()), item[0]))[:TOP_SKILLS]
    return [{"skill": skill, "injected": sum(by_mode.values()), "full": by_mode[FULL], "hint": by_mode[HINT]}
            for skill, by_mode in ranked]


def _near_miss_skills(misses: list[DecisionEntry]) -> list[dict]:
    """The skills near misses would have brought (or brought whole), most often first, each with its closest
    call: what the gate saw and the thresholds it was held to."""
    by_skill: dict[str, list[DecisionEntry]] = defaultdict(list)
    for entry in misses:
        by_skill[entry.skill or entry.top or "?"].append(entry)
    ranked = sorted(by_skill.items(), key=lambda item: (-len(item[1]), item[0]))[:NEAR_MISS_SKILLS]
    return [{"skill": skill, "count": len(found), **_closest_call(found)} for skill, found in ranked]


def _closest_call(found: list[DecisionEntry]) -> dict:
    if found[0].skill is None:  # short of a hint: similarity and relative gap
        closest = min(found, key=lambda e: max(e.floor - e.similarity, 0) + max(e.min_gap - e.gap, 0))
        return {"similarity": closest.similarity, "floor": closest.floor, "gap": closest.gap,
                "min_gap": closest.min_gap}
    closest = min(found, key=lambda e: max(e.full_gap - e.gap, 0) + max(e.full_margin - e.margin, 0))
    return {"gap": closest.gap, "full_gap": closest.full_gap, "margin": closest.margin,
            "full_margin": closest.full_margin}


def _latency_by_path(entries: list[DecisionEntry]) -> dict:
    by_path: dict[str, list[float]] = defaultdict(list)
    for entry in entries:
        if entry.latency_ms is not None:
            by_path[entry.path].append(entry.latency_ms)
    return {path: {"median": round(statistics.median(values), 1), "p95": round(_percentile(values, 0.95), 1),
                   "max": round(max(values), 1), "routes": len(values)}
            for path, values in sorted(by_path.items())}


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def _brief(entry: DecisionEntry) -> dict:
    return {"time": _iso(entry.time), "path": entry.path, "platform": entry.platform, "skill": entry.skill,
            "mode": entry.mode, "outcome": entry.outcome, "latency_ms": entry.latency_ms}


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="seconds")
