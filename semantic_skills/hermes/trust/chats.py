"""What the gateway hook may assume about each chat without reading its history.

``pre_gateway_dispatch`` runs on the gateway's event loop and must not read a
history, so each chat (the gateway's session key) has a :class:`ChatRecord`:
which of the plugin's skills are live in its context and the session id that
was confirmed for, refreshed by every ``pre_llm_call`` from the real history
and by the gateway's own rewrites. The gateway rewrites a message only when the
record is certain the skill is absent (:meth:`ChatRecords.claim_rewrite`);
otherwise ``pre_llm_call`` decides against the history itself. Being keyed by
the chat, a rotated session leaves no stale key behind. A record holds the
skills live in the chat's user messages, at their versions (see live.py):
what the model's replies and tools add since the record was confirmed never
changes what is live, so a record confirmed before the model's reply stays
true after it.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Callable, Iterable

from ...injection import SkillBlock
from .live import Live, add_block, block_keys, covered

MAX_LIVE_PER_CHAT = 64  # skills remembered as live in one chat; pre_llm_call checks the real history anyway
MAX_KEY_CHARS = 1024  # a chat key or session id kept as it is; a longer one is kept as its digest
DIGEST_PREFIX = "sha256:"


def bounded_key(key: str) -> str:
    """A chat key as the records keep it: as it is when it has 1 to :data:`MAX_KEY_CHARS` characters, else its
    digest. Hermes' webhook adapter builds the key from an unsigned request header, so it can be any length; the
    state file holds no longer one."""
    if 0 < len(key) <= MAX_KEY_CHARS:
        return key
    return DIGEST_PREFIX + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def bounded_session(session_id: str | None) -> str | None:
    """A session id as the records keep it (see :func:`bounded_key`); None for none."""
    return bounded_key(session_id) if session_id else None


@dataclass
class ChatRecord:
    """What one chat's context holds of the plugin's skills, and for which session id that was confirmed."""

    session_id: str | None  # None: the chat's first session has no id yet
    live: Live
    seen: float
    certain: bool = True  # False: restored after an unclean exit, may have lost the last changes


class ChatRecords:
    """The records of the chats this process serves: an LRU bounded by count and idle time, safe from any thread."""

    def __init__(self, max_chats: int = 2000, ttl_seconds: float = 86400, clock: Callable[[], float] = time.time):
        self.max_chats = max_chats
        self.ttl_seconds = ttl_seconds
        self.owned = False  # this process served a gateway chat: its records are the ones to save
        self._clock = clock
        self._lock = threading.Lock()
        self._chats: OrderedDict[str, ChatRecord] = OrderedDict()
        self._by_session: dict[str, str] = {}

    def claim_rewrite(self, key: str, session_id: str | None, block: SkillBlock) -> bool:
        """True, and ``block`` counted as live, if the chat is certain not to carry it yet.

        Certain means: a brand-new chat (``session_id`` None: no history
        exists), or a record confirmed for the very session id the gateway
        holds now. After a rotation, an automatic reset, ``/resume``, an
        unclean restart, or with no record at all, the answer is False.
        """
        key, session_id = bounded_key(key), bounded_session(session_id)
        with self._lock:
            record = self._record(key)
            if session_id is None and (record is None or record.session_id is not None):
                live: Live = {}
            elif record is not None and record.certain and record.session_id == session_id:
                live = record.live
            else:
                return False
            if covered(live, block):
                return False
            live = dict(live)
            add_block(live, block.mode, block_keys(block))
            self._put(key, ChatRecord(session_id, live, self._clock()))
        return True

    def confirm(self, key: str, session_id: str | None, live: Live) -> None:
        """The chat's context, as ``pre_llm_call`` read it for ``session_id``, holds ``live``."""
        with self._lock:
            self._put(bounded_key(key), ChatRecord(bounded_session(session_id), dict(live), self._clock()))

    def session_reset(self, old_session_id: str | None, new_session_id: str | None) -> bool:
        """``/new`` or ``/reset`` replaced ``old_session_id`` by the empty ``new_session_id``; True if a record
        changed."""
        old_session_id, new_session_id = bounded_session(old_session_id), bounded_session(new_session_id)
        with self._lock:
            key = self._by_session.get(old_session_id or "")
            if key is None or not new_session_id:
                return False
            self._put(key, ChatRecord(new_session_id, {}, self._clock()))
        return True

    def rows(self) -> list[tuple[str, ChatRecord]]:
        """The records to save, idle longest first (expired ones dropped)."""
        with self._lock:
            self._expire()
            return list(self._chats.items())

    def restore(self, saved: Iterable[tuple[str, ChatRecord]], certain: bool) -> None:
        """Put records read from the state file under those this process learnt since (which are newer);
        ``certain``: the process that saved them closed cleanly."""
        with self._lock:
            merged: OrderedDict[str, ChatRecord] = OrderedDict()
            for key, record in saved:
                if key not in self._chats:
                    record.certain = certain
                    merged[key] = record
            merged.update(self._chats)
            self._chats = merged
            self._by_session = {r.session_id: k for k, r in merged.items() if r.session_id}
            self._expire()

    def __len__(self) -> int:
        with self._lock:
            self._expire()
            return len(self._chats)

    def _record(self, key: str) -> ChatRecord | None:
        record = self._chats.get(key)
        if record is not None and self._clock() - record.seen > self.ttl_seconds:
            self._drop(key)
            return None
        return record

    def _put(self, key: str, record: ChatRecord) -> None:
        if len(record.live) > MAX_LIVE_PER_CHAT:  # the skills the chat took last are kept
            record = replace(record, live=dict(list(record.live.items())[-MAX_LIVE_PER_CHAT:]))
        self.owned = True
        self._drop(key)
        self._chats[key] = record
        if record.session_id:
            self._by_session[record.session_id] = key
        self._expire()

    def _drop(self, key: str) -> None:
        record = self._chats.pop(key, None)
        if record is not None and record.session_id and self._by_session.get(record.session_id) == key:
            del self._by_session[record.session_id]

    def _expire(self) -> None:
        cutoff = self._clock() - self.ttl_seconds
        while self._chats:
            key, oldest = next(iter(self._chats.items()))
            if len(self._chats) <= self.max_chats and oldest.seen >= cutoff:
                break
            self._drop(key)
