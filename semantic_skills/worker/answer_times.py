"""How long the routing worker takes to answer a route request: timed in the worker once, then by the host.

The worker routes a few sample messages once its embedder is warm and reports
their median (:func:`warm_up_route_ms`, in its ``ready`` state); the host then
times every route answer from request to arrival (:class:`AnswerTimes`), so
the gateway's wait can follow what this machine, this embedder and this load
actually take (see ``hermes/budget.py``).
"""

from __future__ import annotations

import collections
import statistics
import threading
import time

WINDOW = 32  # answers: about a minute of a busy gateway, and a burst of slow ones is forgotten after half as many
# Distinct (the router caches repeated queries), of a chat message's usual length.
WARM_UP_MESSAGES = (
    "How do I find out why my docker containers keep restarting after the last update?",
    "Can you turn this scanned PDF of last month's invoices into a clean spreadsheet?",
    "Write a short summary of the pull requests merged this week for the release notes.",
)


class AnswerTimes:
    """The round trips of the last :data:`WINDOW` route answers and their median, in seconds; thread-safe.

    An answer counts when it arrives, also one the host stopped waiting for
    (a late answer still arrives), so the median sees the slow answers as
    well as the fast ones and does not depend on how long anyone waited.
    The median is computed when an answer comes in (on the client's reader
    thread), so reading it costs nothing.
    """

    def __init__(self):
        self._times: collections.deque[float] = collections.deque(maxlen=WINDOW)
        self._lock = threading.Lock()
        self.median: float | None = None  # None until the first time is known

    def add(self, seconds: float) -> None:
        with self._lock:
            self._times.append(max(0.0, seconds))
            self.median = statistics.median(self._times)

    def __len__(self) -> int:
        return len(self._times)

    def clear(self) -> None:
        """Forget every time: another worker (or another embedder) answers from now on."""
        with self._lock:
            self._times.clear()
            self.median = None


def warm_up_route_ms(router) -> float | None:
    """The median time, in milliseconds, of routing :data:`WARM_UP_MESSAGES` with ``router``; None for an index
    without skills (no model is loaded) or a remote embedder (each query would be a paid request)."""
    if not router.manifest.skills or router.embedder.remote:
        return None
    times = []
    for message in WARM_UP_MESSAGES:
        started = time.perf_counter()
        router.route(message)
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 2)
