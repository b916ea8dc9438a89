"""What the gateway hook may assume about each chat without reading its history, and the blocks the plugin made.

``pre_gateway_dispatch`` runs on the gateway's event loop and must not read a
history, so each chat (the gateway's session key) has a :class:`ChatRecord`:
which of the plugin's skills are live in its context and the session id that
was confirmed for, refreshed by every ``pre_llm_call`` from the real history
and by the gateway's own rewrites. The gateway rewrites a message only when the
record is certain the skill is absent (:meth:`DedupeStore.claim_rewrite`);
otherwise ``pre_llm_call`` decides against the history itself. Being keyed by
the chat, a rotated session leaves no stale key behind.

The records and the :class:`~.live.BlockLedger` are saved to
``$HERMES_HOME/semantic-skills/dedupe.json`` about once a second by a
background thread, and read back on a background thread at start, so no file
content can hold up ``register()``: a file over :data:`MAX_FILE_BYTES`, or one
that is not what this module writes, is moved aside to ``dedupe.json.damaged``
with one warning, and the plugin starts afresh. Records are trusted after a
restart only if the previous process closed cleanly (a crash may have lost its
last second of changes); otherwise they count as uncertain until confirmed.
Several Hermes processes share one home: a process that never served a
gateway chat keeps the chats it finds in the file and adds only its blocks.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..files import atomic_write
from ..injection import MODES, SkillBlock
from ..logs import OnceLogger
from .live import MAX_BLOCKS, BlockLedger, Live, add_block, covered

FORMAT_VERSION = 2
MAX_FILE_BYTES = 16 * 1024 * 1024
MAX_LIVE_PER_CHAT = 64  # skills remembered as live in one chat; pre_llm_call checks the real history anyway
MAX_KEY_CHARS = 1024
WRITE_DELAY_SECONDS = 1.0
DAMAGED_SUFFIX = ".damaged"


class DamagedFile(ValueError):
    """The state file is not what this module writes."""


@dataclass
class ChatRecord:
    """What one chat's context holds of the plugin's skills, and for which session id that was confirmed."""

    session_id: str | None  # None: the chat's first session has no id yet
    live: Live
    seen: float
    certain: bool = True  # False: restored after an unclean exit, may have lost the last changes


@dataclass
class _Snapshot:
    """What a state file holds, checked."""

    clean: bool = False
    chats: list[tuple[str, ChatRecord]] = field(default_factory=list)
    blocks: list[tuple[str, str, tuple[str, ...]]] = field(default_factory=list)


class DedupeStore:
    """The chat records (an LRU bounded by count and idle time) and the block ledger; safe from any thread."""

    def __init__(self, path: Path | None, max_sessions: int = 2000, ttl_seconds: float = 86400,
                 clock: Callable[[], float] = time.time, log_once: OnceLogger | None = None):
        self.path = path
        self.max_sessions = max_sessions
        self.ttl_seconds = ttl_seconds
        self.blocks = BlockLedger()
        self._clock = clock
        self._log_once = log_once or OnceLogger()
        self._lock = threading.Lock()
        self._chats: OrderedDict[str, ChatRecord] = OrderedDict()
        self._by_session: dict[str, str] = {}
        self._owns_chats = False  # this process served a gateway chat: its records are the ones to save
        self._loaded = threading.Event()
        self._dirty = threading.Event()
        self._closed = False
        self._writer: threading.Thread | None = None
        self._load_in_background()

    # ------------------------------------------------------------------ the gateway's questions (O(1))

    def claim_rewrite(self, key: str, session_id: str | None, block: SkillBlock) -> bool:
        """True, and ``block`` counted as live, if the chat is certain not to carry it yet.

        Certain means: a brand-new chat (``session_id`` None: no history
        exists), or a record confirmed for the very session id the gateway
        holds now. After a rotation, an automatic reset, ``/resume``, an
        unclean restart, or with no record at all, the answer is False.
        """
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
            add_block(live, block.mode, block.names)
            self._put(key, ChatRecord(session_id, live, self._clock()))
        self._changed()
        return True

    # ------------------------------------------------------------------ what pre_llm_call and Hermes report

    def confirm(self, key: str, session_id: str | None, live: Live) -> None:
        """The chat's context, as ``pre_llm_call`` read it for ``session_id``, holds ``live``."""
        kept = dict(list(live.items())[-MAX_LIVE_PER_CHAT:])
        with self._lock:
            self._put(key, ChatRecord(session_id, kept, self._clock()))
        self._changed()

    def session_reset(self, old_session_id: str | None, new_session_id: str | None) -> None:
        """``/new`` or ``/reset`` replaced ``old_session_id`` by the empty ``new_session_id``."""
        with self._lock:
            key = self._by_session.get(old_session_id or "")
            if key is None or not new_session_id:
                return
            self._put(key, ChatRecord(new_session_id, {}, self._clock()))
        self._changed()

    def record(self, key: str) -> ChatRecord | None:
        """The chat's record, if it is remembered (a copy)."""
        with self._lock:
            found = self._record(key)
            return None if found is None else ChatRecord(found.session_id, dict(found.live), found.seen,
                                                         found.certain)

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
        self._owns_chats = True
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
            if len(self._chats) <= self.max_sessions and oldest.seen >= cutoff:
                break
            self._drop(key)

    # ------------------------------------------------------------------ reading the file, off the start path

    def _load_in_background(self) -> None:
        """Read the saved state on a thread of its own; until it is in, unknown chats are uncertain."""
        if self.path is None:
            self._loaded.set()
            return
        threading.Thread(target=self._load, name="semantic-skills-dedupe-load", daemon=True).start()

    def wait_loaded(self, timeout: float) -> bool:
        return self._loaded.wait(max(0.0, timeout))

    def _load(self) -> None:
        try:
            snapshot = self._read_snapshot(report=True)
            with self._lock:
                self._merge(snapshot)
        finally:
            self._loaded.set()

    def _read_snapshot(self, report: bool) -> _Snapshot:
        """The file's content; an empty snapshot when there is none, or when it cannot be used
        (with ``report``: said once, and a damaged file moved aside)."""
        try:
            return parse_state(read_capped(self.path), self.ttl_seconds, self._clock())
        except FileNotFoundError:
            pass
        except OSError as exc:
            if report:
                self._log_once(logging.WARNING, f"cannot read {self.path} ({exc.strerror or exc}); starting with no "
                                                "record of earlier chats")
        except OldFormat:
            pass  # written by an earlier release: rewritten in this format at the first change
        except Exception as exc:  # noqa: BLE001 - any content at all: RecursionError, MemoryError, overflow...
            if report:
                self._set_aside(exc)
        return _Snapshot()

    def _set_aside(self, problem: Exception) -> None:
        aside = self.path.with_name(self.path.name + DAMAGED_SUFFIX)
        try:
            os.replace(self.path, aside)
            done = f"moved it to {aside.name}"
        except OSError as exc:
            done = f"could not move it aside ({exc.strerror or exc}); it is replaced at the next save"
        reason = f"{type(problem).__name__}: {problem}"[:200]
        self._log_once(logging.WARNING, f"the dedupe file {self.path} is damaged ({reason}); {done} and started "
                                        "with no record of earlier chats")

    def _merge(self, snapshot: _Snapshot) -> None:
        """Put what the file held under what this process learnt since it started (which is newer)."""
        merged: OrderedDict[str, ChatRecord] = OrderedDict()
        for key, record in snapshot.chats:
            if key not in self._chats:
                record.certain = snapshot.clean
                merged[key] = record
        merged.update(self._chats)
        self._chats = merged
        self._by_session = {r.session_id: k for k, r in merged.items() if r.session_id}
        self._expire()
        newer = self.blocks.rows()
        for digest, mode, names in snapshot.blocks:
            self.blocks.add_digest(digest, mode, names)
        for digest, mode, names in newer:
            self.blocks.add_digest(digest, mode, tuple(names))

    # ------------------------------------------------------------------ saving

    def remember(self, block: SkillBlock) -> None:
        """Add a block the plugin just produced to the ledger (saved with the next write)."""
        if self.blocks.add(block):
            self._changed()

    def _changed(self) -> None:
        if self.path is None or self._closed:
            return
        self._dirty.set()
        if self._writer is None:
            with self._lock:
                if self._writer is None:
                    self._writer = threading.Thread(target=self._write_loop, name="semantic-skills-dedupe",
                                                    daemon=True)
                    self._writer.start()

    def _write_loop(self) -> None:
        while not self._closed:
            self._dirty.wait()
            if self._closed:
                return
            time.sleep(WRITE_DELAY_SECONDS)
            self.flush()

    def flush(self, clean: bool = False) -> None:
        """Write the current state now, atomically; ``clean`` says this process is closing."""
        if self.path is None:
            return
        self._dirty.clear()
        self.wait_loaded(5.0)  # never save over a file that is still being read
        on_disk = self._read_snapshot(report=False)
        with self._lock:
            self._expire()
            if self._owns_chats:
                chats, clean_state = list(self._chats.items()), clean
            else:
                chats, clean_state = on_disk.chats, on_disk.clean
            ours = self.blocks.rows()
        known = {row[0] for row in ours}
        blocks = [[d, m, list(n)] for d, m, n in on_disk.blocks if d not in known] + ours
        payload = state_payload(clean_state, chats, blocks[-MAX_BLOCKS:])
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self.path, payload)
        except OSError as exc:
            self._log_once(logging.WARNING, f"cannot save {self.path} ({exc.strerror or exc})")

    def close(self) -> None:
        """Write the state one last time, marked clean, and stop the writer thread."""
        self._closed = True
        self._dirty.set()
        if self._owns_chats or len(self.blocks):
            self.flush(clean=True)


