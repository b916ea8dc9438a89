"""An index moved whole to another folder: under both folders' build locks, published in one step as a build
publishes (the manifest last), and never half done.

Standard library only (no numpy): a host process moves an index before it
starts the routing worker.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
from pathlib import Path
from typing import Callable

from ..errors import first_line
from ..files import atomic_write, fsync_folder, read_regular_file
from . import MANIFEST, MAX_MANIFEST_BYTES
from .lock import LOCK, build_lock

MAX_INDEX_FILE_BYTES = 4 << 30  # a vectors file copied across file systems is read whole, up to this


def move_index(source: Path, target: Path, judge: Callable[[list[str]], str]) -> str:
    """Move the index in ``source`` to ``target`` unless ``judge`` refuses it: "" once moved, else why it stays.

    Both build locks are held, so no build writes either folder meanwhile.
    The manifest in ``source`` is read and ``judge`` is given the skills roots
    it names: a reason from ``judge``, a manifest that cannot be read, or an
    index already in ``target`` leaves everything as it is. Each vectors file
    is linked (or, on another file system, copied) into ``target`` first, then
    the manifest, in one rename, as a build publishes one: a reader of
    ``target`` sees no index, then the whole of it. Only then does ``source``
    go. Raises :class:`~semantic_skills.errors.BuildLocked` while a build holds
    either folder, and OSError (``source`` then stays whole).
    """
    source, target = Path(source), Path(target)
    with build_lock(source), build_lock(target):
        if os.path.lexists(target / MANIFEST):
            return f"{target} holds an index already"
        try:
            roots = manifest_roots(source)
        except (OSError, ValueError) as exc:
            return f"its manifest cannot be read ({first_line(exc)})"
        if not stat.S_ISREG(os.lstat(source / MANIFEST).st_mode):
            return "its manifest is a link, not a file"
        reason = judge(roots)
        if reason:
            return reason
        names = [entry.name for entry in os.scandir(source) if entry.is_file(follow_symlinks=False)
                 and entry.name not in (LOCK, MANIFEST) and not entry.name.endswith(".tmp")]
        for name in [*names, MANIFEST]:  # the manifest last: it is what makes the index there
            _place(source / name, target / name)
        fsync_folder(target)
        shutil.rmtree(source, ignore_errors=True)
    return ""


def manifest_roots(index_dir: Path) -> list[str]:
    """The skills roots the manifest in ``index_dir`` names; OSError or ValueError when it cannot be read."""
    data = json.loads(read_regular_file(Path(index_dir) / MANIFEST, MAX_MANIFEST_BYTES))
    roots = data.get("roots") if isinstance(data, dict) else None
    if not isinstance(roots, list) or not all(isinstance(root, str) for root in roots):
        raise ValueError("it names no list of skills folders")
    return roots


def _place(source: Path, target: Path) -> None:
    """``source``'s bytes at ``target`` in one step (a hard link, else a copy through the one atomic write);
    ``source`` stays."""
    staged = target.with_name(f".{target.name}.{os.urandom(4).hex()}.tmp")
    try:
        os.link(source, staged, follow_symlinks=False)
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
            raise
        atomic_write(target, read_regular_file(source, MAX_INDEX_FILE_BYTES, follow=False))
        return
    try:
        os.replace(staged, target)
    finally:
        staged.unlink(missing_ok=True)
