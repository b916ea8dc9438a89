"""The tools and toolsets each session's agent offers, as Hermes last built a system prompt with them.

An explicit input of the offer rules (a skill's ``requires_tools`` /
``fallback_for_*`` conditions depend on them), recorded per Hermes home and
chat platform by whatever sees the prompt being built (:func:`observe`).
Until one is recorded, the offer rules apply ``session_platforms`` only, as
Hermes does without that information.
"""

from __future__ import annotations

import threading
from pathlib import Path

from ..host.session import current_platform

_views: dict[tuple[str, str], tuple[frozenset[str], frozenset[str]]] = {}
_lock = threading.Lock()


def observe(home: Path, tools, toolsets, platform: str | None = None) -> None:
    """Record the tools and toolsets an agent on ``platform`` (default: the current session's) offers in ``home``."""
    if tools is None and toolsets is None:
        return
    key = (str(home), current_platform() if platform is None else platform)
    with _lock:
        _views[key] = (frozenset(tools or ()), frozenset(toolsets or ()))


def session_tools(home: Path, platform: str) -> tuple[frozenset[str], frozenset[str]] | None:
    """The ``(tools, toolsets)`` last recorded for ``home`` and ``platform``, or None."""
    with _lock:
        return _views.get((str(home), platform))