class OldFormat(Exception):
    """A state file an earlier release wrote: nothing to warn about, it is simply replaced."""


def read_capped(path: Path) -> bytes:
    """The file's bytes, refusing one over :data:`MAX_FILE_BYTES` without reading it."""
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > MAX_FILE_BYTES:
            raise DamagedFile(f"{size:,} bytes, over the {MAX_FILE_BYTES:,}-byte limit")
        return handle.read(MAX_FILE_BYTES + 1)


def parse_state(raw: bytes, ttl_seconds: float, now: float) -> _Snapshot:
    """A state file's content, checked entry by entry; raises on anything this module would not write."""
    data = json.loads(raw)
    if not isinstance(data, dict):
        raise DamagedFile("not a JSON object")
    if data.get("version") != FORMAT_VERSION:
        if data.get("version") == 1:
            raise OldFormat()
        raise DamagedFile(f"version {str(data.get('version'))[:20]!r}")
    clean, chats, blocks = data.get("clean"), data.get("chats"), data.get("blocks")
    if not isinstance(clean, bool) or not isinstance(chats, list) or not isinstance(blocks, list):
        raise DamagedFile("clean, chats or blocks missing")
    snapshot = _Snapshot(clean, [], [_block_row(row) for row in blocks])
    for row in chats:
        key, record = _chat_row(row)
        if now - record.seen <= ttl_seconds:
            snapshot.chats.append((key, record))
    return snapshot


