"""Which skill a name stands for: the one the agent's ``skill_view(name)`` loads, or none.

The agent finds, for a name, every skill whose ``name:`` or folder is that
name. The earliest tier of skills roots wins (project roots, then each other
root in turn, then the external roots); within that tier one skill wins alone,
byte-identical copies under one root go to the shallowest, and anything else
is ambiguous: the agent refuses to choose. A skill is routed under its name
only when that name loads it, so the name a block gives is the file the agent
opens. Of the names that read alike (the same :func:`glyphs.word_skeleton`:
case, look-alike letters, spaces, dashes and underscores aside) only the one
that was routed under that reading first is routed: see ``look_alikes``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..glyphs import visible
from .look_alikes import Claim, settle
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


@dataclass
class Resolved:
    """The skills routed under their names (in the order found), the duplicates left to a skill of an earlier tier,
    the conflicts that leave skills out, and the groups of names that read alike, in claim order (see
    ``look_alikes``)."""

    skills: list[Skill]
    duplicates: list[Duplicate]
    conflicts: list[NameConflict]
    look_alikes: list[tuple[Claim, ...]]


def resolve_names(placed: list[Placed], earlier: dict[str, list[Claim]] | None = None) -> Resolved:
    """Which skill each name routes to; ``earlier`` holds the claims an index recorded (``look_alikes``)."""
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
    settled = settle([e for e in placed if e.skill.path in loaded], earlier or {})
    conflicts += [_read_alike(entry, routed) for entry, routed in settled.left_out]
    left_out = {entry.skill.path for entry, _routed in settled.left_out}
    skills = [e.skill for e in placed if e.skill.path in loaded and e.skill.path not in left_out]
    return Resolved(skills, duplicates, conflicts, settled.groups)


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


def _read_alike(entry: Placed, routed: Placed) -> NameConflict:
    return NameConflict((entry.skill.path,), f'"{visible(entry.skill.name)}" reads as "{visible(routed.skill.name)}" '
                                             f"({routed.skill.path}), which keeps that name: rename this skill so "
                                             "that its name reads differently")
