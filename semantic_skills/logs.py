"""The package's logger, and a helper that logs each distinct message once."""

from __future__ import annotations

import collections
import logging
import threading

logger = logging.getLogger("semantic_skills")


class OnceLogger:
    """Logs each distinct message once, so a recurring fault never floods the log."""

    def __init__(self, log: logging.Logger = logger, limit: int = 512):
        self._log = log
        self._seen: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._lock = threading.Lock()
        self._limit = limit

    def __call__(self, level: int, message: str) -> bool:
        """Log ``message`` at ``level`` unless it was logged before; True if logged."""
        with self._lock:
            if message in self._seen:
                return False
            self._seen[message] = None
            if len(self._seen) > self._limit:
                self._seen.popitem(last=False)
        self._log.log(level, "semantic-skills: %s", message)
        return True
