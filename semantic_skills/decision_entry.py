"""One decision as the record keeps it: the outcomes, the entry, and its line (capped on writing, checked field
by field on reading, so a damaged or hand-edited line is refused rather than half read)."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from datetime import datetime, timezone

INJECTED = "injected"          # the skill was put in front of the model
ALREADY_LIVE = "already_live"  # the skill was decided but is already in front of the model
NOTHING = "nothing"            # the router decided no skill fits
UNANSWERED = "unanswered"      # no decision: the worker was not ready, failed or answered too late
OUTCOMES = (INJECTED, ALREADY_LIVE, NOTHING, UNANSWERED)

MAX_TEXT_CHARS = 1_000    # of a message's text, when the host records it
MAX_REASON_CHARS = 500
MAX_NAME_CHARS = 200      # skill names, platform and path labels
MAX_NAMED = 4


@dataclass(frozen=True)
class DecisionEntry:
    """One routed message: where it came from, what the router decided, and what became of it.

    ``time`` is seconds since the epoch; ``top`` is the best-ranked skill,
    also when nothing was injected, and ``similarity``, ``gap`` and ``margin``
    (the gate's relative gap and margin) what the gate saw of it. The
    thresholds it was held to: ``floor`` and ``min_gap`` for any injection,
    ``full_gap`` and ``full_margin`` for the whole skill. ``vector_set`` says
    which set ranked the message in an index with two (``first`` or
    ``multilingual``; None, and not written, with one).
    """

    time: float
    path: str
    platform: str
    outcome: str
    skill: str | None = None
    mode: str | None = None
    named: tuple[str, ...] = ()
    top: str | None = None
    similarity: float | None = None
    gap: float | None = None
    margin: float | None = None
    floor: float | None = None
    min_gap: float | None = None
    full_gap: float | None = None
    full_margin: float | None = None
    latency_ms: float | None = None
    reason: str = ""
    text: str | None = None
    vector_set: str | None = None

    def to_line(self) -> bytes:
        """The entry as one JSON line, its texts capped (an unpaired surrogate becomes "?")."""
        data = {
            "time": datetime.fromtimestamp(self.time, timezone.utc).isoformat(timespec="milliseconds"),
            "path": _clean(self.path, MAX_NAME_CHARS), "platform": _clean(self.platform, MAX_NAME_CHARS),
            "outcome": self.outcome, "skill": _clean(self.skill, MAX_NAME_CHARS), "mode": self.mode,
            "named": [_clean(n, MAX_NAME_CHARS) for n in self.named[:MAX_NAMED]],
            "top": _clean(self.top, MAX_NAME_CHARS),
            "similarity": _round(self.similarity), "gap": _round(self.gap), "margin": _round(self.margin),
            "floor": _round(self.floor), "min_gap": _round(self.min_gap), "full_gap": _round(self.full_gap),
            "full_margin": _round(self.full_margin), "latency_ms": _round(self.latency_ms, 1),
            "reason": _clean(self.reason, MAX_REASON_CHARS),
        }
        if self.vector_set is not None:
            data["vector_set"] = _clean(self.vector_set, MAX_NAME_CHARS)
        if self.text is not None:
            data["text"] = self.text[:MAX_TEXT_CHARS]
        return json.dumps(data, ensure_ascii=False).encode("utf-8", "replace") + b"\n"

    @classmethod
    def from_line(cls, line: bytes) -> "DecisionEntry":
        """Parse one line; raises ValueError for anything that is not an entry as :meth:`to_line` writes it."""
        data = json.loads(line)
        if not isinstance(data, dict) or data.get("outcome") not in OUTCOMES:
            raise ValueError("not a decision entry")
        when = datetime.fromisoformat(_string(data, "time", 64))
        named = data.get("named") or []
        if not isinstance(named, list):
            raise ValueError("named is not a list")
        return cls(
            time=(when if when.tzinfo else when.replace(tzinfo=timezone.utc)).timestamp(),
            path=_string(data, "path"), platform=_string(data, "platform"), outcome=data["outcome"],
            skill=_optional_string(data, "skill"), mode=_optional_string(data, "mode"),
            named=tuple(_clean(str(n), MAX_NAME_CHARS) for n in named[:MAX_NAMED]),
            top=_optional_string(data, "top"), similarity=_number(data, "similarity"), gap=_number(data, "gap"),
            margin=_number(data, "margin"), floor=_number(data, "floor"), min_gap=_number(data, "min_gap"),
            full_gap=_number(data, "full_gap"), full_margin=_number(data, "full_margin"),
            latency_ms=_number(data, "latency_ms"),
            reason=_string(data, "reason", MAX_REASON_CHARS),
            text=_text(data), vector_set=_optional_string(data, "vector_set"),
        )


# --------------------------------------------------------------------------- field checks


_CONTROL_CHARACTERS = re.compile("[\x00-\x1f\x7f-\x9f]")  # Unicode category Cc


def _clean(value: str | None, limit: int) -> str | None:
    """``value`` without control characters, at most ``limit`` characters."""
    if value is None:
        return None
    return _CONTROL_CHARACTERS.sub("", str(value)[:limit])


def _round(value: float | None, digits: int = 4) -> float | None:
    return round(value, digits) if value is not None and math.isfinite(value) else None


def _string(data: dict, key: str, limit: int = MAX_NAME_CHARS) -> str:
    value = data.get(key)
    if not isinstance(value, str):
        raise ValueError(f"{key} is not a string")
    return _clean(value, limit)


def _optional_string(data: dict, key: str, limit: int = MAX_NAME_CHARS) -> str | None:
    return None if data.get(key) is None else _string(data, key, limit)


def _text(data: dict) -> str | None:
    text = data.get("text")
    if text is not None and not isinstance(text, str):
        raise ValueError("text is not a string")
    return text[:MAX_TEXT_CHARS] if text is not None else None


def _number(data: dict, key: str) -> float | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{key} is not a number")
    number = float(value)  # OverflowError for a 400-digit integer: the caller skips the line
    if not math.isfinite(number):
        raise ValueError(f"{key} is not finite")
    return number

