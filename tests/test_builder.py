"""Incremental and atomic index builds, with the real bundled model."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from semantic_skills import recipe
from semantic_skills.builder import build_index
from semantic_skills.embedders.base import Embedder
from semantic_skills.errors import BuildLocked
from semantic_skills.index.lock import build_lock
from semantic_skills.index.manifest import MANIFEST, read_manifest
from semantic_skills.index.store import load_index
from semantic_skills.router import SkillRouter
from semantic_skills.skills.discovery import SkillsRoot
from semantic_skills.skills.parsing import NAMING

from support import REPO, edit_manifest, write_skill

PDF_QUERY = "convert this scanned PDF into markdown"


class RecordingEmbedder(Embedder):
    """The real bundled model, recording every text it embeds; ``identity_changes`` make it
    present itself as another embedder (a prefix or model change)."""

    def __init__(self, real: Embedder, **identity_changes):
        self.real = real
        self.identity = replace(real.identity, **identity_changes)
        self.embedded: list[str] = []

    def embed_documents(self, texts, progress=None):
        self.embedded.extend(texts)
        return self.real.embed_documents([self.identity.document_prefix + t for t in texts], progress)

    def embed_query(self, text):
        return self.real.embed_query(self.identity.query_prefix + text)


def views_of(skills_dir: Path, *names: str) -> list[str]:
    """The texts a build embeds for the skills under ``skills_dir`` (only ``names`` when given), in order."""
    from semantic_skills.skills.discovery import discover_skills

    skills = discover_skills([SkillsRoot(skills_dir)]).skills
    return [text for s in skills if not names or s.name in names for text in recipe.skill_views(s)]


class UnusableEmbedder(Embedder):
    """Claims an identity but fails the moment anything loads or embeds with it."""

    def __init__(self, identity):
        self.identity = identity

    def load(self):
        raise AssertionError("this build must not load a model")

    def embed_documents(self, texts, progress=None):
        raise AssertionError("this build must not embed anything")

    def embed_query(self, text):
        raise AssertionError("this build must not embed anything")


def build(skills_dir: Path, index_dir: Path, embedder: Embedder, full: bool = False):
    return build_index([SkillsRoot(skills_dir)], index_dir, embedder, full=full)


def vectors_by_name(index_dir: Path) -> dict[str, np.ndarray]:
    manifest, vectors = load_index(index_dir)
    return {r.name: vectors[r.row_start : r.row_start + r.row_count] for r in manifest.skills}


def index_files(index_dir: Path) -> list[str]:
    return sorted(p.name for p in index_dir.iterdir())


class RepeatedCallsEmbedder(Embedder):
    """The real bundled model for setting up: a call to ``embed_documents`` with the same texts, in the same order,
    as an earlier one gets that call's vectors back (a copy) instead of computing them again. The builds that the
    tests themselves check use the model directly."""

    def __init__(self, real: Embedder):
        self.real = real
        self.identity = real.identity
        self.batch_size = real.batch_size
        self._answers: dict[tuple[str, ...], np.ndarray] = {}

    def load(self):
        self.real.load()

    def embed_documents(self, texts, progress=None):
        key = tuple(texts)
        if key not in self._answers:
            self._answers[key] = self.real.embed_documents(list(texts))
        if progress:
            progress(len(texts))
        return self._answers[key].copy()

    def embed_query(self, text):
        return self.real.embed_query(text)


@pytest.fixture(scope="module")
def setup_embedder(bundled_embedder) -> RepeatedCallsEmbedder:
    return RepeatedCallsEmbedder(bundled_embedder)


@pytest.fixture()
def built(examples_copy, tmp_path, setup_embedder):
    """examples/skills copied and indexed: ``(skills_dir, index_dir)``; the example vectors are computed once per
    module, so each test pays only for the builds it checks."""
    index_dir = tmp_path / "index"
    report = build(examples_copy, index_dir, setup_embedder)
    assert report.wrote
    return examples_copy, index_dir


# --------------------------------------------------------------------------- incremental builds


def test_first_build_adds_every_skill(examples_copy, tmp_path, bundled_embedder):
    recorder = RecordingEmbedder(bundled_embedder)
    report = build(examples_copy, tmp_path / "index", recorder)
    assert report.counts() == {"added": 10, "updated": 0, "removed": 0, "unchanged": 0, "skipped": 0}
    assert report.wrote and recorder.embedded == views_of(examples_copy)
    manifest = read_manifest(tmp_path / "index")
    assert len(manifest.skills) == 10 and manifest.rows == len(recorder.embedded)
    assert manifest.embedder.dimension == 384


def test_noop_rebuild_reports_nothing_writes_nothing_and_loads_no_model(built, bundled_embedder):
    skills_dir, index_dir = built
    manifest_path = index_dir / MANIFEST
    before = (manifest_path.read_bytes(), manifest_path.stat().st_mtime_ns, index_files(index_dir))

    report = build(skills_dir, index_dir, UnusableEmbedder(bundled_embedder.identity))

    assert report.counts() == {"added": 0, "updated": 0, "removed": 0, "unchanged": 10, "skipped": 0}
    assert not report.wrote
    assert (manifest_path.read_bytes(), manifest_path.stat().st_mtime_ns, index_files(index_dir)) == before


def test_noop_rebuild_from_the_command_line_never_imports_torch(built):
    skills_dir, index_dir = built
    script = (
        "import json, sys\n"
        "from semantic_skills.cli import main\n"
        "try:\n"
        f"    main(['build', '--skills-dir', {str(skills_dir)!r}, '--index-dir', {str(index_dir)!r}, '--json'])\n"
        "except SystemExit as exc:\n"
        "    assert not exc.code, exc.code\n"
        "heavy = [m for m in ('torch', 'sentence_transformers', 'litellm') if m in sys.modules]\n"
        "print(json.dumps({'heavy_modules': heavy}))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    build_line, modules_line = result.stdout.strip().splitlines()[-2:]
    assert json.loads(build_line)["unchanged"] == 10
    assert json.loads(build_line)["wrote"] is False
    assert json.loads(modules_line) == {"heavy_modules": []}


def test_editing_one_skill_re_embeds_exactly_that_skill(built, bundled_embedder):
    skills_dir, index_dir = built
    path = skills_dir / "git" / "commit-messages" / "SKILL.md"
    path.write_text(path.read_text() + "\nAlso mention the ticket number.\n")
    recorder = RecordingEmbedder(bundled_embedder)

    report = build(skills_dir, index_dir, recorder)

    assert report.counts() == {"added": 0, "updated": 1, "removed": 0, "unchanged": 9, "skipped": 0}
    assert report.updated == ["commit-messages"]
    assert recorder.embedded == views_of(skills_dir, "commit-messages")
    record = {r.name: r for r in read_manifest(index_dir).skills}["commit-messages"]
    assert record.content_hash == hashlib.sha256(path.read_bytes()).hexdigest()


def test_body_terms_are_recorded_and_kept_for_skills_that_are_not_re_embedded(built, bundled_embedder):
    skills_dir, index_dir = built
    before = {r.name: r.terms for r in read_manifest(index_dir).skills}
    assert all(before.values())
    path = skills_dir / "git" / "commit-messages" / "SKILL.md"
    path.write_text(path.read_text() + "\n## Tickets\n\nMention the zebrafish ticket number.\n")

    build(skills_dir, index_dir, RecordingEmbedder(bundled_embedder))

    after = {r.name: r.terms for r in read_manifest(index_dir).skills}
    assert "zebrafish" in after["commit-messages"].split() and "tickets" in after["commit-messages"].split()
    assert {n: t for n, t in after.items() if n != "commit-messages"} == {
        n: t for n, t in before.items() if n != "commit-messages"}


class ShrunkEmbedder(RecordingEmbedder):
    """The same model name from a server that now returns 8-d vectors (its dimension known only once it embeds)."""

    def __init__(self, real: Embedder):
        super().__init__(real, dimension=0)

    def embed_documents(self, texts, progress=None):
        vectors = super().embed_documents(texts, progress)[:, :8]
        self.identity = replace(self.identity, dimension=8)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_a_dimension_change_re_embeds_every_skill_and_keeps_their_body_terms(built, bundled_embedder):
    skills_dir, index_dir = built
    before = {r.name: r.terms for r in read_manifest(index_dir).skills}
    path = skills_dir / "git" / "commit-messages" / "SKILL.md"
    path.write_text(path.read_text() + "\n## Tickets\n\nMention the zebrafish ticket number.\n")

    report = build(skills_dir, index_dir, ShrunkEmbedder(bundled_embedder))

    manifest = read_manifest(index_dir)
    assert manifest.embedder.dimension == 8 and report.unchanged == 0
    after = {r.name: r.terms for r in manifest.skills}
    assert "zebrafish" in after["commit-messages"].split()
    assert {n: t for n, t in after.items() if n != "commit-messages"} == {
        n: t for n, t in before.items() if n != "commit-messages"}


def test_removing_one_skill_removes_it_without_embedding(built, bundled_embedder):
    skills_dir, index_dir = built
    shutil.rmtree(skills_dir / "media" / "image-resize")
    recorder = RecordingEmbedder(bundled_embedder)

    report = build(skills_dir, index_dir, recorder)

    assert report.counts() == {"added": 0, "updated": 0, "removed": 1, "unchanged": 9, "skipped": 0}
    assert report.removed == ["image-resize"] and recorder.embedded == []
    assert "image-resize" not in {r.name for r in read_manifest(index_dir).skills}


def test_adding_one_skill_embeds_only_the_new_one(built, bundled_embedder):
    skills_dir, index_dir = built
    write_skill(skills_dir, "cooking/sourdough",
                "---\nname: sourdough\ndescription: Bake sourdough bread\n---\nFeed the starter.\n")
    recorder = RecordingEmbedder(bundled_embedder)

    report = build(skills_dir, index_dir, recorder)

    assert report.counts() == {"added": 1, "updated": 0, "removed": 0, "unchanged": 10, "skipped": 0}
    assert report.added == ["sourdough"] and recorder.embedded == views_of(skills_dir, "sourdough")
    router = SkillRouter.open(index_dir, embedder=bundled_embedder)
    assert router.route("how do I bake sourdough bread").skill.name == "sourdough"


def test_a_skill_for_inactive_environments_only_is_recorded_and_never_offered(built, bundled_embedder):
    skills_dir, index_dir = built
    write_skill(skills_dir, "planning/kanban-triage", "---\nname: kanban-triage\ndescription: Triage the new cards "
                "on the kanban board, then label, prioritise and assign each one\nenvironments: [kanban]\n---\n")
    build(skills_dir, index_dir, bundled_embedder)
    assert {r.name: r.environments for r in read_manifest(index_dir).skills}["kanban-triage"] == ("kanban",)
    query = "triage the new cards on our kanban board"

    def offered(**options) -> tuple[str | None, list[str]]:
        router = SkillRouter.open(index_dir, embedder=bundled_embedder, **options)
        decision = router.route(query)
        return decision.skill and decision.skill.name, [c.name for c in router.search(query, k=20)]

    for options in ({}, {"inactive_environments": frozenset({"s6"})}):  # by default nothing is inactive
        injected, listed = offered(**options)
        assert injected == listed[0] == "kanban-triage"
    injected, listed = offered(inactive_environments=frozenset({"kanban", "s6"}))
    assert injected != "kanban-triage" and "kanban-triage" not in listed and len(listed) == 10


def test_full_rebuild_re_embeds_everything(built, bundled_embedder):
    skills_dir, index_dir = built
    recorder = RecordingEmbedder(bundled_embedder)
    report = build(skills_dir, index_dir, recorder, full=True)
    assert report.counts() == {"added": 0, "updated": 10, "removed": 0, "unchanged": 0, "skipped": 0}
    assert recorder.embedded == views_of(skills_dir) and report.wrote


@pytest.mark.parametrize(
    "change",
    [{"document_prefix": "passage: "}, {"query_prefix": "query: "}, {"model": "some/other-model"}],
    ids=["document prefix", "query prefix", "model"],
)
def test_another_embedder_identity_forces_a_full_rebuild(built, bundled_embedder, change):
    skills_dir, index_dir = built
    recorder = RecordingEmbedder(bundled_embedder, **change)

    report = build(skills_dir, index_dir, recorder)

    assert report.counts()["updated"] == 10 and recorder.embedded == views_of(skills_dir)
    assert read_manifest(index_dir).embedder == recorder.identity


def test_an_index_of_the_previous_recipe_routes_until_the_next_build_redoes_it_with_body_terms(built, bundled_embedder):
    skills_dir, index_dir = built
    data = json.loads((index_dir / MANIFEST).read_text())
    data["document_text"] = "v2: main + up to 4 sentences"
    for record in data["skills"]:
        del record["terms"]
    (index_dir / MANIFEST).write_text(json.dumps(data))
    decision = SkillRouter.open(index_dir, embedder=bundled_embedder).route("convert this scanned PDF into markdown")
    assert decision.candidates[0].name == "pdf-to-markdown"

    report = build(skills_dir, index_dir, RecordingEmbedder(bundled_embedder))

    assert report.counts()["updated"] == 10 and all(r.terms for r in read_manifest(index_dir).skills)


def test_a_new_document_recipe_forces_a_full_rebuild(built, bundled_embedder, monkeypatch):
    skills_dir, index_dir = built
    monkeypatch.setattr(recipe, "RECIPE", recipe.RECIPE + " (changed)")
    recorder = RecordingEmbedder(bundled_embedder)
    assert build(skills_dir, index_dir, recorder).counts()["updated"] == 10
    assert recorder.embedded == views_of(skills_dir)
    assert read_manifest(index_dir).recipe.endswith("(changed)")


def test_reused_vectors_equal_freshly_computed_ones(built, bundled_embedder, tmp_path):
    skills_dir, index_dir = built
    shutil.rmtree(skills_dir / "data" / "csv-cleanup")
    write_skill(skills_dir, "aaa/first-in-order", "---\nname: first-in-order\ndescription: Sorts first\n---\n")
    edited = skills_dir / "writing" / "release-notes" / "SKILL.md"
    edited.write_text(edited.read_text().replace("release", "launch"))
    build(skills_dir, index_dir, bundled_embedder)

    fresh_dir = tmp_path / "fresh"
    build(skills_dir, fresh_dir, bundled_embedder, full=True)

    incremental, fresh = vectors_by_name(index_dir), vectors_by_name(fresh_dir)
    assert incremental.keys() == fresh.keys()
    for name in fresh:
        np.testing.assert_allclose(incremental[name], fresh[name], atol=1e-5, err_msg=name)


def test_new_roots_are_recorded_even_when_no_skill_changed(built, bundled_embedder, tmp_path):
    skills_dir, index_dir = built
    (tmp_path / "more").mkdir()
    roots = [SkillsRoot(skills_dir), SkillsRoot(tmp_path / "more")]

    report = build_index(roots, index_dir, UnusableEmbedder(bundled_embedder.identity))

    assert report.counts()["unchanged"] == 10 and report.wrote
    assert read_manifest(index_dir).roots == [str(skills_dir), str(tmp_path / "more")]


def test_an_index_that_named_skills_otherwise_has_them_read_again(built, bundled_embedder):
    skills_dir, index_dir = built

    def as_an_older_release_named_it(manifest):
        manifest.pop("naming")
        next(r for r in manifest["skills"] if r["name"] == "pdf-to-markdown")["name"] = "pdf to markdown"

    edit_manifest(index_dir, as_an_older_release_named_it)
    report = build(skills_dir, index_dir, UnusableEmbedder(bundled_embedder.identity))  # no vector is redone

    assert report.wrote and report.counts()["unchanged"] == 10
    manifest = read_manifest(index_dir)
    assert "pdf-to-markdown" in {r.name for r in manifest.skills} and manifest.naming == NAMING
    assert not build(skills_dir, index_dir, UnusableEmbedder(bundled_embedder.identity)).wrote


def test_categories_follow_the_roots_of_the_latest_build(built, bundled_embedder):
    skills_dir, index_dir = built
    assert {r.name: r.category for r in read_manifest(index_dir).skills}["kubernetes-rollout"] == "devops"

    report = build(skills_dir / "devops", index_dir, UnusableEmbedder(bundled_embedder.identity))

    assert report.counts() == {"added": 0, "updated": 0, "removed": 8, "unchanged": 2, "skipped": 0}
    assert {r.name: r.category for r in read_manifest(index_dir).skills} == {
        "docker-compose-debug": "", "kubernetes-rollout": ""}


def test_an_unreadable_previous_index_is_rebuilt_in_full(built, bundled_embedder):
    skills_dir, index_dir = built
    (index_dir / MANIFEST).write_text("{ this is not json")
    report = build(skills_dir, index_dir, bundled_embedder)
    assert report.wrote and report.counts()["added"] == 10
    assert any("previous index unreadable" in w for _, w in report.warnings)
    assert len(read_manifest(index_dir).skills) == 10


def test_an_index_an_older_release_built_is_rebuilt_in_full_saying_why(built, bundled_embedder):
    skills_dir, index_dir = built
    edit_manifest(index_dir, lambda m: m.update(format_version=0))

    report = build(skills_dir, index_dir, bundled_embedder)

    assert report.wrote and report.counts()["added"] == 10
    assert (str(index_dir), "the previous index was built by an older release of semantic-skills (index format 0; "
                            "this release reads format 1): rebuilding it in full") in report.warnings


def test_a_second_build_while_one_runs_is_refused(built, bundled_embedder):
    skills_dir, index_dir = built
    with build_lock(index_dir):
        with pytest.raises(BuildLocked, match=f"pid {os.getpid()}"):
            build(skills_dir, index_dir, UnusableEmbedder(bundled_embedder.identity))


def test_roots_without_a_skill_empty_the_index_without_loading_a_model_and_it_routes_nothing(built, bundled_embedder):
    skills_dir, index_dir = built
    for skill in list(skills_dir.rglob("SKILL.md")):
        skill.unlink()

    report = build(skills_dir, index_dir, UnusableEmbedder(bundled_embedder.identity))

    assert report.wrote and report.skills == 0 and len(report.removed) == 10
    manifest, vectors = load_index(index_dir)
    assert manifest.skills == [] and vectors.shape == (0, 384)
    assert manifest.embedder == bundled_embedder.identity and manifest.roots == [str(skills_dir)]
    router = SkillRouter.open(index_dir, embedder=bundled_embedder)
    router.warm()
    assert router.search(PDF_QUERY) == []
    decision = router.route(PDF_QUERY)
    assert (decision.skill, decision.reason) == (None, "the index holds no skills")
    assert not build(skills_dir, index_dir, UnusableEmbedder(bundled_embedder.identity)).wrote


def test_a_first_build_over_roots_without_a_skill_records_the_embedder_without_loading_it(tmp_path, bundled_embedder):
    (tmp_path / "empty").mkdir()
    report = build(tmp_path / "empty", tmp_path / "index", UnusableEmbedder(bundled_embedder.identity))

    assert report.wrote and report.skills == 0
    manifest, vectors = load_index(tmp_path / "index")
    assert manifest.embedder == bundled_embedder.identity and vectors.shape == (0, 384)
    assert SkillRouter.open(tmp_path / "index", embedder=bundled_embedder).route(PDF_QUERY).skill is None


# --------------------------------------------------------------------------- atomicity


def generate_skills(root: Path, count: int) -> None:
    topics = ["databases", "networking", "typography", "gardening", "astronomy", "accounting", "music", "robotics"]
    for i in range(count):
        topic = topics[i % len(topics)]
        body = " ".join(f"Step {j}: check the {topic} detail number {i * 31 + j} carefully." for j in range(40))
        write_skill(root, f"generated/{topic}/skill-{i:04d}",
                    f"---\nname: generated-{i:04d}\ndescription: Skill {i} about {topic}\n---\n{body}\n")


def read_until(fd: int, pattern: re.Pattern, proc: subprocess.Popen, timeout: float) -> str:
    """Read the pty ``fd`` until ``pattern`` matches; fail on exit or timeout."""
    seen = ""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                seen += os.read(fd, 4096).decode(errors="replace")
            except OSError:
                break
            if pattern.search(seen):
                return seen
        elif proc.poll() is not None:
            break
    raise AssertionError(f"the build never reached {pattern.pattern!r}; output so far: {seen[-500:]!r}")


def test_a_build_killed_while_embedding_leaves_the_previous_index_usable(built, bundled_embedder):
    skills_dir, index_dir = built
    manifest_before = (index_dir / MANIFEST).read_bytes()
    generate_skills(skills_dir, 400)

    controller, terminal = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "semantic_skills", "build", "--skills-dir", str(skills_dir),
         "--index-dir", str(index_dir)],
        cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=terminal,
    )
    os.close(terminal)
    try:
        read_until(controller, re.compile(r"Embedding.* ([1-9]\d{0,2})/\d{4}"), proc, timeout=300)  # of 2,000
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(controller)

    assert (index_dir / MANIFEST).read_bytes() == manifest_before
    router = SkillRouter.open(index_dir, embedder=bundled_embedder)
    assert router.route(PDF_QUERY).skill.name == "pdf-to-markdown"

    shutil.rmtree(skills_dir / "generated")
    write_skill(skills_dir, "cooking/sourdough", "---\nname: sourdough\ndescription: Bake bread\n---\n")
    assert build(skills_dir, index_dir, bundled_embedder).counts()["added"] == 1
    assert not [n for n in index_files(index_dir) if n.endswith(".tmp")]


@pytest.mark.parametrize("next_build_changes_something", [True, False], ids=["writing build", "no-op build"])
def test_the_next_build_removes_temp_files_a_crashed_write_left(built, bundled_embedder, next_build_changes_something):
    skills_dir, index_dir = built
    leftovers = [index_dir / ".vectors-20250101T000000-deadbeef.faiss.tmp",
                 index_dir / ".manifest.json.20250101T000000-deadbeef.tmp"]
    for leftover in leftovers:
        leftover.write_bytes(b"half-written")
    if next_build_changes_something:
        shutil.rmtree(skills_dir / "media" / "image-resize")

    build(skills_dir, index_dir, bundled_embedder)

    assert [p.name for p in leftovers if p.exists()] == []
    SkillRouter.open(index_dir, embedder=bundled_embedder).route(PDF_QUERY)


class DiskFullFile:
    """A writable file that stores a few bytes and then fails with ENOSPC."""

    def __init__(self, fh):
        self._fh = fh

    def write(self, data):
        self._fh.write(data[:8])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __getattr__(self, name):
        return getattr(self._fh, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._fh.close()


def fill_disk_while_writing(monkeypatch, which: str) -> None:
    """Make the index's vectors or manifest write fail as on a full disk (tests/reliability fills a real one)."""
    from semantic_skills import files as files_module

    def open_on_full_disk(path, mode="r", *args, **kwargs):
        fh = open(path, mode, *args, **kwargs)
        name = Path(path).name
        full = name.startswith(".vectors-" if which == "vectors" else f".{MANIFEST}.")
        return DiskFullFile(fh) if full and "w" in mode else fh

    monkeypatch.setattr(files_module, "open", open_on_full_disk, raising=False)


@pytest.mark.parametrize("which", ["vectors", "manifest"])
def test_a_disk_full_error_while_writing_leaves_the_previous_index_intact(built, bundled_embedder, monkeypatch, which):
    skills_dir, index_dir = built
    before = ((index_dir / MANIFEST).read_bytes(), index_files(index_dir))
    shutil.rmtree(skills_dir / "media" / "image-resize")
    fill_disk_while_writing(monkeypatch, which)

    with pytest.raises(OSError) as raised:
        build(skills_dir, index_dir, bundled_embedder)

    assert raised.value.errno == errno.ENOSPC
    assert ((index_dir / MANIFEST).read_bytes(), index_files(index_dir)) == before
    router = SkillRouter.open(index_dir, embedder=bundled_embedder)
    assert "image-resize" in {r.name for r in router.manifest.skills}
    assert router.route(PDF_QUERY).skill.name == "pdf-to-markdown"
