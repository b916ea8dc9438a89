"""File helpers shared by the index, the worker and its host: a change stamp and an atomic write."""

from __future__ import annotations

import os
from pathlib import Path

Stamp = tuple[int, int, int, int]


def file_stamp(path: str | Path) -> Stamp | None:
    """A cheap change marker for ``path`` (inode, mtime, ctime, size), or None when it cannot be read."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` at once: readers see the old file or the new one, never a part.

    The data goes to a temp file beside ``path`` (``.NAME.<random>.tmp``),
    flushed to disk, renamed over ``path``, and the folder flushed too. On an
    error (a full disk raises ``OSError`` ENOSPC) the temp file goes and
    ``path`` stays as it was.
    """
    tmp = path.with_name(f".{path.name}.{os.urandom(4).hex()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.filename is None:  # a failed write names no file: name the one meant
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    _fsync_dir(path.parent)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
