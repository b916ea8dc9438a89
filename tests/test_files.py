"""The one bounded reader of regular files: what it refuses, that it never blocks or reads past its bound, and
that the package reads files through nothing else; the one opener of the files the plugin writes in place."""

from __future__ import annotations

import ast
import os
import socket
import stat
import threading

import pytest

from semantic_skills.files import (
    FileTooLarge,
    NotRegularFile,
    PathChanged,
    open_for_writing,
    open_regular_file,
    read_regular_file,
    unusable,
)

from support import REPO


def fifo(tmp_path):
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


def device(_tmp_path):
    return "/dev/null"


def unix_socket(tmp_path):
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "socket"))
    return tmp_path / "socket"


def folder(tmp_path):
    return tmp_path


@pytest.mark.parametrize(("make", "kind"), [(fifo, "FIFO (named pipe)"), (device, "character device"),
                                            (unix_socket, "socket"), (folder, "folder")])
@pytest.mark.parametrize("exact", [False, True])
def test_anything_but_a_regular_file_is_refused_saying_what_it_is_and_never_blocks(tmp_path, make, kind, exact):
    path = os.path.realpath(make(tmp_path))
    outcome = []
    reader = threading.Thread(target=lambda: outcome.append(_refusal(path, exact)), daemon=True)
    reader.start()
    reader.join(10)

    assert outcome, "the reader blocked"
    assert isinstance(outcome[0], NotRegularFile) and outcome[0].kind == kind
    assert str(outcome[0]) == f"a {kind}, not a regular file"


def _refusal(path, exact: bool) -> Exception | None:
    try:
        read_regular_file(path, 1000, exact=exact)
    except OSError as exc:
        return exc
    return None


def test_a_file_over_the_bound_is_refused_without_being_read(tmp_path, monkeypatch):
    huge = tmp_path / "huge"
    with open(huge, "wb") as fh:
        fh.truncate(50 << 20)
    with open(tmp_path / "just-over", "wb") as fh:
        fh.truncate((32 << 20) + 1)
    (tmp_path / "small").write_bytes(b"x" * 1025)
    reads = []
    real_fdopen = os.fdopen

    class Watched:
        def __init__(self, fh):
            self.fh = fh

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        def fileno(self):
            return self.fh.fileno()

        def read(self, size=-1):
            reads.append(size)
            return self.fh.read(size)

    monkeypatch.setattr(os, "fdopen", lambda fd, mode: Watched(real_fdopen(fd, mode)))

    with pytest.raises(FileTooLarge, match=r"^the file is 50 MB, over the limit of 32 MB$"):
        read_regular_file(huge, 32 << 20)
    with pytest.raises(FileTooLarge, match=r"^the file is 33554433 bytes, over the limit of 33554432 bytes$"):
        read_regular_file(tmp_path / "just-over", 32 << 20)
    with pytest.raises(FileTooLarge, match=r"^the file is 1.001 KB, over the limit of 1 KB$"):
        read_regular_file(tmp_path / "small", 1024)
    assert reads == []
    assert read_regular_file(tmp_path / "small", 2000) == b"x" * 1025 and reads == [2001]


def test_a_regular_file_within_the_bound_is_read_whole(tmp_path):
    path = tmp_path / "skill"
    text = b"---\nname: kite\n---\nBody.\n"
    path.write_bytes(text)

    assert read_regular_file(path, len(text)) == text
    assert read_regular_file(path.resolve(), 1000, exact=True) == text
    with pytest.raises(FileTooLarge):
        read_regular_file(path, len(text) - 1)
    with open_regular_file(path) as fh:
        assert fh.read() == path.read_bytes()


