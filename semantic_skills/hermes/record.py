"""The decision record of a Hermes home: one line per routed message, read by ``semantic-skills history``.

The hooks call :func:`decision` once per routed message, with the worker's
reply and what became of it. The entry is queued for the runtime's
:class:`~semantic_skills.decision_log.DecisionLog`, whose own thread appends it
to ``HOME/semantic-skills/decisions.jsonl``: the caller never waits on the disk
and never sees an error. Settings: ``record_decisions`` (on by default),
``record_message_text`` (off by default: no message text is kept unless the
user asks) and ``record_max_bytes``; they apply from the next message.
"""

from __future__ import annotations

import logging
import math
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..decision_log import ALREADY_LIVE, INJECTED, MAX_NAMED, MAX_TEXT_CHARS, NOTHING, UNANSWERED, DecisionEntry
from ..worker.protocol import Reply
from .config import state_dir

if TYPE_CHECKING:
    from .runtime import PluginRuntime

RECORD_FILE = "decisions.jsonl"
GATEWAY = "gateway"  # decided by pre_gateway_dispatch, on the gateway's event loop
AGENT = "agent"      # decided by pre_llm_call, on the agent's thread


def record_path(home: Path) -> Path:
    """Where the decision record of ``home`` lives (its previous generation sits beside it)."""
    return state_dir(home) / RECORD_FILE


def decision(rt: PluginRuntime, *, path: str, platform: str, reply: Reply, latency_ms: float,
             live: bool = False, text: str | None = None) -> None:
    """Record one routed message: ``reply`` is the worker's (or why there is none), ``live`` that its skill
    is already in front of the model, ``text`` the message (kept only when ``record_message_text`` is on).

    Returns at once; never raises.
    """
    try:
        settings = rt.settings()
        if not settings.record_decisions:
            return
        rt.decisions.max_bytes = settings.record_max_bytes
        kept = text[:MAX_TEXT_CHARS] if settings.record_message_text and isinstance(text, str) else None
        rt.decisions.append(entry_for(reply, path, platform, latency_ms, live, kept))
    except Exception as exc:  # noqa: BLE001 - the record must never cost a message
        rt.log_once(logging.WARNING, f"could not record a routing decision ({type(exc).__name__}: {exc})")


def entry_for(reply: Reply, path: str, platform: str, latency_ms: float, live: bool,
              text: str | None) -> DecisionEntry:
    """The record's entry for a worker's reply (an answer without ``mode``, from an older worker, is full)."""
    now = time.time()
    if not reply.ok:
        return DecisionEntry(now, path, platform, UNANSWERED, latency_ms=latency_ms,
                             reason=f"{reply.status}: {reply.error}", text=text)
    data = reply.data
    skill = data.get("skill") if isinstance(data.get("skill"), str) and data.get("skill") else None
    outcome = NOTHING if skill is None else ALREADY_LIVE if live else INJECTED
    return DecisionEntry(
        now, path, platform, outcome, skill=skill, mode=(str(data.get("mode") or "full") if skill else None),
        named=_names(data.get("named")) if skill else (), top=_name(data.get("top")),
        similarity=_number(data.get("similarity")), gap=_number(data.get("relative_gap")),
        floor=_number(data.get("threshold")), min_gap=_number(data.get("min_relative_gap")),
        latency_ms=latency_ms, reason=str(data.get("reason") or ""), text=text,
    )


def _names(named) -> tuple[str, ...]:
    if not isinstance(named, list):
        return ()
    names = (_name(item.get("name")) for item in named[:MAX_NAMED] if isinstance(item, dict))
    return tuple(name for name in names if name)


def _name(value) -> str | None:
    return value if isinstance(value, str) and value else None


def _number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None
