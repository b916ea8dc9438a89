"""What the gateway hook decided for each message, for ``pre_llm_call`` to pick up.

``pre_gateway_dispatch`` sees the raw ``event.text`` and the gateway's session
key; ``pre_llm_call`` later sees the agent's ``session_id``, ``platform``,
``sender_id`` and a ``user_message`` that ends with that text (the gateway may
prepend a sender name, reply context or attachment notes). The gateway hook
files a :class:`GatewayTurn` per message; ``pre_llm_call`` takes the ones
that belong to its turn, so every message is decided exactly once.

A turn belongs to the agent call of its own chat: the session the gateway
holds for the turn's session key, asked again when the call takes it (a
brand-new chat has no session when its message is filed, and Hermes may
reset or rotate one in between). So the same sender's group chat and direct
chat never take each other's turns. A command (a message starting with
``/``) is not a turn: Hermes answers most of them itself and they would wait
for a call that never comes; only each chat's latest one is kept, apart, for
the prompt Hermes may build from it (``/learn``, a skill's own command).
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

MAX_WAITING_COMMANDS = 256  # chats whose latest command waits: a prompt built from it comes at once


class TurnState(Enum):
    """Where a gateway turn stands when ``pre_llm_call`` takes it (a decision record outcome is another thing)."""

    REWRITTEN = "rewritten"  # the gateway rewrote the message with ``block``
    DECIDED = "decided"      # the gateway injects nothing (and recorded the decision if it routed the message)
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
    session_now: Callable[[], str | None] | None = None  # the chat's session as the gateway holds it now

    def session(self) -> str | None:
        """The session this turn's chat has now (asked of the gateway), else the one it had when filed."""
        return self.session_now() if self.session_now is not None else self.session_id


class TurnLedger:
    """Gateway turns waiting for their agent run, bounded by count and age."""

    def __init__(self, max_turns: int = 1024, ttl_seconds: float = 3600,
                 clock: Callable[[], float] = time.monotonic):
        self._turns: OrderedDict[int, GatewayTurn] = OrderedDict()
        self._commands: OrderedDict[str, GatewayTurn] = OrderedDict()  # session key -> the chat's latest command
        self._gateway_sessions: OrderedDict[str, str | None] = OrderedDict()  # agent session -> its chat, if known
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
            self._filed(turn)

    def record_command(self, turn: GatewayTurn) -> None:
        """Keep ``turn``, a command, as its chat's latest: taken only when no turn of the chat's call matches."""
        turn.created = self._clock()
        with self._lock:
            self._commands.pop(turn.session_key, None)
            self._commands[turn.session_key] = turn
            self._filed(turn)

    def take(self, platform: str, user_id: str, session_id: str | None, user_message: str,
             session_key: str | None = None) -> list[GatewayTurn]:
        """Remove and return the turns that belong to this agent call, oldest first.

        Its chat's turns: those filed under ``session_key`` when the call knows
        it (Hermes' session context) or the ledger does (turns of its chat were
        filed or taken under that session), else those of the chat whose
        session is the call's now (the gateway asked again; a turn whose chat
        has another session is never the call's, and one whose chat has none
        yet only when no chat has the call's session); of the same platform
        and sender. Of those, the turns whose text is part of the message;
        failing that, the oldest turn of the chat, else its latest command.
        """
        sender = (platform or "", user_id or "")
        with self._lock:
            self._expire()
            turns = [(n, t) for n, t in self._turns.items() if (t.platform, t.user_id) == sender]
            commands = [(k, t) for k, t in self._commands.items() if (t.platform, t.user_id) == sender]
            # a session a chat's turns were filed or taken under: the call is that chat's
            session_key = session_key or self._gateway_sessions.get(session_id or "")
        chat = _Chat(session_key, session_id, [t for _, t in turns] + [t for _, t in commands])
        turns = [(n, t) for n, t in turns if chat.may_hold(t)]
        chosen = [(n, t) for n, t in turns if t.text and t.text in user_message]
        command = []
        if not chosen and chat.known:
            chosen = [(n, t) for n, t in turns if chat.holds(t)][:1]
            command = [] if chosen else [(k, t) for k, t in commands if chat.holds(t)][-1:]
        with self._lock:
            taken = [t for n, t in chosen if self._turns.pop(n, None) is not None]
            taken += [t for k, t in command if self._commands.get(k) is t and self._commands.pop(k)]
            if taken and session_id:  # the chat a session belongs to, only as far as it is known
                self._remember_session(session_id, taken[-1].session_key if chat.known else None)
        return taken

    def is_gateway_session(self, session_id: str | None) -> bool:
        """True if gateway messages were seen for this agent session."""
        with self._lock:
            return bool(session_id) and session_id in self._gateway_sessions

    def __len__(self) -> int:
        """Turns and commands held, together."""
        with self._lock:
            return len(self._turns) + len(self._commands)

    def _filed(self, turn: GatewayTurn) -> None:
        if turn.session_id:
            self._remember_session(turn.session_id, turn.session_key)
        self._expire()

    def _remember_session(self, session_id: str, key: str | None) -> None:
        self._gateway_sessions[session_id] = key or self._gateway_sessions.get(session_id)
        self._gateway_sessions.move_to_end(session_id)
        while len(self._gateway_sessions) > 4 * self._max_turns:
            self._gateway_sessions.popitem(last=False)

    def _expire(self) -> None:
        cutoff = self._clock() - self._ttl
        for turns, bound in ((self._turns, self._max_turns), (self._commands, MAX_WAITING_COMMANDS)):
            while turns:
                key, oldest = next(iter(turns.items()))
                if len(turns) <= bound and oldest.created >= cutoff:
                    break
                del turns[key]


