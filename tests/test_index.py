"""Opening an index: a missing, corrupt or foreign index is refused with a one-line fix."""

from __future__ import annotations

import os
import shutil
import threading
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from semantic_skills.embedders.base import Embedder
from semantic_skills.errors import EmbedderMismatch, IndexCorrupt, IndexFromAnotherRelease, IndexMissing
from semantic_skills.index.lock import build_lock
from semantic_skills.index.manifest import MANIFEST
from semantic_skills.index.store import load_index
from semantic_skills.router import SkillRouter
from semantic_skills.settings import EmbedderSettings

from support import edit_manifest, vectors_path


@pytest.fixture()
def index_copy(examples_index, tmp_path) -> Path:
    """A writable copy of the session's examples index."""
    dest = tmp_path / "index"
    shutil.copytree(examples_index, dest)
    return dest


def rewrite_vectors(index_dir: Path, change) -> None:
    import faiss

    path = vectors_path(index_dir)
    _, vectors = load_index(index_dir)
    vectors = np.ascontiguousarray(change(vectors), dtype=np.float32)
    flat = faiss.IndexFlatIP(vectors.shape[1])
    flat.add(vectors)
    faiss.write_index(flat, str(path))


def test_a_missing_index_raises_index_missing_with_the_build_command(tmp_path):
    with pytest.raises(IndexMissing, match="semantic-skills build --index-dir"):
        SkillRouter.open(tmp_path / "nowhere")


def test_the_embedder_that_built_the_index_opens_it(examples_index, bundled_embedder):
    router = SkillRouter.open(examples_index, embedder=bundled_embedder)
    assert router.route("convert this scanned PDF into markdown").skill.name == "pdf-to-markdown"


@pytest.mark.parametrize("version, built_by, fix", [
    (0, "an older", "rebuild it with: semantic-skills build --full --index-dir {index}"),
    (2, "a newer", "update semantic-skills to the release that built it, or rebuild it with: semantic-skills build "
                   "--full --index-dir {index}"),
])
def test_an_index_of_another_release_is_refused_saying_which_and_how_to_rebuild(index_copy, bundled_embedder,
                                                                                version, built_by, fix):
    edit_manifest(index_copy, lambda m: m.update(format_version=version))

    with pytest.raises(IndexFromAnotherRelease) as raised:
        SkillRouter.open(index_copy, embedder=bundled_embedder)

    assert str(raised.value) == (f"the index in {index_copy} was built by {built_by} release of semantic-skills "
                                 f"(index format {version}; this release reads format 1); "
                                 + fix.format(index=index_copy))


def test_a_manifest_written_before_environments_were_recorded_still_opens(index_copy, bundled_embedder):
    edit_manifest(index_copy, lambda m: [record.pop("environments") for record in m["skills"]])
    router = SkillRouter.open(index_copy, embedder=bundled_embedder, inactive_environments=frozenset({"kanban"}))
    assert {r.environments for r in router.manifest.skills} == {()}
    assert router.route("convert this scanned PDF into markdown").skill.name == "pdf-to-markdown"


def test_a_manifest_name_a_reader_would_misread_makes_the_index_corrupt(index_copy, bundled_embedder):
    edit_manifest(index_copy, lambda m: m["skills"][0].update(name="pdf-to-markdown\u202e"))
    with pytest.raises(IndexCorrupt, match=r'the name "pdf-to-markdown\\u202e" holds U\+202E RIGHT-TO-LEFT OVERRIDE'):
        SkillRouter.open(index_copy, embedder=bundled_embedder)


class OtherEmbedder(Embedder):
    def __init__(self, identity):
        self.identity = identity


@pytest.mark.parametrize(
    "embedder",
    [
        EmbedderSettings(document_prefix="passage: "),
        EmbedderSettings(query_prefix="query: "),
        EmbedderSettings(model="/models/another-minilm"),
        EmbedderSettings(backend="litellm", model="openai/text-embedding-3-small"),
        "identity with another dimension",
    ],
    ids=["document prefix", "query prefix", "model", "backend", "dimension"],
)
def test_querying_with_another_embedder_is_refused_with_a_fix(examples_index, bundled_embedder, embedder):
    if embedder == "identity with another dimension":
        embedder = OtherEmbedder(replace(bundled_embedder.identity, dimension=768))
    with pytest.raises(EmbedderMismatch) as raised:
        SkillRouter.open(examples_index, embedder=embedder)
    message = str(raised.value)
    assert "\n" not in message
    assert "rebuild with: semantic-skills build --full" in message
    assert "configure the embedder that built it" in message


