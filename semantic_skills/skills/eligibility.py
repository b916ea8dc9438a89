"""Which skills the agent would offer on this machine: the ``platforms:`` and ``environments:`` rules."""

from __future__ import annotations

import os
import sys
from typing import Iterable

_OS_NAMES = {"macos": "darwin", "linux": "linux", "windows": "win32"}


def platforms_allow(platforms: Iterable[str]) -> bool:
    """True when the agent would offer a skill with these ``platforms:`` entries on this machine.

    As in the agent, no entries allow every machine, and each entry names an
    operating system: ``macos``, ``linux``, ``windows`` or a prefix of
    ``sys.platform`` (Termux counts as Linux). An entry such as ``telegram``
    matches no machine, so the agent never offers that skill and the router
    never injects it. Chat platforms are the caller's to apply.
    """
    termux = bool(os.environ.get("TERMUX_VERSION") or "com.termux/files/usr" in os.environ.get("PREFIX", ""))
    entries = list(platforms)
    for entry in entries:
        wanted = str(entry).strip().lower()
        wanted = _OS_NAMES.get(wanted, wanted)
        if sys.platform.startswith(wanted) or (termux and wanted in ("linux", "termux", "android")):
            return True
    return not entries


def environments_allow(environments: Iterable[str], inactive: frozenset[str]) -> bool:
    """True when the agent would offer a skill with these ``environments:`` entries.

    ``inactive`` names the environments the agent knows and finds inactive. As
    in the agent, no entries allow every environment; otherwise one entry that
    is neither empty nor inactive is needed, so an unknown tag keeps the skill
    offered and ``[""]`` hides it.
    """
    entries = list(environments)
    return not entries or any(entry and entry not in inactive for entry in entries)
