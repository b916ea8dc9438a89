"""What the gateway hook decided for each message, for ``pre_llm_call`` to pick up.

``pre_gateway_dispatch`` sees the raw ``event.text`` and the gateway's session
key; ``pre_llm_call`` later sees the agent's ``session_id``, ``platform``,
``sender_id`` and a ``user_message`` that ends with that text (the gateway may
prepend a sender name, reply context or attachment notes). The gateway hook
files a :class:`GatewayTurn` per message; ``pre_llm_call`` takes the ones
that belong to its turn, so every message is decided exactly once.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import dataclass, field
from enum import Enum
from typing import Callable

from ..injection import SkillBlock


class TurnState(Enum):
    """Where a gateway turn stands when ``pre_llm_call`` takes it (a decision record outcome is another thing)."""

    REWRITTEN = "rewritten"  # the gateway rewrote the message with ``block``
    DECIDED = "decided"      # the gateway decided, and recorded, that nothing is injected
    PENDING = "pending"      # ``decision`` carries (or will carry) the answer, for pre_llm_call to check
    DEFERRED = "deferred"    # the worker was not ready: pre_llm_call routes ``text`` itself


@dataclass
class GatewayTurn:
    """One incoming gateway message and what became of it."""

    platform: str
    user_id: str
    session_key: str
    session_id: str | None  # as peeked before the message; None for a brand-new session
    text: str
    state: TurnState
    block: SkillBlock | None = None
    decision: Future | None = None
    received: float = field(default_factory=time.monotonic)  # when the gateway hook got it: routing starts here
    created: float = field(default_factory=time.monotonic)


class TurnLedger:
    """Gateway turns waiting for their agent run, bounded by count and age."""

    def __init__(self, max_turns: int = 1024, ttl_seconds: float = 3600,
                 clock: Callable[[], float] = time.monotonic):
        self._turns: OrderedDict[int, GatewayTurn] = OrderedDict()
        self._gateway_sessions: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()
        self._next = 0
        self._max_turns = max_turns
        self._ttl = ttl_seconds
        self._clock = clock

    def record(self, turn: GatewayTurn) -> None:
        turn.created = self._clock()
        with self._lock:
            self._next += 1
            self._turns[self._next] = turn
            if turn.session_id:
                self._remember_session(turn.session_id)
            self._expire()

    def take(self, platform: str, user_id: str, session_id: str | None, user_message: str) -> list[GatewayTurn]:
        """Remove and return the turns that belong to this agent turn, oldest first.

        A turn belongs to it when platform and sender match and its text is part
        of the message; failing that, the oldest turn filed under the same session.
        """
        with self._lock:
            self._expire()
            mine = [(n, t) for n, t in self._turns.items()
                    if t.platform == (platform or "") and t.user_id == (user_id or "")]
            chosen = [(n, t) for n, t in mine if t.text and t.text in user_message]
            if not chosen and session_id:
                chosen = [(n, t) for n, t in mine if t.session_id == session_id][:1]
            for number, _turn in chosen:
                del self._turns[number]
            if chosen and session_id:
                self._remember_session(session_id)
            return [turn for _number, turn in chosen]

    def is_gateway_session(self, session_id: str | None) -> bool:
        """True if gateway messages were seen for this agent session."""
        with self._lock:
            return bool(session_id) and session_id in self._gateway_sessions

    def __len__(self) -> int:
        with self._lock:
            return len(self._turns)

    def _remember_session(self, session_id: str) -> None:
        self._gateway_sessions[session_id] = None
        self._gateway_sessions.move_to_end(session_id)
        while len(self._gateway_sessions) > 4 * self._max_turns:
            self._gateway_sessions.popitem(last=False)

    def _expire(self) -> None:
        while len(self._turns) > self._max_turns:
            self._turns.popitem(last=False)
        cutoff = self._clock() - self._ttl
        while self._turns:
            number, oldest = next(iter(self._turns.items()))
            if oldest.created >= cutoff:
                break
            del self._turns[number]
