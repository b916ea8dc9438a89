"""The decision record of a Hermes home: one line per routed message, read by ``semantic-skills history``.

The hooks call :func:`decision` once per routed message, with the worker's
reply and what became of it, on whichever path finished it (a gateway message
the gateway hook left open is recorded by ``pre_llm_call``). What makes the
entry is queued for the runtime's
:class:`~semantic_skills.decision_log.DecisionLog`, whose own thread builds
it and appends it to ``HOME/semantic-skills/decisions.jsonl``: the caller
never waits on the disk and never sees an error. Settings:
``record_decisions`` (on by default), ``record_message_text`` (off by
default: no message text is kept unless the user asks) and
``record_max_bytes``; they apply from the next hook call.
"""

from __future__ import annotations

import functools
import logging
import math
import time
from typing import TYPE_CHECKING

from ..decision_log import ALREADY_LIVE, INJECTED, MAX_NAMED, MAX_TEXT_CHARS, NOTHING, UNANSWERED, DecisionEntry
from ..gates import FULL
from ..worker.protocol import Reply

if TYPE_CHECKING:
    from .runtime import PluginRuntime

GATEWAY = "gateway"  # decided by pre_gateway_dispatch, on the gateway's event loop
AGENT = "agent"      # decided by pre_llm_call, on the agent's thread


def decision(rt: PluginRuntime, *, path: str, platform: str, reply: Reply | None, outcome: str, started: float,
             text: str | None = None, reason: str | None = None) -> None:
    """Record one routed message: ``reply`` is the worker's (None when none was waited for), ``outcome`` what
    became of it (INJECTED, ALREADY_LIVE, NOTHING or UNANSWERED), ``started`` when the hook began routing it
    (``time.monotonic()``, so the latency runs to the reply's arrival), ``text`` the message (kept only when
    ``record_message_text`` is on) and ``reason`` why, when the reply does not say.

    Only hands the makings of the entry over (the settings as this hook call
    read them, a clock reading, a queue put): the runtime's writer thread
    builds and appends it. Never raises.
    """
    try:
        settings = rt.settings
        if not settings.record_decisions:
            return
        rt.decisions.max_bytes = settings.record_max_bytes
        kept = text[:MAX_TEXT_CHARS] if settings.record_message_text and isinstance(text, str) else None
        latency_ms = max(0.0, (reply.at if reply is not None else time.monotonic()) - started) * 1000
        rt.decisions.append(functools.partial(entry_for, reply, outcome, path, platform, time.time(), latency_ms,
                                              kept, reason))
    except Exception as exc:  # noqa: BLE001 - the record must never cost a message
        rt.log_once(logging.WARNING, f"could not record a routing decision ({type(exc).__name__}: {exc})")


def entry_for(reply: Reply | None, outcome: str, path: str, platform: str, now: float, latency_ms: float,
              text: str | None = None, reason: str | None = None) -> DecisionEntry:
    """The record's entry for a worker's reply and its outcome, decided at ``now`` (seconds since the epoch;
    an answer without ``mode``, from an older worker, is full; a skill is kept only with the outcomes that
    name one)."""
    if reply is None or not reply.ok:
        why = reason or (f"{reply.status}: {reply.error}" if reply is not None else "")
        return DecisionEntry(now, path, platform, UNANSWERED, latency_ms=latency_ms, reason=why, text=text)
    data = reply.data
    skill = _name(data.get("skill")) if outcome in (INJECTED, ALREADY_LIVE) else None
    if outcome == UNANSWERED:  # an answer the hook could not use
        reason = reason or f"an answer this plugin cannot use ({data.get('mode')!r} for {data.get('skill')!r})"
    return DecisionEntry(
        now, path, platform, outcome if skill or outcome == UNANSWERED else NOTHING, skill=skill,
        mode=(str(data.get("mode") or FULL) if skill else None), named=_names(data.get("named")) if skill else (),
        top=_name(data.get("top")), similarity=_number(data.get("similarity")), gap=_number(data.get("relative_gap")),
        margin=_number(data.get("relative_margin")), floor=_number(data.get("threshold")),
        min_gap=_number(data.get("min_relative_gap")), full_gap=_number(data.get("full_relative_gap")),
        full_margin=_number(data.get("full_relative_margin")), latency_ms=latency_ms,
        reason=reason or str(data.get("reason") or ""), text=text, vector_set=_name(data.get("vector_set")),
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
