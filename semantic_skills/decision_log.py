"""A bounded, append-only record of routing decisions: one JSON object per line.

Appending never blocks the caller and never raises: entries (or what makes
them) wait in a bounded queue (the oldest go when it is full) and a background
thread builds and appends them.
The record is two files, the current one and one previous generation
(``decisions.1.jsonl`` beside ``decisions.jsonl``): when the current one would
grow past half of ``max_bytes`` it replaces the previous one, so both together
stay within about ``max_bytes``. Nothing is read at start: the writer only
appends (after a newline, should the last line be torn), and the reader skips
what it cannot use line by line and reads at most ``max_bytes`` from the end
of each file, so a damaged, foreign or huge file costs neither of them much.
"""

from __future__ import annotations

import collections
import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .decision_entry import (  # noqa: F401 - the record's names, importable from here as before
    ALREADY_LIVE,
    INJECTED,
    MAX_NAMED,
    MAX_TEXT_CHARS,
    NOTHING,
    UNANSWERED,
    DecisionEntry,
)
from .files import open_for_writing, open_regular_file, set_aside, tighten, unusable
from .logs import OnceLogger
from .threads import LazyThread

MAX_LINE_BYTES = 64 * 1024
QUEUE_LIMIT = 2_048       # entries waiting for the writer; older ones are dropped beyond it
WRITE_BATCH = 32
RECORD_MODE = 0o600  # it may hold message text: its owner reads it, no one else

Pending = DecisionEntry | Callable[[], DecisionEntry]  # what DecisionLog.append takes


def previous_generation(path: Path) -> Path:
    """The previous generation of the record at ``path``: ``decisions.jsonl`` -> ``decisions.1.jsonl``."""
    return path.with_name(f"{path.stem}.1{path.suffix}")


