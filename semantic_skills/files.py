"""File helpers shared by the index, the worker and its host: a change stamp and an atomic replace."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

Stamp = tuple[int, int, int, int]


def file_stamp(path: str | Path) -> Stamp | None:
    """A cheap change marker for ``path`` (inode, mtime, ctime, size), or None when it cannot be read."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)


@contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """A temp path beside ``path`` to write to; when the block ends, the temp file replaces ``path`` at once.

    Readers see the old file or the new one, never a part: the temp file
    (``.NAME.<random>.tmp``) is flushed to disk, renamed over ``path``, and the
    folder flushed too. On an error the temp file goes and ``path`` stays as it was.
    """
    tmp = path.with_name(f".{path.name}.{os.urandom(4).hex()}.tmp")
    try:
        yield tmp
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically (see :func:`replacing`)."""
    with replacing(path) as tmp, open(tmp, "wb") as fh:
        fh.write(data)


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