def test_an_exact_read_follows_no_link(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (real / "file").write_text("inside")
    (tmp_path / "linked-folder").symlink_to(real, target_is_directory=True)
    (real / "linked-file").symlink_to(real / "file")
    base = tmp_path.resolve()

    with pytest.raises(PathChanged, match="its folder 'linked-folder' is now a symbolic link"):
        read_regular_file(base / "linked-folder" / "file", 100, exact=True)
    with pytest.raises(NotRegularFile, match="a symbolic link"):
        read_regular_file(base / "real" / "linked-file", 100, exact=True)
    with pytest.raises(ValueError, match="absolute"):
        read_regular_file("real/file", 100, exact=True)
    assert read_regular_file(base / "linked-folder" / "file", 100) == b"inside"  # a plain read follows them


def test_a_read_that_does_not_follow_refuses_a_link_at_the_path_and_follows_those_before_it(tmp_path):
    (tmp_path / "file").write_text("inside")
    (tmp_path / "link").symlink_to(tmp_path / "file")
    (tmp_path / "folder-link").symlink_to(tmp_path, target_is_directory=True)

    with pytest.raises(NotRegularFile, match="^a symbolic link, not a regular file$"):
        read_regular_file(tmp_path / "link", 100, follow=False)
    assert read_regular_file(tmp_path / "folder-link" / "file", 100, follow=False) == b"inside"


# --------------------------------------------------------------------------- the files the plugin writes in place


def test_a_writer_opens_only_a_file_of_its_own_at_the_path_and_never_blocks(tmp_path):
    """#33.6: the decision record's writer followed a link to a file elsewhere. A link (to a file, to /dev/zero),
    a FIFO, a socket and a hard link are refused, saying what they are, and what they lead to is untouched."""
    target = tmp_path / "elsewhere"
    target.write_bytes(b"theirs")
    target.chmod(0o644)
    (tmp_path / "link").symlink_to(target)
    (tmp_path / "device").symlink_to("/dev/zero")
    os.mkfifo(tmp_path / "fifo")
    unix_socket(tmp_path)
    os.link(target, tmp_path / "hard")
    refusals = {"link": "a symbolic link, not a regular file", "device": "a symbolic link, not a regular file",
                "fifo": "a FIFO (named pipe), not a regular file", "socket": "a socket, not a regular file",
                "hard": "a hard link (the same file has another name too), not a file of its own"}

    for name, said in refusals.items():
        assert unusable(tmp_path / name) == said
        outcome = []
        writer = threading.Thread(target=lambda: outcome.append(_write_refusal(tmp_path / name)), daemon=True)
        writer.start()
        writer.join(10)
        assert outcome and isinstance(outcome[0], NotRegularFile) and str(outcome[0]) == said, (name, outcome)
    assert target.read_bytes() == b"theirs" and stat.S_IMODE(target.stat().st_mode) == 0o644
    (tmp_path / "hard").unlink()
    assert unusable(tmp_path / "absent") is None and unusable(tmp_path) is None and unusable(target) is None


def _write_refusal(path) -> Exception | None:
    try:
        os.close(open_for_writing(path, 0o600, append=True))
    except OSError as exc:
        return exc
    return None


def test_a_writer_creates_its_file_with_its_mode_and_takes_away_what_an_earlier_one_allowed(tmp_path):
    earlier = tmp_path / "earlier"
    earlier.write_bytes(b"kept\n")
    earlier.chmod(0o644)
    previous = os.umask(0)
    try:
        new = open_for_writing(tmp_path / "new", 0o600, append=True)
        old = open_for_writing(earlier, 0o600, append=True)
    finally:
        os.umask(previous)
    os.write(old, b"added\n")
    os.close(new)
    os.close(old)

    assert stat.S_IMODE((tmp_path / "new").stat().st_mode) == 0o600
    assert stat.S_IMODE(earlier.stat().st_mode) == 0o600 and earlier.read_bytes() == b"kept\nadded\n"


# --------------------------------------------------------------------------- no other reader in the package

PACKAGE = REPO / "semantic_skills"
HELPER = "semantic_skills/files.py"  # the reader, the atomic write and the writer's opener themselves
READS = {"open", "read_text", "read_bytes"}  # builtins.open, io.open, os.open, Path.open and Path's readers
MODULE_READS = {("np", "load"), ("np", "fromfile"), ("np", "memmap"), ("np", "loadtxt"), ("np", "genfromtxt"),
                ("faiss", "read_index"), ("shutil", "copyfile"), ("shutil", "copy"), ("shutil", "copy2"),
                ("shutil", "copytree"), ("linecache", "getline")}
NOT_A_READ = {  # each call the check finds outside files.py, with why it reads nothing others can write
    ("semantic_skills/cli/app.py", "os.open"): "the null device, put in place of a stdout whose reader left",
    ("semantic_skills/router.py", "cls.open"): "SkillRouter.open: an index folder, read through index/store.py",
    ("semantic_skills/cli/routing.py", "SkillRouter.open"): "the same",
    ("semantic_skills/requirements.py", "next(iter(found)).read_text"): "pip's record of how this package was "
                                                                        "installed, in this Python's site-packages",
}


def file_reads(source: str) -> list[tuple[int, str]]:
    """Where ``source`` calls something that reads a file by its path: (line, the function as written)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        function = node.func
        if isinstance(function, ast.Name):
            reads = function.id in READS
        elif isinstance(function, ast.Attribute):
            owner = function.value.id if isinstance(function.value, ast.Name) else ""
            reads = function.attr in READS or (owner, function.attr) in MODULE_READS
        else:
            reads = False
        if reads:
            found.append((node.lineno, ast.unparse(function)))
    return sorted(found)


def test_the_package_reads_files_only_through_the_one_reader():
    """#33: others write the skills folders, external_dirs, the _org markers, the state folder and config.yaml, so
    every read goes through files.read_regular_file / open_regular_file (regular files only, without blocking,
    within a bound). A plain ``read_text`` in discovery let a FIFO hang Hermes' gateway and /dev/zero fill its
    memory."""
    calls = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = str(path.relative_to(REPO))
        if name != HELPER:
            for line, call in file_reads(path.read_text(encoding="utf-8")):
                calls.setdefault((name, call), []).append(line)

    assert sorted(f"{name}:{lines[0]}: {call}" for (name, call), lines in calls.items()
                  if (name, call) not in NOT_A_READ) == []
    assert sorted(NOT_A_READ) == sorted(key for key in calls if key in NOT_A_READ)  # no stale exception


def test_the_check_sees_a_plain_read_put_back_into_discovery():
    source = (PACKAGE / "skills" / "discovery.py").read_text(encoding="utf-8")
    safe = "read_regular_file(active_org_marker(root), MAX_ORG_MARKER_BYTES)"
    assert safe in source and file_reads(source) == []

    plain = source.replace(safe, 'active_org_marker(root).read_text(encoding="utf-8").encode()')
    with_open = source.replace(safe, "open(active_org_marker(root), 'rb').read()")

    line = source[:source.index(safe)].count("\n") + 1
    assert file_reads(plain) == [(line, "active_org_marker(root).read_text")]
    assert file_reads(with_open) == [(line, "open")]
