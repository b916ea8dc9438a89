"""How long the hooks may wait for the routing worker: the gateway loop's budget and one ``pre_llm_call``'s."""

from __future__ import annotations

import time

from .host.limits import host_hook_timeout

LOCAL_ROUTE_TIMEOUT_MS = 24  # the least a local embedder's wait is: the whole wait before it was measured
MAX_LOCAL_ROUTE_TIMEOUT_MS = 45  # the most: the loop waits with it, and the plugin never holds the loop 50 ms
ROUTE_WAIT_MARGIN = 1.25  # the wait is this much the median answer: most answers fall within it
REMOTE_ROUTE_TIMEOUT_MS = 200
AGENT_ANSWER_TIMEOUT_SECONDS = 5.0  # a ready worker answers in milliseconds; a hung one is given up on
HOST_TIMEOUT_SHARE = 0.5  # one hook call waits at most this share of Hermes' hook_callback_timeout


def route_timeout(route_timeout_ms: int, remote: bool, median_answer: float | None = None) -> float:
    """How long the gateway loop may wait for a routing answer, in seconds.

    ``route_timeout_ms`` when set; else :data:`REMOTE_ROUTE_TIMEOUT_MS` for a
    ``remote`` embedder; else, for a local one, :data:`ROUTE_WAIT_MARGIN`
    times the ``median_answer`` of the worker's recent answers (seconds; None
    before any is timed), between :data:`LOCAL_ROUTE_TIMEOUT_MS` and
    :data:`MAX_LOCAL_ROUTE_TIMEOUT_MS`.
    """
    if route_timeout_ms:
        return route_timeout_ms / 1000.0
    if remote:
        return REMOTE_ROUTE_TIMEOUT_MS / 1000.0
    wanted = ROUTE_WAIT_MARGIN * median_answer if median_answer is not None else 0.0
    return min(MAX_LOCAL_ROUTE_TIMEOUT_MS / 1000.0, max(LOCAL_ROUTE_TIMEOUT_MS / 1000.0, wanted))


class Deadline:
    """The time budget of one hook call, shared by all its waits.

    Each wait gets the smaller of its own limit and what is left; the waits
    for the worker's answers also share one :data:`AGENT_ANSWER_TIMEOUT_SECONDS`
    window, opened by the first of them: the answers are all due at once, so a
    hung worker costs that window once, however many turns wait on it.
    """

    def __init__(self, seconds: float):
        self.seconds = max(0.0, seconds)
        self._end = time.monotonic() + self.seconds
        self._answers_end: float | None = None

    @classmethod
    def for_agent_hook(cls, warmup_wait_seconds: float) -> "Deadline":
        """The budget of one ``pre_llm_call``: the warm-up wait plus one answer, and never more than
        :data:`HOST_TIMEOUT_SHARE` of the time after which Hermes abandons a hook callback (and mutes it for a
        minute)."""
        wanted = warmup_wait_seconds + AGENT_ANSWER_TIMEOUT_SECONDS
        return cls(min(wanted, HOST_TIMEOUT_SHARE * host_hook_timeout()))

    def within(self, limit: float) -> float:
        """How long the next wait may take: ``limit``, or less if the budget runs out first."""
        return max(0.0, min(limit, self._end - time.monotonic()))

    def for_answer(self) -> float:
        """How long the next wait for a routing answer may take."""
        now = time.monotonic()
        if self._answers_end is None:
            self._answers_end = now + AGENT_ANSWER_TIMEOUT_SECONDS
        return self.within(self._answers_end - now)
