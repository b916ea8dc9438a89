"""Incremental rebuilds inside the routing worker, asked for by the host when a skill changes.

The worker already holds the embedder, so a changed skill is re-embedded in
well under a second, with no model load. A build starts a moment after the
last request (an agent writing a skill and then its files makes one build),
runs on its own thread so routing never waits for it, and takes its turn
behind any other build of the same index. The worker's reload loop then swaps
the rebuilt index in, as it does for ``semantic-skills build``.
"""

from __future__ import annotations

import errno
import threading
import time
from pathlib import Path
from typing import Callable

from ..errors import BuildLocked, command, first_line
from ..threads import LazyThread
from .priority import lower_this_threads_priority

REBUILD_DELAY_SECONDS = 0.5  # quiet time after the last request before building
LOCKED_RETRY_SECONDS = 5.0
LOCKED_ATTEMPTS = 12  # a minute of waiting for another build to finish


class Rebuilder:
    """Builds the index in ``index_dir`` again from its recorded roots, when asked and off the request thread.

    ``router`` returns the worker's current router (its manifest names the
    roots, its embedder embeds); ``log(level, message)`` reports outcomes.
    """

    def __init__(self, index_dir: Path, router: Callable, log: Callable[[str, str], None],
                 delay: float = REBUILD_DELAY_SECONDS, locked_retry: float = LOCKED_RETRY_SECONDS):
        self.index_dir = Path(index_dir)
        self._router = router
        self._log = log
        self._delay = delay
        self._locked_retry = locked_retry
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._due = 0.0
        self._thread = LazyThread(self._run, "semantic-skills-rebuild")

    def request(self) -> None:
        """Build soon: ``delay`` seconds after the last request."""
        with self._lock:
            self._due = time.monotonic() + self._delay
        self._thread.start()
        self._wake.set()

    def _run(self) -> None:
        lower_this_threads_priority()
        while True:
            self._wake.wait()
            self._wait_until_due()
            self._wake.clear()
            attempts = 0
            while not self._build_once():
                attempts += 1
                if attempts >= LOCKED_ATTEMPTS:
                    self._log("warning", f"gave up re-indexing {self.index_dir}: another build kept it locked; "
                                         f"run: {command('build')}")
                    break
                time.sleep(self._locked_retry)

    def _wait_until_due(self) -> None:
        while True:
            with self._lock:
                remaining = self._due - time.monotonic()
            if remaining <= 0:
                return
            time.sleep(remaining)

    def _build_once(self) -> bool:
        """One incremental build; False only when another build holds the index (try again later)."""
        from ..builder import build_index

        router = self._router()
        if router is None:
            return True
        try:
            report = build_index(router.manifest.skills_roots(), self.index_dir, router.embedder,
                                 second=router.second_embedder)
        except BuildLocked:
            return False
        except Exception as exc:  # noqa: BLE001 - report it; the current index keeps serving
            full = isinstance(exc, OSError) and exc.errno == errno.ENOSPC
            self._log("warning", f"could not re-index {self.index_dir} after a skill change: {first_line(exc)}"
                                 + ("; free some space (the current index keeps serving)" if full else ""))
            return True
        if report.wrote:
            counts = report.counts()
            self._log("info", f"re-indexed {self.index_dir} after a skill change: {counts['added']} added, "
                              f"{counts['updated']} updated, {counts['removed']} removed")
        return True
