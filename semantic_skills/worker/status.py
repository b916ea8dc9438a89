"""What a host knows of its routing worker: its state, and once loaded, its skill count and embedder backend."""

from __future__ import annotations

import threading
import time
from typing import Callable

from .protocol import FAILED, READY, STARTING, WAITING_FOR_INDEX


class WorkerStatus:
    """The worker's last reported state, safe to read and wait on from any thread."""

    def __init__(self):
        self.state = STARTING
        self.detail = ""
        self.backend = ""
        self.skills = 0
        self.gated: tuple[dict, ...] = ()  # the loaded index's skills whose offer the host decides
        self._changed = threading.Condition()

    @property
    def ready(self) -> bool:
        return self.state == READY

    def update(self, state: str, detail: str = "", backend: str = "", skills: int = 0,
               gated: tuple[dict, ...] | None = None) -> None:
        """Record a new state; ``backend``, ``skills`` and ``gated`` keep their last values when not given."""
        with self._changed:
            self.state, self.detail = state, detail
            self.backend = backend or self.backend
            self.skills = skills or self.skills
            self.gated = self.gated if gated is None else gated
            self._changed.notify_all()

    def wait_ready(self, timeout: float, stopped: Callable[[], bool]) -> bool:
        """Wait until ready, or until it is clear it will not be soon (no index, failed, ``stopped()``)."""
        deadline = time.monotonic() + max(0.0, timeout)
        with self._changed:
            while self.state != READY:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.state in (WAITING_FOR_INDEX, FAILED) or stopped():
                    return False
                self._changed.wait(remaining)
        return True
