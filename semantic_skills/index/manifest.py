"""The manifest: what an index holds besides its vectors, and how it reads from ``manifest.json``."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..embedders.base import EmbedderIdentity
from ..errors import IndexCorrupt, IndexFromAnotherRelease, IndexMissing, command
from ..files import FileTooLarge, NotRegularFile, read_regular_file
from ..skills.discovery import EXTERNAL, PROJECT, SkillsRoot
from ..skills.look_alikes import Claim, earlier_claims, groups_from_json, groups_to_json, keeper
from ..skills.parsing import Conditions, Skill, offer_conditions, skill_name
from . import MANIFEST, MAX_MANIFEST_BYTES

FORMAT = "semantic-skills-index"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class SkillRecord:
    """A skill as stored in the manifest; ``rows`` are its vector rows ``[start, start+count)``;
    ``terms`` are its body's words for the lexical index (see recipe.body_terms)."""

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
    terms: str = ""
    conditions: Conditions = ()  # absent in older indexes

    @classmethod
    def from_skill(cls, skill: Skill, row_start: int, row_count: int, terms: str = "") -> "SkillRecord":
        return cls(
            skill.name, skill.folder, skill.path, skill.content_hash, skill.category, skill.description,
            skill.platforms, skill.environments, skill.tags, skill.external, row_start, row_count, terms,
            skill.conditions,
        )

    def to_skill(self) -> Skill:
        """The record as a body-less :class:`Skill` (for reuse by discovery)."""
        return Skill(
            name=self.name, description=self.description, category=self.category, path=self.path,
            folder=self.folder, content_hash=self.content_hash, platforms=self.platforms,
            environments=self.environments, tags=self.tags, external=self.external, conditions=self.conditions,
        )

    def as_dict(self) -> dict:
        return {
            "name": self.name, "folder": self.folder, "path": self.path, "hash": self.content_hash,
            "category": self.category, "description": self.description,
            "platforms": list(self.platforms), "environments": list(self.environments), "tags": list(self.tags),
            "external": self.external,
            "rows": [self.row_start, self.row_count],
            "terms": self.terms,
            **({"conditions": self.condition_map()} if self.conditions else {}),
        }

    def condition_map(self) -> dict[str, dict]:
        """The offer conditions per agent namespace, each as its front matter has them: key to list (or string)."""
        return {namespace: {key: value if isinstance(value, str) else list(value) for key, value in conditions}
                for namespace, conditions in self.conditions}

    @classmethod
    def from_dict(cls, data: dict) -> "SkillRecord":
        start, count = data["rows"]
        return cls(
            skill_name(str(data["name"])), str(data.get("folder", "")), str(data["path"]), str(data["hash"]),
            str(data.get("category", "")), str(data.get("description", "")),
            tuple(str(p) for p in data.get("platforms", ())), tuple(str(e) for e in data.get("environments", ())),
            tuple(str(t) for t in data.get("tags", ())),
            bool(data.get("external", False)), int(start), int(count), str(data.get("terms", "")),
            offer_conditions(data.get("conditions")),  # condition_map() read back as a SKILL.md's metadata
        )


