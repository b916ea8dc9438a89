"""An index moved whole to another folder (``index.relocate``, how a Hermes home takes in the index an earlier
release kept in the plugin folder): it arrives whole or not at all, never while a build writes it, and never when its
skills folders are refused; real faults: another file system, a full disk, a held build lock."""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

import pytest

from semantic_skills.errors import BuildLocked
from semantic_skills.index.lock import build_lock
from semantic_skills.index.relocate import move_index
from semantic_skills.index.store import load_index

from support import fill_disk, small_disk

ANY_ROOTS = lambda roots: ""  # noqa: E731 - a judge that takes every index


def snapshot(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir()) if path.is_file()}


@pytest.fixture()
def earlier(tmp_path, onnx_examples_index) -> Path:
    """A copy of a built index, as an earlier release left it."""
    folder = tmp_path / "plugin" / "skills_index"
    shutil.copytree(onnx_examples_index, folder)
    return folder


def test_an_index_moved_to_another_file_system_arrives_whole_and_leaves_nothing_behind(earlier, tmp_path):
    before = snapshot(earlier)
    with small_disk(tmp_path / "home", "16M") as home:
        target = home / "semantic-skills" / "skills_index"

        assert move_index(earlier, target, ANY_ROOTS) == ""

        moved = snapshot(target)
        manifest, vectors = load_index(target)
        assert not earlier.exists() and len(vectors) == manifest.rows
        assert {**moved, ".lock": b""} == {**before, ".lock": b""}  # each folder keeps its own lock file
        assert [path.name for path in target.iterdir() if path.name.endswith(".tmp")] == []


def test_a_move_onto_a_full_disk_leaves_the_index_where_it_was(earlier, tmp_path):
    before = snapshot(earlier)
    with small_disk(tmp_path / "home", "2M") as home:
        fill_disk(home, leave=4096)
        target = home / "skills_index"

        with pytest.raises(OSError) as failed:
            move_index(earlier, target, ANY_ROOTS)

        assert failed.value.errno == errno.ENOSPC
        assert snapshot(earlier) == {**before, ".lock": b""}  # the lock it held is released and emptied
        assert not (target / "manifest.json").exists()
        assert [path.name for path in target.iterdir() if path.name != ".lock"] == []


def test_no_index_moves_while_a_build_writes_it_or_when_its_folders_are_refused(earlier, tmp_path):
    target = tmp_path / "home" / "skills_index"
    before = snapshot(earlier)

    with build_lock(earlier), pytest.raises(BuildLocked):
        move_index(earlier, target, ANY_ROOTS)
    refused = move_index(earlier, target, lambda roots: f"built from {roots}")

    assert refused.startswith("built from [") and refused.endswith("]")
    assert snapshot(earlier) == {**before, ".lock": b""} and not (target / "manifest.json").exists()
    (target / "manifest.json").write_text("{}")  # an index of its own appeared there
    assert move_index(earlier, target, ANY_ROOTS) == f"{target} holds an index already"
    assert (earlier / "manifest.json").read_bytes() == before["manifest.json"]