def _chat_row(row) -> tuple[str, ChatRecord]:
    if not (isinstance(row, list) and len(row) == 4):
        raise DamagedFile("a chat row is not [key, session id, seen, live]")
    key, session_id, seen, live = row
    if not (isinstance(key, str) and 0 < len(key) <= MAX_KEY_CHARS):
        raise DamagedFile("a chat key is not a short string")
    if session_id is not None and not (isinstance(session_id, str) and 0 < len(session_id) <= MAX_KEY_CHARS):
        raise DamagedFile("a session id is not a short string")
    if isinstance(seen, bool) or not isinstance(seen, (int, float)) or not math.isfinite(float(seen)):
        raise DamagedFile("a chat's time is not a finite number")
    if not (isinstance(live, dict) and len(live) <= MAX_LIVE_PER_CHAT
            and all(isinstance(name, str) and name and mode in MODES for name, mode in live.items())):
        raise DamagedFile("a chat's live skills are not a small name -> mode mapping")
    return key, ChatRecord(session_id, dict(live), float(seen))


def _block_row(row) -> tuple[str, str, tuple[str, ...]]:
    if not (isinstance(row, list) and len(row) == 3 and isinstance(row[0], str) and len(row[0]) == 32
            and row[1] in MODES and isinstance(row[2], list) and 1 <= len(row[2]) <= 2
            and all(isinstance(name, str) and name for name in row[2])):
        raise DamagedFile("a block row is not [digest, mode, names]")
    return row[0], row[1], tuple(row[2])


def state_payload(clean: bool, chats: list[tuple[str, ChatRecord]], blocks: list[list]) -> bytes:
    """The file's bytes: within :data:`MAX_FILE_BYTES`, leaving out the chats idle longest if need be."""
    head = json.dumps({"version": FORMAT_VERSION, "clean": clean, "blocks": blocks})
    room = MAX_FILE_BYTES - len(head.encode("utf-8")) - 64
    rows: list[str] = []
    for key, record in reversed(chats):  # newest first
        row = json.dumps([key, record.session_id, record.seen, record.live])
        room -= len(row.encode("utf-8")) + 1
        if room < 0:
            break
        rows.append(row)
    return (head[:-1] + ', "chats": [' + ", ".join(reversed(rows)) + "]}").encode("utf-8")