@dataclass
class SecondVectors:
    """The index's second vector set (``embedder.multilingual``): a row for each of the first set's rows, in its
    order, embedded by ``embedder``, in ``vectors_file``."""

    embedder: EmbedderIdentity
    vectors_file: str = ""
    vectors_sha256: str = ""

    def as_dict(self) -> dict:
        return {"embedder": self.embedder.as_dict(), "file": self.vectors_file, "sha256": self.vectors_sha256}

    @classmethod
    def from_dict(cls, data: dict) -> "SecondVectors":
        return cls(EmbedderIdentity.from_dict(data["embedder"]), str(data["file"]), str(data.get("sha256") or ""))


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
    root_kinds: dict[str, str] = field(default_factory=dict)  # root -> EXTERNAL or PROJECT; absent roots are local
    naming: str = ""  # parsing.NAMING when built; older indexes named skills otherwise
    look_alikes: list[tuple[Claim, ...]] = field(default_factory=list)  # names that read alike, in claim order
    second: SecondVectors | None = None  # absent in an index built without embedder.multilingual

    def as_dict(self) -> dict:
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "built_at": self.built_at,
            "embedder": self.embedder.as_dict(),
            "document_text": self.recipe,
            "roots": self.roots,
            "root_kinds": self.root_kinds,
            "naming": self.naming,
            "vectors": {"file": self.vectors_file, "rows": self.rows, "sha256": self.vectors_sha256},
            "router": self.router,
            "skills": [s.as_dict() for s in self.skills],
            "look_alikes": groups_to_json(self.look_alikes),
            **({"second_vectors": self.second.as_dict()} if self.second else {}),
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
            root_kinds={str(k): str(v) for k, v in (data.get("root_kinds") or {}).items()},
            naming=str(data.get("naming") or ""),
            look_alikes=groups_from_json(data.get("look_alikes") or []),
            second=SecondVectors.from_dict(data["second_vectors"]) if data.get("second_vectors") else None,
        )

    def earlier_claims(self) -> dict[str, list[Claim]]:
        """The claims this index records to the way names read, by reading, earliest first (see
        ``skills.look_alikes``)."""
        return earlier_claims(self.look_alikes, (Claim(record.path, record.name) for record in self.skills))

    def keeper_of(self, claim: Claim) -> Claim | None:
        """The skill this index routes that keeps the way ``claim``'s name reads from it; None when none does (its
        name reads like no routed one's, or it claimed that reading first)."""
        return keeper(claim, self.earlier_claims(), {record.path for record in self.skills})

    def left_out_look_alikes(self) -> list[tuple[Claim, Claim]]:
        """Each skill this index left out because its name reads as a routed one's, with that routed skill."""
        routed = {record.path for record in self.skills}
        pairs = []
        for group in self.look_alikes:
            first = next((i for i, claim in enumerate(group) if claim.path in routed), None)
            pairs += [(claim, group[first]) for claim in group[first + 1:]] if first is not None else []
        return pairs

    def skills_roots(self) -> list[SkillsRoot]:
        """The roots this index was built from, each with its kind (older indexes: external if its skills are)."""
        kinds = self.root_kinds or {root: EXTERNAL for root in self.roots
                                    if any(r.external and Path(r.path).is_relative_to(root) for r in self.skills)}
        return [SkillsRoot(Path(root), external=kinds.get(root) == EXTERNAL, project=kinds.get(root) == PROJECT)
                for root in self.roots]

    def check_consistent(self) -> None:
        """Raise ``ValueError`` unless skill rows tile ``[0, rows)`` exactly."""
        expected = 0
        for record in self.skills:
            if record.row_start != expected or record.row_count < 1:
                raise ValueError(f"skill {record.name!r} has rows out of step with the vectors")
            expected += record.row_count
        if expected != self.rows:
            raise ValueError(f"manifest lists {expected} vector rows but records {self.rows}")


def fix_hint(index_dir: Path) -> str:
    """How to repair a broken index, for the end of an error message."""
    return f"rebuild it with: {command('build --full --index-dir ' + str(index_dir))}"


def read_manifest(index_dir: Path) -> Manifest:
    """Read and validate ``manifest.json``; raises IndexMissing or IndexCorrupt."""
    path = Path(index_dir) / MANIFEST
    try:
        raw = read_regular_file(path, MAX_MANIFEST_BYTES)
    except FileNotFoundError:
        raise IndexMissing(
            f"no skill index in {index_dir}; build one with: {command('build --index-dir ' + str(index_dir))}"
        ) from None
    except (NotRegularFile, FileTooLarge) as exc:
        raise IndexCorrupt(f"cannot read {path}: {exc}; {fix_hint(index_dir)}") from None
    except OSError as exc:
        raise IndexCorrupt(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(raw)
        _check_format_version(data, index_dir)
        manifest = Manifest.from_dict(data)
        manifest.check_consistent()
    except (ValueError, KeyError, TypeError) as exc:
        raise IndexCorrupt(f"the index manifest {path} is corrupt ({exc}); {fix_hint(index_dir)}") from None
    return manifest


def _check_format_version(data, index_dir: Path) -> None:
    """Raise :class:`IndexFromAnotherRelease` for a manifest of this format written in another version of it."""
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("format_version") == FORMAT_VERSION:
        return
    version = data.get("format_version")
    newer = isinstance(version, int) and version > FORMAT_VERSION
    update = f"update semantic-skills to the release that built it, or {fix_hint(index_dir)}" if newer else \
        fix_hint(index_dir)
    raise IndexFromAnotherRelease(index_dir, f"{'a newer' if newer else 'an older'} release of semantic-skills "
                                             f"(index format {version}; this release reads format {FORMAT_VERSION})",
                                  update)
