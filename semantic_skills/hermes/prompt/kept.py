"""The last time a session's system prompt kept Hermes' listing because the plugin could not be sure where it lay.

The middleware logs such a case once, and writes it here
(``semantic-skills/listing-kept.json`` in the Hermes home: replaced whole by
a new file readable by its owner only, read back never through a link), so
``doctor``, which runs in another process, can say it too.
The next session whose listing is swapped removes the record: doctor then has
nothing to warn about. The file changes only when the outcome does (a new
reason, or a swap after a kept listing), at most once per session; a file
that cannot be written or read costs the record, never a request.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ...files import atomic_write, read_regular_file
from ..config import state_dir

RECORD_FILE = "listing-kept.json"
RECORD_MODE = 0o600
MAX_RECORD_BYTES = 64 * 1024
MAX_REASON_CHARS = 2000

_written: dict[str, str | None] = {}  # home -> the reason this process last wrote there, None once it removed it
_lock = threading.Lock()


@dataclass(frozen=True)
class Kept:
    """When a session last kept Hermes' listing, and why."""

    when: float
    reason: str


def record_path(home: Path) -> Path:
    return state_dir(home) / RECORD_FILE


def remember(home: Path, reason: str) -> None:
    """Record that a session of ``home`` keeps Hermes' listing for ``reason`` (written unless this process wrote
    that very reason last)."""
    with _lock:
        if _written.get(str(home)) == reason:
            return
        _written[str(home)] = reason
    payload = json.dumps({"when": time.time(), "reason": reason[:MAX_REASON_CHARS]}).encode()
    path = record_path(home)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, payload, RECORD_MODE)
    except OSError:
        pass


def forget(home: Path) -> None:
    """A session of ``home`` got the stub: the record, if any, is past (removed unless this process already
    removed it and wrote none since)."""
    with _lock:
        if str(home) in _written and _written[str(home)] is None:
            return
        _written[str(home)] = None
    try:
        record_path(home).unlink(missing_ok=True)
    except OSError:
        pass


def last_kept(home: Path) -> Kept | None:
    """The record of ``home``, or None when there is none (or it is unreadable: nothing to report)."""
    try:
        data = json.loads(read_regular_file(record_path(home), MAX_RECORD_BYTES, follow=False))
        return Kept(float(data["when"]), str(data["reason"])[:MAX_REASON_CHARS])
    except (OSError, ValueError, TypeError, KeyError):
        return None
