"""An index folder's build lock: held by whatever writes the folder (a build, ``calibrate --write``, a move).

Standard library only, so a host process that must not import numpy (Hermes,
which moves a home's index into place) can hold it too.
"""

from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ..errors import BuildLocked, IndexCorrupt
from ..files import NotRegularFile, open_for_writing

LOCK = ".lock"
LOCK_MODE = 0o644


@contextmanager
def build_lock(index_dir: Path) -> Iterator[None]:
    """Hold the index folder's build lock, or raise :class:`BuildLocked` at once."""
    index_dir = Path(index_dir)
    index_dir.mkdir(parents=True, exist_ok=True)
    try:
        fd = open_for_writing(index_dir / LOCK, LOCK_MODE)  # never through a link: ftruncate must not reach it
    except NotRegularFile as exc:
        raise IndexCorrupt(f"the build lock {index_dir / LOCK} is {exc}; remove it, then run this build "
                           "again") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            raise BuildLocked(
                f"another build (pid {holder}) is updating {index_dir}; wait for it to finish, "
                "then run this build again"
            ) from None
        _record_holder(fd)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _record_holder(fd: int) -> None:
    """Write this process's id into the held lock file, for a second build's message; skipped on a full disk."""
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
    except OSError:
        pass
