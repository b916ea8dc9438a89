"""A background thread started the first time it is needed, once, whichever thread needs it."""

from __future__ import annotations

import threading
from typing import Callable


class LazyThread:
    """A daemon thread running ``target``, started by the first :meth:`start` call from any thread."""

    def __init__(self, target: Callable[[], None], name: str):
        self._target, self._name = target, name
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._target, name=self._name, daemon=True)
                    self._thread.start()