class _Chat:
    """Which filed turns belong to one agent call's chat: by its session key, else by its session id, each chat's
    session asked of the gateway once."""

    def __init__(self, session_key: str | None, session_id: str | None, candidates: list[GatewayTurn]):
        self.session_key, self.session_id = session_key, session_id
        self._now: dict[str, str | None] = {}
        # a chat holds the call's session: only its turns are the call's (else, as far as the gateway can tell, the
        # call is no chat's: turns of chats without a session, and those with no store to ask, go by text)
        self.known = bool(session_key) or any(self.holds(turn) for turn in candidates)

    def holds(self, turn: GatewayTurn) -> bool:
        """True if ``turn``'s chat is the call's."""
        if self.session_key:
            return turn.session_key == self.session_key
        return bool(self.session_id) and self._session(turn) == self.session_id

    def may_hold(self, turn: GatewayTurn) -> bool:
        """True if ``turn`` may be the call's (see :meth:`TurnLedger.take`)."""
        if self.known:
            return self.holds(turn)
        return not self.session_id or self._session(turn) is None

    def _session(self, turn: GatewayTurn) -> str | None:
        if turn.session_key not in self._now:
            self._now[turn.session_key] = turn.session()
        return self._now[turn.session_key]


class AnsweredTurns:
    """The answer ``pre_llm_call`` gave each agent turn Hermes names (its session, ``turn_id`` and message), so a
    turn asked about again gets the same answer without being routed or recorded twice; bounded, thread-safe."""

    def __init__(self, max_turns: int = 4096):
        self._answers: OrderedDict[tuple, dict | None] = OrderedDict()
        self._lock = threading.Lock()
        self._max = max_turns

    def get(self, turn: tuple) -> tuple[bool, dict | None]:
        """``(True, answer)`` when ``turn`` was answered, else ``(False, None)``."""
        with self._lock:
            if turn in self._answers:
                return True, self._answers[turn]
        return False, None

    def keep(self, turn: tuple, answer: dict | None) -> None:
        with self._lock:
            self._answers[turn] = answer
            self._answers.move_to_end(turn)
            while len(self._answers) > self._max:
                self._answers.popitem(last=False)