CORRUPTIONS = {
    "manifest is not JSON": lambda d: (d / MANIFEST).write_text("{ not json"),
    "manifest is empty": lambda d: (d / MANIFEST).write_bytes(b""),
    "manifest of another format": lambda d: edit_manifest(d, lambda m: m.update(format="something-else")),
    "manifest from a future version": lambda d: edit_manifest(d, lambda m: m.update(format_version=99)),
    "manifest without skills": lambda d: edit_manifest(d, lambda m: m.pop("skills")),
    "skill rows out of step": lambda d: edit_manifest(d, lambda m: m["skills"][3].update(rows=[7, 1])),
    "manifest rows disagree with skills": lambda d: edit_manifest(d, lambda m: m["vectors"].update(rows=11)),
    "vectors file missing": lambda d: vectors_path(d).unlink(),
    "vectors file truncated": lambda d: vectors_path(d).write_bytes(vectors_path(d).read_bytes()[:200]),
    "vectors file empty": lambda d: vectors_path(d).write_bytes(b""),
    "fewer vector rows than the manifest": lambda d: rewrite_vectors(d, lambda v: v[:9]),
    "vectors of another dimension": lambda d: rewrite_vectors(d, lambda v: v[:, :100]),
    "NaN vectors": lambda d: rewrite_vectors(d, lambda v: np.where(np.arange(v.shape[1]) == 0, np.nan, v)),
}


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_a_corrupt_index_raises_index_corrupt_with_a_rebuild_hint(index_copy, bundled_embedder, corruption):
    CORRUPTIONS[corruption](index_copy)
    with pytest.raises(IndexCorrupt) as raised:
        SkillRouter.open(index_copy, embedder=bundled_embedder)
    message = str(raised.value)
    assert "\n" not in message
    assert f"semantic-skills build --full --index-dir {index_copy}" in message


def test_an_index_file_that_is_a_fifo_or_longer_than_its_rows_is_refused_unread(index_copy):
    """#33: the manifest and the vectors were read whole whatever they were; a FIFO as the manifest hung the reader
    (the routing worker, doctor), a sparse vectors file of any size filled the memory. Each is now refused
    unread, naming it, with the rebuild."""
    vectors = vectors_path(index_copy)
    with open(vectors, "r+b") as fh:  # 64 MB more than the manifest's rows need, as a sparse file costs nothing
        fh.truncate(vectors.stat().st_size + (64 << 20))
    with pytest.raises(IndexCorrupt, match=r"^cannot read the index vectors .*\(the file is 64.* MB, over the limit "
                                           r"of .*\); rebuild it with: semantic-skills build --full"):
        load_index(index_copy)

    manifest = index_copy / MANIFEST
    manifest.unlink()
    os.mkfifo(manifest)
    outcome = []
    reader = threading.Thread(target=lambda: outcome.append(_load_refusal(index_copy)), daemon=True)
    reader.start()
    reader.join(10)
    if not outcome:
        os.close(os.open(manifest, os.O_WRONLY | os.O_NONBLOCK))  # let the stuck reader go
    assert outcome, "the reader waited on the FIFO"
    assert str(outcome[0]) == (f"cannot read {manifest}: a FIFO (named pipe), not a regular file; rebuild it with: "
                               f"semantic-skills build --full --index-dir {index_copy}")


def _load_refusal(index_dir: Path) -> Exception | None:
    try:
        load_index(index_dir)
    except IndexCorrupt as exc:
        return exc
    return None


def test_the_build_lock_never_writes_through_a_link(tmp_path):
    """The lock was opened through any link and truncated to hold the build's pid: a ``.lock`` linked to another
    file emptied that file (as root, any file)."""
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    index_dir = tmp_path / "index"
    index_dir.mkdir()
    (index_dir / ".lock").symlink_to(victim)

    with pytest.raises(IndexCorrupt, match=rf"^the build lock {index_dir / '.lock'} is a symbolic link, not a regular "
                                           "file; remove it, then run this build again$"):
        with build_lock(index_dir):
            pass
    assert victim.read_bytes() == b"precious"