class DecisionLog:
    """Appends entries to the record at ``path`` from a background thread, within ``max_bytes``."""

    def __init__(self, path: Path, max_bytes: int, log_once: OnceLogger | None = None):
        self.path = Path(path)
        self.max_bytes = max_bytes
        self._log_once = log_once or OnceLogger()
        self._pending: collections.deque[Pending] = collections.deque(maxlen=QUEUE_LIMIT)
        self._wake = threading.Event()
        self._write_lock = threading.Lock()
        self._writer = LazyThread(self._write_loop, "semantic-skills-record")
        self._closed = False
        self._fd: int | None = None
        self._size = 0

    def append(self, entry: Pending) -> None:
        """Queue ``entry`` for the writer thread; returns at once. A callable is called there to make the
        entry, so a caller on a busy thread hands over its makings and pays nothing for building it."""
        if self._closed:
            return
        self._pending.append(entry)
        self._wake.set()
        self._writer.start()

    def flush(self) -> None:
        """Write every queued entry now (a write error is logged once and the entries are dropped).

        Entries are written a batch at a time: each write lets other threads
        (the gateway's event loop) have the interpreter back.
        """
        with self._write_lock:
            while self._pending:
                lines = self._take_pending(WRITE_BATCH)
                try:
                    self._write(lines)
                except OSError as exc:
                    self._pending.clear()
                    self._close_file()
                    self._log_once(logging.WARNING, f"cannot write the decision record {self.path} "
                                                    f"({exc.strerror or exc}); decisions go unrecorded until it can")

    def _take_pending(self, limit: int) -> list[bytes]:
        lines = []
        while self._pending and len(lines) < limit:
            try:
                entry = self._pending.popleft()
            except IndexError:
                break
            try:
                lines.append((entry() if callable(entry) else entry).to_line())
            except Exception as exc:  # noqa: BLE001 - a malformed entry is dropped, never the writer
                self._log_once(logging.WARNING, f"dropped a malformed decision entry ({type(exc).__name__}: {exc})")
        return lines

    def close(self) -> None:
        """Write what is queued and stop the writer thread."""
        self._closed = True
        self._wake.set()
        self.flush()
        with self._write_lock:
            self._close_file()

    # ------------------------------------------------------------------ the writer thread

    def _write_loop(self) -> None:
        while not self._closed:
            self._wake.wait()
            self._wake.clear()
            if not self._closed:
                self.flush()

    def _write(self, lines: list[bytes]) -> None:
        if not lines:
            return
        self._open()
        generation_bytes = max(1, self.max_bytes // 2)
        chunk: list[bytes] = []
        chunk_size = 0
        for line in lines:
            if self._size + chunk_size + len(line) > generation_bytes and (self._size or chunk_size):
                self._append(b"".join(chunk))
                chunk, chunk_size = [], 0
                self._rotate()
            chunk.append(line)
            chunk_size += len(line)
        self._append(b"".join(chunk))

    def _append(self, data: bytes) -> None:
        while data:
            written = os.write(self._fd, data)
            self._size += written
            data = data[written:]

    def _open(self) -> None:
        """Open the record for appending, again if another process rotated it since; mend a torn last line."""
        if self._fd is not None and _same_file(self._fd, self.path):
            return
        self._close_file()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for file in (self.path, previous_generation(self.path)):
            self._check_generation(file)
        fd = open_for_writing(self.path, RECORD_MODE, append=True)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                os.write(fd, b"\n")  # a line torn by a crash stays one damaged line, not two
        except BaseException:
            os.close(fd)
            raise
        self._fd, self._size = fd, os.fstat(fd).st_size

    def _check_generation(self, file: Path) -> None:
        """A generation of the record is a regular file in the record's folder that its owner alone reads (an
        earlier release's is made so); a link (whose target may lie anywhere), a FIFO, a socket, a device or a hard
        link in its place is never opened: it is moved aside to ``NAME.damaged``, said once, and the record starts
        afresh."""
        what = unusable(file)
        if what is None:
            tighten(file, RECORD_MODE)
            return
        try:
            done = f"moved it to {set_aside(file).name}; decisions are recorded afresh"
        except OSError as exc:
            done = f"could not move it aside ({exc.strerror or exc}); decisions go unrecorded until it can"
        self._log_once(logging.WARNING, f"the decision record {file} is {what}; {done}")

    def _rotate(self) -> None:
        if _same_file(self._fd, self.path):  # else another process rotated it a moment ago
            os.replace(self.path, previous_generation(self.path))
        self._close_file()
        self._open()

    def _close_file(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                os.close(fd)
            except OSError:
                pass


def _same_file(fd: int, path: Path) -> bool:
    try:
        here, there = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


# --------------------------------------------------------------------------- reading


@dataclass
class RecordContents:
    """What :func:`read_record` found: the entries, oldest first, and what it had to skip."""

    entries: list[DecisionEntry] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    damaged_lines: int = 0
    cut_files: list[Path] = field(default_factory=list)  # larger than the read bound: only their end was read
    unreadable: list[str] = field(default_factory=list)  # one line each: the file and why


def read_record(path: Path, max_bytes: int, since: float | None = None) -> RecordContents:
    """The record at ``path`` (previous generation first), skipping damaged lines; never raises for bad content.

    At most ``max_bytes`` are read from the end of each file; entries older
    than ``since`` (seconds since the epoch) are left out.
    """
    found = RecordContents()
    for file in (previous_generation(path), path):
        try:
            _read_file(file, max_bytes, since, found)
        except FileNotFoundError:
            continue
        except OSError as exc:
            found.unreadable.append(f"{file}: {exc.strerror or exc}")
    found.entries.sort(key=lambda entry: entry.time)
    return found


def _read_file(file: Path, max_bytes: int, since: float | None, found: RecordContents) -> None:
    with open_regular_file(file, follow=False) as fh:
        size = os.fstat(fh.fileno()).st_size
        found.files.append(file)
        start = max(0, size - max_bytes)
        if start:
            found.cut_files.append(file)
            fh.seek(start - 1)
            _skip_line(fh)  # the partial line the bound cuts into (or the newline before a whole one)
        remaining = size - fh.tell()
        while remaining > 0:
            line = fh.readline(min(remaining, MAX_LINE_BYTES + 1))
            if not line:
                break
            remaining -= len(line)
            if len(line) > MAX_LINE_BYTES:
                remaining -= _skip_line(fh)
                found.damaged_lines += 1
                continue
            _take(line, since, found)


def _take(line: bytes, since: float | None, found: RecordContents) -> None:
    if not line.strip():
        return
    try:
        entry = DecisionEntry.from_line(line) if line.lstrip().startswith(b"{") else None
    except Exception:  # noqa: BLE001 - any damage (deep nesting, huge numbers, bad bytes) skips the line
        entry = None
    if entry is None:
        found.damaged_lines += 1
    elif since is None or entry.time >= since:
        found.entries.append(entry)


def _skip_line(fh) -> int:
    """Read up to and including the next newline; returns how many bytes that was."""
    skipped = 0
    while True:
        piece = fh.readline(MAX_LINE_BYTES)
        skipped += len(piece)
        if not piece or piece.endswith(b"\n"):
            return skipped
