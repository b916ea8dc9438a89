"""The Hermes home (profile) a call is made for."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


def hermes_home() -> Path:
    """The Hermes home of the current call: Hermes' own answer (a profile's home, possibly for this
    context only), else ``$HERMES_HOME``, else ``~/.hermes``."""
    constants = sys.modules.get("hermes_constants")
    if constants is None:
        try:
            import hermes_constants as constants
        except Exception:  # noqa: BLE001 - Hermes is not installed in this Python
            constants = None
    try:
        return Path(constants.get_hermes_home())
    except Exception:  # noqa: BLE001 - no such function in this Hermes
        raw = os.environ.get("HERMES_HOME", "").strip()
        return Path(raw).expanduser() if raw else Path.home() / ".hermes"


@contextmanager
def hermes_home_bound(home: Path) -> Iterator[None]:
    """Hermes' home bound to ``home`` in this thread's context (a thread of ours does not inherit the caller's)."""
    constants = sys.modules.get("hermes_constants")
    bind = getattr(constants, "set_hermes_home_override", None)
    token = bind(str(home)) if callable(bind) else None
    try:
        yield
    finally:
        if token is not None:
            constants.reset_hermes_home_override(token)
