"""The trust of one Hermes home: its block ledger and chat records, kept in its state file.

The state is saved about once a second by a background thread, and read back
on a background thread at start, so no file content can hold up
``register()``: a file over the state file's size limit, or one that is not
what it writes, is moved aside to ``dedupe.json.damaged`` with one warning,
and the plugin starts afresh. Chat records are trusted after a restart only if
the previous process closed cleanly (a crash may have lost its last second of
changes); otherwise they count as uncertain until confirmed. Several Hermes
processes share one home: a process that never served a gateway chat keeps
the chats it finds in the file and adds only its blocks; the file is read
again before a save only when another process wrote it since.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Callable

from ...files import atomic_write, file_stamp, set_aside, tighten
from ...logs import OnceLogger
from ...threads import LazyThread
from .chats import ChatRecords
from .ledger import BlockLedger
from .live import Live
from .state_file import OldFormat, Snapshot, read_state, state_payload

WRITE_DELAY_SECONDS = 1.0
STATE_FILE_MODE = 0o600  # it names chats (phone numbers, user ids): its owner reads it, no one else


class TrustStore:
    """The ledger and the chat records of one home, loaded and saved in the background; safe from any thread."""

    def __init__(self, path: Path | None, max_chats: int = 2000, ttl_seconds: float = 86400,
                 clock: Callable[[], float] = time.time, log_once: OnceLogger | None = None):
        self.path = path
        self.ledger = BlockLedger()
        self.chats = ChatRecords(max_chats, ttl_seconds, clock)
        self._clock = clock
        self._log_once = log_once or OnceLogger()
        self._on_disk = Snapshot()  # the file as this process last read or wrote it
        self._stamp = None  # its stamp then
        self._loaded = threading.Event()
        self._dirty = threading.Event()
        self._closed = False
        self._writer = LazyThread(self._write_loop, "semantic-skills-dedupe")
        self._load_in_background()

    def resize(self, max_chats: int, ttl_seconds: float) -> None:
        self.chats.max_chats, self.chats.ttl_seconds = max_chats, ttl_seconds

    # ------------------------------------------------------------------ changes, each saved with the next write

    def claim_rewrite(self, key: str, session_id: str | None, block) -> bool:
        """:meth:`ChatRecords.claim_rewrite`, saved."""
        claimed = self.chats.claim_rewrite(key, session_id, block)
        if claimed:
            self.changed()
        return claimed

    def confirm(self, key: str, session_id: str | None, live: Live) -> None:
        """:meth:`ChatRecords.confirm`, saved."""
        self.chats.confirm(key, session_id, live)
        self.changed()

    def session_reset(self, old_session_id: str | None, new_session_id: str | None) -> None:
        """:meth:`ChatRecords.session_reset`, saved."""
        if self.chats.session_reset(old_session_id, new_session_id):
            self.changed()

    def changed(self) -> None:
        """Something to save: the writer thread saves it within :data:`WRITE_DELAY_SECONDS`."""
        if self.path is None or self._closed:
            return
        self._dirty.set()
        self._writer.start()

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
        tighten(self.path, STATE_FILE_MODE)  # an earlier release wrote it readable by all
        try:
            snapshot = self._read(report=True)
            self.chats.restore(snapshot.chats, snapshot.clean)
            self._enter_saved_blocks(snapshot)
        finally:
            self._loaded.set()

    def _read(self, report: bool) -> Snapshot:
        """The file's content; an empty snapshot when there is none, or when it cannot be used
        (with ``report``: said once, and a damaged file moved aside)."""
        stamp = file_stamp(self.path)
        snapshot = Snapshot()
        try:
            snapshot = read_state(self.path, self.chats.ttl_seconds, self._clock())
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
        self._on_disk, self._stamp = snapshot, stamp
        return snapshot

    def _set_aside(self, problem: Exception) -> None:
        try:
            done = f"moved it to {set_aside(self.path).name}"
        except OSError as exc:
            done = f"could not move it aside ({exc.strerror or exc}); it is replaced at the next save"
        reason = f"{type(problem).__name__}: {problem}"[:200]
        self._log_once(logging.WARNING, f"the dedupe file {self.path} is damaged ({reason}); {done} and started "
                                        "with no record of earlier chats")

    def _enter_saved_blocks(self, snapshot: Snapshot) -> None:
        """The blocks earlier processes produced, under those this process produced since (which stay newest)."""
        newer = self.ledger.rows()
        for row in (*snapshot.blocks, *newer):
            self.ledger.grant_row(row)

    # ------------------------------------------------------------------ saving

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
        on_disk = self._read(report=False) if file_stamp(self.path) != self._stamp else self._on_disk
        if self.chats.owned:
            chats, clean_state = self.chats.rows(), clean
        else:
            chats, clean_state = on_disk.chats, on_disk.clean
        merged = BlockLedger()  # the file's blocks under this process's, each skill at one version
        for row in (*on_disk.blocks, *self.ledger.rows()):
            merged.grant_row(row)
        snapshot = Snapshot(clean_state, chats, merged.rows())
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self.path, state_payload(snapshot.clean, snapshot.chats, snapshot.blocks), STATE_FILE_MODE)
        except OSError as exc:
            self._log_once(logging.WARNING, f"cannot save {self.path} ({exc.strerror or exc})")
            return
        self._on_disk, self._stamp = snapshot, file_stamp(self.path)

    def close(self) -> None:
        """Write the state one last time, marked clean, and stop the writer thread."""
        self._closed = True
        self._dirty.set()
        if self.chats.owned or len(self.ledger):
            self.flush(clean=True)
