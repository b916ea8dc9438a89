"""How the skills on disk differ from an index: matched by path, compared by content hash."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from ..skills.discovery import discover_skills
from ..skills.names import NameConflict
from ..skills.parsing import NAMING, Skill
from .manifest import Manifest, SkillRecord


def parsed_records(manifest: Manifest | None) -> dict[tuple[str, str], Skill]:
    """The index's records as body-less skills keyed by ``(path, content hash)``, for discovery to reuse; none
    when the index named its skills otherwise (another :data:`~semantic_skills.skills.parsing.NAMING`)."""
    if manifest is None or manifest.naming != NAMING:
        return {}
    return {(r.path, r.content_hash): r.to_skill() for r in manifest.skills}


@dataclass(frozen=True)
class IndexDiff:
    """The skills found on disk (in discovery order) against an index's records (by path)."""

    skills: list[Skill]
    records: dict[str, SkillRecord]
    conflicts: tuple[NameConflict, ...] = ()  # skills on disk left out for their names

    @classmethod
    def of(cls, skills: list[Skill], records: Iterable[SkillRecord],
           conflicts: Iterable[NameConflict] = ()) -> "IndexDiff":
        return cls(skills, {r.path: r for r in records}, tuple(conflicts))

    def added(self) -> list[Skill]:
        """On disk, not in the index."""
        return [s for s in self.skills if s.path not in self.records]

    def changed(self) -> list[tuple[SkillRecord, Skill]]:
        """In both, with other content on disk."""
        return [(self.records[s.path], s) for s in self.skills
                if s.path in self.records and self.records[s.path].content_hash != s.content_hash]

    def unchanged(self) -> list[tuple[SkillRecord, Skill]]:
        """In both, with the same content."""
        return [(self.records[s.path], s) for s in self.skills
                if s.path in self.records and self.records[s.path].content_hash == s.content_hash]

    def removed(self) -> list[SkillRecord]:
        """In the index, gone from disk (in index order)."""
        on_disk = {s.path for s in self.skills}
        return [r for r in self.records.values() if r.path not in on_disk]


def diff_with_disk(manifest: Manifest) -> IndexDiff:
    """The skills now under the index's own roots against its records."""
    found = discover_skills(manifest.skills_roots(), parsed_records(manifest), manifest.earlier_claims())
    return IndexDiff.of(found.skills, manifest.skills, found.conflicts)
