"""The tools and toolsets each session's agent offers, as its last provider request offered them.

An explicit input of the offer rules (a skill's ``requires_tools`` /
``fallback_for_*`` conditions depend on them), recorded per Hermes home and
chat platform from each outgoing request by the ``llm_request`` middleware
(:func:`observe`).
Until one is recorded, the offer rules apply ``session_platforms`` only, as
Hermes does without that information.
"""

from __future__ import annotations

import threading
from pathlib import Path

_views: dict[tuple[str, str], tuple[frozenset[str], frozenset[str]]] = {}
_lock = threading.Lock()


def observe(home: Path, tools, toolsets, platform: str) -> None:
    """Record the tools and toolsets an agent on ``platform`` offers in ``home``."""
    with _lock:
        _views[(str(home), platform)] = (frozenset(tools), frozenset(toolsets))


def session_tools(home: Path, platform: str) -> tuple[frozenset[str], frozenset[str]] | None:
    """The ``(tools, toolsets)`` last recorded for ``home`` and ``platform``, or None."""
    with _lock:
        return _views.get((str(home), platform))
