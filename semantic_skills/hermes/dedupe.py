"""Which skills each session already received, so none is injected twice.

A bounded LRU of sessions with a time-to-live, safe to use from any thread,
persisted as JSON so a restarted gateway does not re-inject into the sessions
it restores. Writes happen on a background thread, at most about once a second.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Callable

from ..files import atomic_write
from ..logs import OnceLogger

FORMAT_VERSION = 1
WRITE_DELAY_SECONDS = 1.0


def gateway_session(session_key: str, session_id: str | None) -> str:
    """The dedupe key of a gateway chat: its routing key plus its current session id."""
    return f"gateway:{session_key}#{session_id or ''}"


def agent_session(session_id: str) -> str:
    """The dedupe key of a session that only ``pre_llm_call`` sees (CLI, TUI, cron, API)."""
    return f"agent:{session_id}"


class InjectedSkills:
    """A set of injected skill names per session, bounded by count and age."""

    def __init__(self, path: Path | None, max_sessions: int = 2000, ttl_seconds: float = 86400,
                 clock: Callable[[], float] = time.time, log_once: OnceLogger | None = None):
        self.path = path
        self.max_sessions = max_sessions
        self.ttl_seconds = ttl_seconds
        self._clock = clock
        self._log_once = log_once or OnceLogger()
        self._lock = threading.Lock()
        self._sessions: OrderedDict[str, tuple[float, set[str]]] = OrderedDict()
        self._dirty = threading.Event()
        self._closed = False
        self._writer: threading.Thread | None = None
        self._load()

    # ------------------------------------------------------------------ queries and updates

    def claim(self, session: str, skill: str) -> bool:
        """Record ``skill`` for ``session``; False if the session already had it."""
        with self._lock:
            skills = self._touch(session)
            if skill in skills:
                return False
            skills.add(skill)
        self._changed()
        return True

    def forget(self, session: str) -> None:
        """Drop everything recorded for ``session``."""
        with self._lock:
            dropped = self._sessions.pop(session, None)
        if dropped is not None:
            self._changed()

    def forget_session_ids(self, session_ids: set[str]) -> int:
        """Drop every session whose id is in ``session_ids``; returns how many were dropped."""
        wanted = {s for s in session_ids if s}
        if not wanted:
            return 0
        with self._lock:
            doomed = [key for key in self._sessions if key.rpartition("#")[2] in wanted
                      or key.partition(":")[2] in wanted]
            for key in doomed:
                del self._sessions[key]
        if doomed:
            self._changed()
        return len(doomed)

    def __len__(self) -> int:
        with self._lock:
            self._expire()
            return len(self._sessions)

    def _live_entry(self, session: str):
        entry = self._sessions.get(session)
        if entry is not None and self._clock() - entry[0] > self.ttl_seconds:
            del self._sessions[session]
            return None
        return entry

    def _touch(self, session: str) -> set[str]:
        entry = self._live_entry(session)
        skills = entry[1] if entry else set()
        self._sessions[session] = (self._clock(), skills)
        self._sessions.move_to_end(session)
        self._expire()
        return skills

    def _expire(self) -> None:
        while len(self._sessions) > self.max_sessions:
            self._sessions.popitem(last=False)
        cutoff = self._clock() - self.ttl_seconds
        while self._sessions:
            oldest_key = next(iter(self._sessions))
            if self._sessions[oldest_key][0] >= cutoff:
                break
            del self._sessions[oldest_key]

    # ------------------------------------------------------------------ persistence

    def _load(self) -> None:
        if self.path is None:
            return
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return
        except OSError as exc:
            self._log_once(logging.WARNING, f"cannot read {self.path} ({exc.strerror}); starting with no history")
            return
        try:
            data = json.loads(raw)
            if data.get("version") != FORMAT_VERSION:
                raise ValueError(f"version {data.get('version')!r}")
            for key, seen, names in data["sessions"]:
                self._sessions[str(key)] = (float(seen), {str(n) for n in names})
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            self._sessions.clear()
            self._log_once(logging.WARNING, f"ignored the corrupt dedupe file {self.path} ({exc}); starting empty")
            return
        self._expire()

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

    def flush(self) -> None:
        """Write the current state now, atomically."""
        if self.path is None:
            return
        self._dirty.clear()
        with self._lock:
            self._expire()
            rows = [[key, seen, sorted(names)] for key, (seen, names) in self._sessions.items()]
        payload = json.dumps({"version": FORMAT_VERSION, "sessions": rows}, ensure_ascii=False).encode("utf-8")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self.path, payload)
        except OSError as exc:
            self._log_once(logging.WARNING, f"cannot save {self.path} ({exc.strerror or exc})")

    def close(self) -> None:
        """Write pending changes and stop the writer thread."""
        pending = self._dirty.is_set()
        self._closed = True
        self._dirty.set()
        if pending:
            self.flush()
