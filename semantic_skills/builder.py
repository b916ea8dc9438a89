"""Incremental, atomic index builds.

Only skills whose file hash changed are re-embedded; when nothing changed no
model is loaded and nothing is written. A change of embedder or of the
document recipe rebuilds in full. One build at a time per index folder.
"""

from __future__ import annotations

import fcntl
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np

from . import documents
from .embedders.base import Embedder, EmbedderIdentity
from .embedders.factory import configured_identity, create_embedder
from .errors import BuildLocked, IndexCorrupt, IndexMissing, NoSkillsFound
from .index import LOCK, Manifest, SkillRecord, load_index, remove_stale_files, write_index
from .settings import EmbedderSettings, SkillsRoot
from .skills import Duplicate, Skill, SkippedFile, discover_skills

ProgressFactory = Callable[[int], "Progress"]


class Progress:
    """Receives progress from a build; the CLI draws a bar with it."""

    def advance(self, count: int) -> None:  # pragma: no cover - trivial default
        pass

    def close(self) -> None:  # pragma: no cover - trivial default
        pass


@dataclass
class BuildReport:
    """What a build did."""

    index_dir: Path
    embedder: str = ""
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    skipped: list[SkippedFile] = field(default_factory=list)
    duplicates: list[Duplicate] = field(default_factory=list)
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


@contextmanager
def build_lock(index_dir: Path) -> Iterator[None]:
    """Hold the index folder's build lock, or raise :class:`BuildLocked` at once."""
    index_dir.mkdir(parents=True, exist_ok=True)
    path = index_dir / LOCK
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            raise BuildLocked(
                f"another build (pid {holder}) is updating {index_dir}; wait for it to finish, then run this build again"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _previous_index(index_dir: Path, report: BuildReport) -> tuple[Manifest | None, np.ndarray | None]:
    try:
        return load_index(index_dir)
    except IndexMissing:
        return None, None
    except IndexCorrupt as exc:
        report.warnings.append((str(index_dir), f"previous index unreadable, rebuilding in full: {exc}"))
        return None, None


def build_index(
    roots: Sequence[SkillsRoot],
    index_dir: Path,
    embedder_settings: EmbedderSettings,
    full: bool = False,
    progress: ProgressFactory | None = None,
    embedder: Embedder | None = None,
) -> BuildReport:
    """Bring the index in ``index_dir`` up to date with the skills under ``roots``."""
    started = time.perf_counter()
    index_dir = Path(index_dir)
    report = BuildReport(index_dir=index_dir, full=full)
    wanted = embedder.identity if embedder is not None else configured_identity(embedder_settings)
    report.embedder = wanted.describe()
    with build_lock(index_dir):
        old, old_vectors = _previous_index(index_dir, report)
        reusable = (
            old is not None
            and not full
            and old.recipe == documents.RECIPE
            and old.embedder.same_space(wanted)
        )
        root_paths = [str(r.path) for r in roots]
        same_roots = old is not None and old.roots == root_paths
        old_by_path = {r.path: r for r in old.skills} if old is not None else {}
        # Parsed skills are reused only under the same roots: a skill's category depends on its root.
        reuse = {(r.path, r.content_hash): r.to_skill() for r in old.skills} if reusable and same_roots else {}
        found = discover_skills(roots, reuse)
        report.skipped, report.duplicates = found.skipped, found.duplicates
        report.warnings.extend((s.path, w) for s in found.skills for w in s.warnings)
        if not found.skills:
            searched = ", ".join(str(r.path) for r in roots) or "(no folders)"
            raise NoSkillsFound(
                f"no SKILL.md files found under {searched}; pass --skills-dir DIR or add folders to "
                "skills.external_dirs in $HERMES_HOME/config.yaml"
            )

        kept_rows: dict[str, tuple[int, int]] = {}
        to_embed: list[Skill] = []
        for skill in found.skills:
            previous = old_by_path.get(skill.path)
            if reusable and previous is not None and previous.content_hash == skill.content_hash:
                kept_rows[skill.path] = (previous.row_start, previous.row_count)
                continue
            to_embed.append(skill)
            (report.updated if previous is not None else report.added).append(skill.name)
        new_paths = {s.path for s in found.skills}
        report.removed = [r.name for r in (old.skills if old else []) if r.path not in new_paths]
        report.unchanged = len(kept_rows)

        unchanged_order = old is not None and [r.path for r in old.skills] == [s.path for s in found.skills]
        if reusable and not to_embed and not report.removed and unchanged_order and same_roots:
            remove_stale_files(index_dir, keep={old.vectors_file})  # what a crashed build left
            report.seconds = time.perf_counter() - started
            return report

        identity = old.embedder if reusable else wanted
        vectors_by_path: dict[str, np.ndarray] = {}
        if to_embed:
            identity, vectors_by_path = _embed(to_embed, embedder_settings, embedder, progress)
        if kept_rows and identity.dimension != old_vectors.shape[1]:
            report.warnings.append(
                (str(index_dir), f"the embedder now returns {identity.dimension}-d vectors; re-embedding every skill")
            )
            # Reused skills carry no body (see discover_skills' reuse), so parse them again.
            kept = [s for s in discover_skills(roots).skills if s.path in kept_rows]
            identity, more = _embed(kept, embedder_settings, embedder, progress)
            vectors_by_path.update(more)
            report.updated.extend(s.name for s in kept)
            report.unchanged = 0
            kept_rows.clear()
        report.embedder = identity.describe()

        records: list[SkillRecord] = []
        blocks: list[np.ndarray] = []
        row = 0
        for skill in found.skills:
            if skill.path in kept_rows:
                start, count = kept_rows[skill.path]
                block = old_vectors[start : start + count]
            else:
                block = vectors_by_path[skill.path]
            records.append(SkillRecord.from_skill(skill, row, len(block)))
            blocks.append(block)
            row += len(block)
        manifest = Manifest(
            embedder=identity,
            recipe=documents.RECIPE,
            skills=records,
            vectors_file="",
            rows=row,
            built_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            roots=root_paths,
            router=old.router if reusable else {},
        )
        write_index(index_dir, manifest, np.vstack(blocks))
        report.wrote = True
    report.seconds = time.perf_counter() - started
    return report


def _embed(
    skills: list[Skill],
    settings: EmbedderSettings,
    embedder: Embedder | None,
    progress: ProgressFactory | None,
) -> tuple[EmbedderIdentity, dict[str, np.ndarray]]:
    """Embed every view of ``skills``: the embedder's identity and ``{path: (views, dim) array}``."""
    views = [documents.skill_views(s) for s in skills]
    texts = [t for v in views for t in v]
    embedder = embedder or create_embedder(settings)
    bar = progress(len(texts)) if progress else None
    try:
        vectors = embedder.embed_documents(texts, progress=bar.advance if bar else None)
    finally:
        if bar:
            bar.close()
    by_path = {}
    row = 0
    for skill, skill_views in zip(skills, views):
        by_path[skill.path] = vectors[row : row + len(skill_views)]
        row += len(skill_views)
    return embedder.identity, by_path
