"""Requests sent to the worker and not answered yet, each a future that always resolves to a Reply."""

from __future__ import annotations

import itertools
import threading
import time
from concurrent.futures import Future

from .protocol import ERROR, OK, TIMEOUT, Reply


class PendingRequests:
    """Futures by request id, with the time each request was sent; safe to use from any thread."""

    def __init__(self):
        self._futures: dict[int, tuple[Future, float]] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def add(self) -> tuple[int, Future]:
        """A new request id and the future its answer will resolve."""
        future: Future = Future()
        with self._lock:
            request_id = next(self._ids)
            self._futures[request_id] = (future, time.monotonic())
        return request_id, future

    def answer(self, message: dict) -> None:
        """Resolve the request ``message`` answers (by its ``id``); unknown ids are ignored."""
        with self._lock:
            future, _sent = self._futures.pop(message.get("id"), (None, 0.0))
        if future is not None and not future.done():
            if message.get("ok"):
                future.set_result(Reply(OK, message))
            else:
                future.set_result(Reply(str(message.get("status") or ERROR), message, str(message.get("error") or "")))

    def fail_all(self, status: str, error: str) -> None:
        """Resolve every open request with ``status``."""
        with self._lock:
            futures, self._futures = self._futures, {}
        for future, _sent in futures.values():
            if not future.done():
                future.set_result(Reply(status, error=error))

    def oldest_age(self) -> float | None:
        """Seconds since the oldest open request was sent, or None when none is open."""
        with self._lock:
            oldest = next(iter(self._futures.values()), None)
        return time.monotonic() - oldest[1] if oldest is not None else None


def result_within(future: Future, timeout: float) -> Reply:
    """The future's reply, or a ``timeout`` reply if it is not there within ``timeout`` seconds."""
    try:
        return future.result(timeout=max(0.0, timeout))
    except Exception:  # noqa: BLE001 - concurrent.futures.TimeoutError and anything unexpected
        return Reply(TIMEOUT, error=f"no answer within {timeout * 1000:.0f} ms")
