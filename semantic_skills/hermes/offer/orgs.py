"""Organisation mirrors (``_org/<org id>/`` in a skills folder): which one is active, and when that changes.

Hermes 0.21 offers only the active organisation's mirrored skills, and its
own listing follows a switch at once. An index holds the organisation that
was active when it was built, so for each message the host hides every
mirrored skill of another organisation, and asks for a re-index when it sees
the active one change (the rebuild then brings the new organisation's skills).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Callable, Iterable

from ...files import file_stamp
from ...skills.discovery import active_org_marker


class ActiveOrgs:
    """The active organisation of each watched skills folder, read again only when its marker file changes.

    ``read(skills_dir)`` names the folder's active organisation ("" for none).
    """

    def __init__(self, home_skills_dir: Path, read: Callable[[Path], str]):
        self._home_marker = str(active_org_marker(home_skills_dir))
        self._read = read
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[object, str]] = {}  # marker -> (its file stamp, the organisation)
        self._seen: dict[str, str] = {}  # marker -> the organisation at the last check()

    def check(self, gated: Iterable[dict]) -> tuple[frozenset[str], bool]:
        """The mirrored skills in ``gated`` of an organisation that is not active now, and whether a folder's
        active organisation changed since the last call (the first sighting is no change)."""
        gated = [g for g in gated if g.get("org")]
        now = {marker: self._active(marker) for marker in {self._home_marker, *(g["org_marker"] for g in gated)}}
        hidden = frozenset(g["name"] for g in gated if g["org"] != now[g["org_marker"]])
        with self._lock:
            before = {marker: self._seen.setdefault(marker, organisation) for marker, organisation in now.items()}
            self._seen.update(now)
        return hidden, before != now

    def _active(self, marker: str) -> str:
        stamp = file_stamp(marker)
        with self._lock:
            cached = self._cache.get(marker)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        organisation = self._read(Path(marker).parent.parent)
        with self._lock:
            self._cache[marker] = (stamp, organisation)
        return organisation
