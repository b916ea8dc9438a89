"""File helpers shared by the index, the worker and its host: a change stamp, an atomic write, the one opener of
the files the plugin writes in place, and the one bounded reader of regular files.

Every file the package reads goes through :func:`read_regular_file` or
:func:`open_regular_file` (``tests/test_files.py`` checks it): others can write
the skills folders, ``config.yaml`` and the state folder, so a FIFO, a device
or a huge file there must never hang or flood a reader.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

Stamp = tuple[int, int, int, int]
DAMAGED_SUFFIX = ".damaged"  # what a file that cannot be used is moved aside to (see set_aside)

_READ = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC  # non-blocking: a FIFO that slipped past the check cannot hang
_WRITE = os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC  # a file the plugin writes in place
_FOLDER = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC  # a folder to open in
_KINDS = ((stat.S_ISDIR, "folder"), (stat.S_ISFIFO, "FIFO (named pipe)"), (stat.S_ISSOCK, "socket"),
          (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"), (stat.S_ISLNK, "symbolic link"))


class NotRegularFile(OSError):
    """A path that is a folder, FIFO, socket, device or (for an exact read) a symbolic link: never read; for a
    writer, also a file with another name (a hard link)."""

    def __init__(self, kind: str, said: str = ""):
        super().__init__(said or f"a {kind}, not a regular file")
        self.kind = kind


class FileTooLarge(OSError):
    """A regular file larger than its reader accepts: refused without reading it."""

    def __init__(self, size: int, max_bytes: int):
        size_text, limit_text = _amount(size), _amount(max_bytes)
        if size_text == limit_text:  # just over: the bytes show the difference
            size_text, limit_text = f"{size} bytes", f"{max_bytes} bytes"
        super().__init__(f"the file is {size_text}, over the limit of {limit_text}")
        self.size, self.max_bytes = size, max_bytes


class PathChanged(OSError):
    """An exact read found a link, or no folder, where the resolved path it was given had a folder."""

    def __init__(self, folder: str, now: str):
        super().__init__(f"the path changed while it was read: its folder {folder!r} is now {now}")


def file_stamp(path: str | Path) -> Stamp | None:
    """A cheap change marker for ``path`` (inode, mtime, ctime, size), or None when it cannot be read."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)


def atomic_write(path: Path, data: bytes, mode: int = 0o666) -> None:
    """Replace ``path`` with ``data`` at once: readers see the old file or the new one, never a part.

    The data goes to a temp file beside ``path`` (``.NAME.<random>.tmp``,
    created with ``mode`` less the umask: 0o600 for a file only its owner may
    read), flushed to disk, renamed over ``path``, and the folder flushed
    too. On an error (a full disk raises ``OSError`` ENOSPC) the temp file
    goes and ``path`` stays as it was.
    """
    tmp = path.with_name(f".{path.name}.{os.urandom(4).hex()}.tmp")
    exclusive = os.O_EXCL | os.O_NOFOLLOW  # a new file of its own: never one, nor a link, that was there
    try:
        with open(tmp, "wb", opener=lambda name, flags: os.open(name, flags | exclusive, mode)) as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.filename is None:  # a failed write names no file: name the one meant
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    fsync_folder(path.parent)


def set_aside(path: Path) -> Path:
    """Move ``path``, whatever it is (a damaged file, a FIFO, a socket, a link to a device), to ``NAME.damaged``
    beside it, readable by its owner only if it is a file, and return where; raises ``OSError`` when it cannot."""
    aside = path.with_name(path.name + DAMAGED_SUFFIX)
    os.replace(path, aside)
    tighten(aside, 0o600)
    return aside


def tighten(path: Path, mode: int) -> None:
    """Give the regular file at ``path`` ``mode`` if it allows more; quietly nothing when it is not there, cannot
    be changed, or is not the plugin's alone to change (a link's target, a file with another name too)."""
    try:
        info = os.lstat(path)
        if stat.S_ISREG(info.st_mode) and info.st_nlink == 1 and stat.S_IMODE(info.st_mode) & ~mode:
            os.chmod(path, mode)
    except OSError:
        pass


