"""Which skill a name stands for: the one the agent's ``skill_view(name)`` loads, or none.

The agent finds, for a name, every skill whose ``name:`` or folder is that
name. The earliest tier of skills roots wins (project roots, then each other
root in turn, then the external roots); within that tier one skill wins alone,
byte-identical copies under one root go to the shallowest, and anything else
is ambiguous: the agent refuses to choose. A skill is routed under its name
only when that name loads it, so the name a block gives is the file the agent
opens. Names that read alike (the same :func:`glyphs.word_skeleton`: case,
look-alike letters, spaces, dashes and underscores aside) are not routed
either: neither a reader nor the model can tell which one is meant.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..glyphs import visible, word_skeleton
from .parsing import Skill


@dataclass(frozen=True)
class Placed:
    """A parsed skill, the tier of the root it was found under (0 first) and that root."""

    skill: Skill
    tier: int
    root: str

    @property
    def depth(self) -> int:
        return len(Path(self.skill.path).relative_to(self.root).parts)


@dataclass(frozen=True)
class Duplicate:
    """A skill name found twice; the ``kept`` file is the one the agent loads by it, ``dropped`` is ignored."""

    name: str
    kept: str
    dropped: str


@dataclass(frozen=True)
class NameConflict:
    """Skills ``left_out`` of routing because of their names; ``reason`` says why and how to fix it."""

    left_out: tuple[str, ...]
    reason: str


def resolve_names(placed: list[Placed]) -> tuple[list[Skill], list[Duplicate], list[NameConflict]]:
    """The skills routed under their names (in the order found), the duplicates left to a skill of an
    earlier tier, and the conflicts that leave skills out."""
    by_name: dict[str, list[Placed]] = {}
    by_folder: dict[str, list[Placed]] = {}
    for entry in placed:
        by_name.setdefault(entry.skill.name, []).append(entry)
        by_folder.setdefault(entry.skill.folder, []).append(entry)
    loaded, duplicates, conflicts = set(), [], []
    for name, named in by_name.items():
        answering = named + [e for e in by_folder.get(name, ()) if e.skill.name != name]
        winner = _loaded_by(answering)
        if winner is not None and winner.skill.name == name:
            loaded.add(winner.skill.path)
            duplicates += [Duplicate(name, winner.skill.path, e.skill.path) for e in named if e is not winner]
        else:
            conflicts.append(_unloadable(name, named, answering, winner))
    kept = [e.skill for e in placed if e.skill.path in loaded]
    look_alikes = _read_alike(kept)
    conflicts += look_alikes
    left_out = {path for conflict in look_alikes for path in conflict.left_out}
    return [s for s in kept if s.path not in left_out], duplicates, conflicts


def _loaded_by(answering: list[Placed]) -> Placed | None:
    """The skill the agent loads among those answering to one name; None when it refuses to choose."""
    first = min(e.tier for e in answering)
    contenders = [e for e in answering if e.tier == first]
    if len(contenders) == 1:
        return contenders[0]
    same_copy = len({e.root for e in contenders}) == 1 and len({e.skill.content_hash for e in contenders}) == 1
    depths = sorted(e.depth for e in contenders)
    if same_copy and depths[0] < depths[1]:
        return min(contenders, key=lambda e: e.depth)
    return None


def _unloadable(name: str, named: list[Placed], answering: list[Placed], winner: Placed | None) -> NameConflict:
    """Why no skill named ``name`` is routed: the agent loads another by it, or none."""
    left_out = tuple(e.skill.path for e in named)
    if winner is not None:
        return NameConflict(left_out, f'the agent\'s skill_view("{visible(name)}") loads {winner.skill.path}, '
                                      "whose folder has that name and which comes first: rename the folder or "
                                      "this skill")
    first = min(e.tier for e in answering)
    others = [e.skill.path for e in answering if e.tier == first and e.skill.name != name]
    also = f" (and {', '.join(others)}, by its folder's name)" if others else ""
    return NameConflict(left_out, f'{len(left_out) + len(others)} skills answer to the name "{visible(name)}" in '
                                  f"the same skills folders{also}, and the agent's skill_view refuses to choose "
                                  "between them: rename all but one")


def _read_alike(skills: list[Skill]) -> list[NameConflict]:
    """One conflict for each set of different names that read alike, leaving all their skills out."""
    by_look: dict[str, list[Skill]] = {}
    for skill in skills:
        by_look.setdefault(word_skeleton(skill.name), []).append(skill)
    return [NameConflict(tuple(s.path for s in group), f"names that read alike ({_quoted(group)}): neither a reader "
                         "nor the model can tell which is meant; rename all but one so they read differently")
            for group in by_look.values() if len(group) > 1]


def _quoted(skills: list[Skill]) -> str:
    return ", ".join(f'"{visible(skill.name)}"' for skill in skills)
