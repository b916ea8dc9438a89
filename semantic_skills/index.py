"""The on-disk index: a FAISS ``IndexFlatIP`` of unit vectors plus a JSON manifest.

Layout of an index folder::

    manifest.json          the commit point; names the vectors file below and its SHA-256
    vectors-<id>.faiss     one row per embedded view, in manifest order
    .lock                  held by a running build

A build writes a new ``vectors-<id>.faiss`` and then atomically replaces
``manifest.json``; readers therefore see either the old index or the new one,
never a mix, and a crashed build leaves the old index in place.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .embedders.base import EmbedderIdentity
from .errors import IndexCorrupt, IndexMissing, first_line
from .files import Stamp, atomic_write, file_stamp, replacing
from .skills import Skill

FORMAT = "semantic-skills-index"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
LOCK = ".lock"


@dataclass(frozen=True)
class SkillRecord:
    """A skill as stored in the manifest; ``rows`` are its vector rows ``[start, start+count)``."""

    name: str
    folder: str
    path: str
    content_hash: str
    category: str
    description: str
    platforms: tuple[str, ...]
    environments: tuple[str, ...]
    tags: tuple[str, ...]
    external: bool
    row_start: int
    row_count: int

    @classmethod
    def from_skill(cls, skill: Skill, row_start: int, row_count: int) -> "SkillRecord":
        return cls(
            skill.name, skill.folder, skill.path, skill.content_hash, skill.category, skill.description,
            skill.platforms, skill.environments, skill.tags, skill.external, row_start, row_count,
        )

    def to_skill(self) -> Skill:
        """The record as a body-less :class:`Skill` (for reuse by discovery)."""
        return Skill(
            name=self.name, description=self.description, category=self.category, path=self.path,
            folder=self.folder, content_hash=self.content_hash, platforms=self.platforms,
            environments=self.environments, tags=self.tags, external=self.external,
        )

    def as_dict(self) -> dict:
        return {
            "name": self.name, "folder": self.folder, "path": self.path, "hash": self.content_hash,
            "category": self.category, "description": self.description,
            "platforms": list(self.platforms), "environments": list(self.environments), "tags": list(self.tags),
            "external": self.external,
            "rows": [self.row_start, self.row_count],
        }

    @classmethod
    def from_dict(cls, data: dict) -> "SkillRecord":
        start, count = data["rows"]
        return cls(
            str(data["name"]), str(data.get("folder", "")), str(data["path"]), str(data["hash"]),
            str(data.get("category", "")), str(data.get("description", "")),
            tuple(str(p) for p in data.get("platforms", ())), tuple(str(e) for e in data.get("environments", ())),
            tuple(str(t) for t in data.get("tags", ())),
            bool(data.get("external", False)), int(start), int(count),
        )


@dataclass
class Manifest:
    """Everything about an index except the vectors themselves."""

    embedder: EmbedderIdentity
    recipe: str
    skills: list[SkillRecord]
    vectors_file: str
    rows: int
    built_at: str = ""
    roots: list[str] = field(default_factory=list)
    router: dict = field(default_factory=dict)
    vectors_sha256: str = ""  # empty in indexes built before checksums were recorded

    def as_dict(self) -> dict:
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "built_at": self.built_at,
            "embedder": self.embedder.as_dict(),
            "document_text": self.recipe,
            "roots": self.roots,
            "vectors": {"file": self.vectors_file, "rows": self.rows, "sha256": self.vectors_sha256},
            "router": self.router,
            "skills": [s.as_dict() for s in self.skills],
        }

    @classmethod
    def from_dict(cls, data: dict) -> "Manifest":
        if data.get("format") != FORMAT:
            raise ValueError("not a semantic-skills manifest")
        if data.get("format_version") != FORMAT_VERSION:
            raise ValueError(f"index format version {data.get('format_version')} is not {FORMAT_VERSION}")
        vectors = data["vectors"]
        return cls(
            embedder=EmbedderIdentity.from_dict(data["embedder"]),
            recipe=str(data["document_text"]),
            skills=[SkillRecord.from_dict(s) for s in data["skills"]],
            vectors_file=str(vectors["file"]),
            rows=int(vectors["rows"]),
            built_at=str(data.get("built_at", "")),
            roots=[str(r) for r in data.get("roots", [])],
            router=dict(data.get("router") or {}),
            vectors_sha256=str(vectors.get("sha256") or ""),
        )

    def check_consistent(self) -> None:
        """Raise ``ValueError`` unless skill rows tile ``[0, rows)`` exactly."""
        expected = 0
        for record in self.skills:
            if record.row_start != expected or record.row_count < 1:
                raise ValueError(f"skill {record.name!r} has rows out of step with the vectors")
            expected += record.row_count
        if expected != self.rows:
            raise ValueError(f"manifest lists {expected} vector rows but records {self.rows}")


def _fix_hint(index_dir: Path) -> str:
    return f"rebuild it with: semantic-skills build --full --index-dir {index_dir}"


def read_manifest(index_dir: Path) -> Manifest:
    """Read and validate ``manifest.json``; raises IndexMissing or IndexCorrupt."""
    path = Path(index_dir) / MANIFEST
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise IndexMissing(
            f"no skill index in {index_dir}; build one with: semantic-skills build --index-dir {index_dir}"
        ) from None
    except OSError as exc:
        raise IndexCorrupt(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        manifest = Manifest.from_dict(json.loads(raw))
        manifest.check_consistent()
    except (ValueError, KeyError, TypeError) as exc:
        raise IndexCorrupt(f"the index manifest {path} is corrupt ({exc}); {_fix_hint(index_dir)}") from None
    return manifest


def read_vectors(index_dir: Path, manifest: Manifest) -> np.ndarray:
    """Load the FAISS file named by ``manifest`` as a ``(rows, dim)`` float32 array."""
    import faiss

    path = Path(index_dir) / manifest.vectors_file
    if not path.is_file():
        raise IndexCorrupt(f"the index vectors file {path} is missing; {_fix_hint(index_dir)}")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise IndexCorrupt(
            f"cannot read the index vectors {path} ({exc.strerror or exc}); {_fix_hint(index_dir)}"
        ) from None
    if manifest.vectors_sha256 and hashlib.sha256(raw).hexdigest() != manifest.vectors_sha256:
        raise IndexCorrupt(
            f"the index vectors {path} do not match the checksum in the manifest; {_fix_hint(index_dir)}"
        )
    try:
        index = faiss.deserialize_index(np.frombuffer(raw, dtype=np.uint8))
        vectors = faiss.rev_swig_ptr(index.get_xb(), index.ntotal * index.d).reshape(index.ntotal, index.d)
        vectors = np.array(vectors, dtype=np.float32, copy=True)
    except Exception as exc:
        raise IndexCorrupt(f"cannot read the index vectors {path} ({first_line(exc)}); {_fix_hint(index_dir)}") from None
    if vectors.shape[0] != manifest.rows:
        raise IndexCorrupt(
            f"the index vectors hold {vectors.shape[0]} rows but the manifest expects {manifest.rows}; "
            f"{_fix_hint(index_dir)}"
        )
    if manifest.embedder.dimension and vectors.shape[1] != manifest.embedder.dimension:
        raise IndexCorrupt(
            f"the index vectors are {vectors.shape[1]}-d but the manifest says "
            f"{manifest.embedder.dimension}-d; {_fix_hint(index_dir)}"
        )
    if not np.isfinite(vectors).all():
        raise IndexCorrupt(f"the index vectors contain NaN or infinite values; {_fix_hint(index_dir)}")
    return vectors


def load_index(index_dir: Path, attempts: int = 3) -> tuple[Manifest, np.ndarray]:
    """Read a consistent (manifest, vectors) pair.

    Retries when a concurrent build swaps the index between the two reads.
    """
    for attempt in range(attempts):
        manifest = read_manifest(index_dir)
        try:
            return manifest, read_vectors(index_dir, manifest)
        except IndexCorrupt:
            if attempt == attempts - 1 or read_manifest(index_dir).vectors_file == manifest.vectors_file:
                raise
    raise AssertionError("unreachable")


def manifest_stamp(index_dir: Path) -> Stamp | None:
    """A cheap change marker for ``manifest.json``, or None when there is none."""
    return file_stamp(Path(index_dir) / MANIFEST)


def write_index(index_dir: Path, manifest: Manifest, vectors: np.ndarray) -> None:
    """Atomically publish ``vectors`` and ``manifest`` as the index in ``index_dir``.

    Any failure (disk full, kill) leaves the previously published index intact.
    """
    import faiss

    index_dir = Path(index_dir)
    index_dir.mkdir(parents=True, exist_ok=True)
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    generation = time.strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(4)
    manifest.vectors_file = f"vectors-{generation}.faiss"
    manifest.rows = int(vectors.shape[0])
    manifest.check_consistent()
    final_vectors = index_dir / manifest.vectors_file
    previous = read_manifest_file_name(index_dir)
    try:
        flat = faiss.IndexFlatIP(int(vectors.shape[1]))
        if len(vectors):
            flat.add(vectors)
        with replacing(final_vectors) as tmp:
            faiss.write_index(flat, str(tmp))
            with open(tmp, "rb") as fh:
                manifest.vectors_sha256 = hashlib.file_digest(fh, "sha256").hexdigest()
        atomic_write(index_dir / MANIFEST, json.dumps(manifest.as_dict(), ensure_ascii=False, indent=1).encode("utf-8"))
    except BaseException:
        if read_manifest_file_name(index_dir) != manifest.vectors_file:
            final_vectors.unlink(missing_ok=True)
        raise
    # The previous generation stays so a reader that read the old manifest an
    # instant ago can still open its vectors; anything older (or orphaned by a
    # killed build) goes.
    remove_stale_files(index_dir, keep={manifest.vectors_file, previous})


def read_manifest_file_name(index_dir: Path) -> str | None:
    """The vectors file the published manifest points at, if readable."""
    try:
        return json.loads((Path(index_dir) / MANIFEST).read_bytes())["vectors"]["file"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def remove_stale_files(index_dir: Path, keep: set[str]) -> None:
    """Delete leftover temp files and every vectors file not named in ``keep``."""
    for entry in Path(index_dir).iterdir():
        name = entry.name
        if name.startswith(".") and name.endswith(".tmp"):
            entry.unlink(missing_ok=True)
        elif name.startswith("vectors-") and name.endswith(".faiss") and name not in keep:
            entry.unlink(missing_ok=True)