def unusable(path: str | Path) -> str | None:
    """What ``path`` itself is, in words ("a FIFO (named pipe), not a regular file"), when a file the plugin keeps
    may not be there: a symbolic link (to anything), a FIFO, a socket, a device, or a file with another name too (a
    hard link), none of which :func:`open_for_writing` opens; None for a regular file of its own, a folder, and
    nothing at all."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISDIR(info.st_mode):
        return None
    try:
        _refuse_unless_own(info)
    except NotRegularFile as exc:
        return str(exc)
    return None


def open_for_writing(path: str | Path, mode: int, *, append: bool = False) -> int:
    """A descriptor of the file at ``path`` open for reading and writing (appending with ``append``), created with
    ``mode`` if it is not there and never left with more than ``mode``.

    Only the regular file at ``path`` itself is opened, without blocking: a
    link there is never followed, so nothing is written through it to a file
    elsewhere; a link, a FIFO, a socket, a device or a file with another name
    too raise :class:`NotRegularFile` (see :func:`unusable` and
    :func:`set_aside`).
    """
    try:
        _refuse_unless_own(os.lstat(path))  # checked first: opening a device or a socket would act on it
    except FileNotFoundError:
        pass
    try:
        fd = os.open(path, _WRITE | (os.O_APPEND if append else 0), mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a link swapped in since the check
            raise NotRegularFile("symbolic link") from None
        raise
    try:
        info = os.fstat(fd)
        _refuse_unless_own(info)
        if stat.S_IMODE(info.st_mode) & ~mode:
            os.fchmod(fd, stat.S_IMODE(info.st_mode) & mode)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _refuse_unless_own(info: os.stat_result) -> None:
    refuse_unless_regular(info.st_mode)
    if info.st_nlink > 1:
        raise NotRegularFile("hard link", "a hard link (the same file has another name too), not a file of its own")


def fsync_folder(path: Path) -> None:
    """Write ``path``'s entries (a rename, a new link) through to the disk; quietly nothing where it cannot."""
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


def read_regular_file(path: str | Path, max_bytes: int, *, exact: bool = False, follow: bool = True) -> bytes:
    """The bytes of the regular file at ``path``, refused (:class:`FileTooLarge`) over ``max_bytes`` before any is
    read; never more than one byte past ``max_bytes`` is read, should the file grow meanwhile.

    See :func:`open_regular_file` for what else is refused, for ``exact`` and ``follow``.
    """
    with open_regular_file(path, exact=exact, follow=follow) as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > max_bytes:
            raise FileTooLarge(size, max_bytes)
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise FileTooLarge(len(data), max_bytes)
    return data


def open_regular_file(path: str | Path, *, exact: bool = False, follow: bool = True) -> BinaryIO:
    """``path`` open for reading in binary, if it is a regular file; else :class:`NotRegularFile`, saying what it is.

    The kind is checked before opening (so no device or FIFO is opened) and
    again on the open file, which is opened without blocking: one swapped in
    between cannot hang the caller. Without ``follow``, a link at ``path``
    itself is refused as one (a file the plugin keeps in its own folder is
    never read through a link). With ``exact``, ``path`` must be absolute
    and free of links (resolved), and no link is followed: each folder is
    opened inside the one before, so the file read is the one at ``path`` even
    if a folder or the file is replaced by a link meanwhile (:class:`PathChanged`,
    or :class:`NotRegularFile` for the file).
    """
    if not exact:
        return os.fdopen(_open_checked(path, None, follow=follow), "rb")
    path = Path(path)
    if not path.is_absolute():
        raise ValueError(f"an exact read needs an absolute, resolved path, not {str(path)!r}")
    folder_fd = os.open(path.anchor, _FOLDER)
    try:
        for part in path.parts[1:-1]:
            inner = _open_folder(part, folder_fd)
            os.close(folder_fd)
            folder_fd = inner
        return os.fdopen(_open_checked(path.name, folder_fd, follow=False), "rb")
    finally:
        os.close(folder_fd)


def _open_folder(name: str, parent_fd: int) -> int:
    try:
        return os.open(name, _FOLDER, dir_fd=parent_fd)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        info = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
        raise PathChanged(name, "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a folder") from None


def _open_checked(path: str | Path, dir_fd: int | None, follow: bool) -> int:
    refuse_unless_regular(os.stat(path, dir_fd=dir_fd, follow_symlinks=follow).st_mode)
    try:
        fd = os.open(path, _READ | (0 if follow else os.O_NOFOLLOW), dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow:  # a link swapped in since the check
            raise NotRegularFile("symbolic link") from None
        raise
    try:
        refuse_unless_regular(os.fstat(fd).st_mode)
    except BaseException:
        os.close(fd)
        raise
    return fd


def refuse_unless_regular(mode: int) -> None:
    """Raise :class:`NotRegularFile`, naming the kind, unless ``mode`` (``st_mode``) is a regular file's."""
    if not stat.S_ISREG(mode):
        raise NotRegularFile(next((kind for test, kind in _KINDS if test(mode)), "special file"))


def _amount(size: int) -> str:
    """``size`` bytes in the unit a reader takes in at once: bytes, KB or MB."""
    for unit, scale in (("MB", 1 << 20), ("KB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.4g} {unit}"
    return f"{size} bytes"
