"""Which of several skills whose names read alike is routed: the one that was routed under that reading first.

Two names read alike when their :func:`~semantic_skills.glyphs.word_skeleton`
is the same (UTS #39 look-alikes, case, separators, NFKC). Of the skills
whose names read alike, one is routed and the others are left out, so a
name that reads like another can neither take that skill's place nor hide
it. Which one is routed is decided by the order of their claims, which the
index keeps from build to build (:func:`earlier_claims` reads it back):

- a skill the index routed under a reading keeps it: a later look-alike is
  left out, however it is edited, touched, moved or created again;
- a skill left out, or one that is gone, keeps its place in the order: the
  routed skill deleted and created again (or edited away from the reading and
  back) takes its reading back, as long as a look-alike held it meanwhile;
- skills new to the index come after the recorded ones, in a fixed order an
  agent writing a skill cannot win: a skill of an external skills folder
  (``skills.external_dirs``, where the agent creates no skill) first, then
  the earlier tier of skills folders, then the path.

A reading that no skill on disk holds is free again: nothing of it is kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Protocol

from ..glyphs import word_skeleton
from .parsing import Skill

MAX_GONE = 4  # claims kept of skills no longer on disk, per reading (the earliest)


class Placed(Protocol):
    """A skill and the tier of the skills folder it was found in (``names.Placed``)."""

    skill: Skill
    tier: int


@dataclass(frozen=True)
class Claim:
    """A skill's claim to the way its name reads: its file and its name when it claimed."""

    path: str
    name: str


def earlier_claims(groups: Iterable[Iterable[Claim]], routed: Iterable[Claim]) -> dict[str, list[Claim]]:
    """The claims an index records, by reading, earliest first: its ``groups`` of look-alikes in order, then each
    skill it ``routed`` that no group names (an index from before groups were kept names none)."""
    by_reading: dict[str, list[Claim]] = {}
    for claim in [claim for group in groups for claim in group] + list(routed):
        claims = by_reading.setdefault(word_skeleton(claim.name), [])
        if all(earlier.path != claim.path for earlier in claims):
            claims.append(claim)
    return by_reading


def groups_from_json(groups) -> list[tuple[Claim, ...]]:
    """The groups as an index stores them (lists of ``{"path", "name"}``); raises ValueError, KeyError or TypeError
    for damaged ones."""
    if not isinstance(groups, list):
        raise ValueError("look_alikes is not a list")
    return [tuple(Claim(str(claim["path"]), str(claim["name"])) for claim in group) for group in groups]


def groups_to_json(groups: Iterable[Iterable[Claim]]) -> list[list[dict]]:
    return [[{"path": claim.path, "name": claim.name} for claim in group] for group in groups]


def keeper(claim: Claim, earlier: dict[str, list[Claim]], routed: set[str]) -> Claim | None:
    """The routed skill (its path in ``routed``) whose earlier claim keeps ``claim``'s reading from it; None when
    ``claim`` comes first or no routed skill reads so. A skill of the very same name is no look-alike: which of
    two such skills is loaded follows the agent's tiers (see ``names``)."""
    for earlier_claim in earlier.get(word_skeleton(claim.name), ()):
        if earlier_claim.path == claim.path:
            return None
        if earlier_claim.path in routed:
            return None if earlier_claim.name == claim.name else earlier_claim
    return None


@dataclass
class Settled:
    """What reading alike decides: each skill left out with the one routed under its reading, and the groups the
    index records (in claim order: the claims of skills gone from disk, then the routed skill, then those left
    out)."""

    left_out: list[tuple[Placed, Placed]]
    groups: list[tuple[Claim, ...]]


def settle(kept: list[Placed], earlier: dict[str, list[Claim]]) -> Settled:
    """Of each set of ``kept`` skills whose names read alike, the one routed and those left out."""
    by_reading: dict[str, list[Placed]] = {}
    for entry in kept:
        by_reading.setdefault(word_skeleton(entry.skill.name), []).append(entry)
    settled = Settled([], [])
    for reading, present in by_reading.items():
        order, gone = _claim_order(present, earlier.get(reading, []))
        group = (*gone, *(Claim(entry.skill.path, entry.skill.name) for entry in order))
        if len(group) > 1:
            settled.groups.append(group)
        settled.left_out += [(entry, order[0]) for entry in order[1:]]
    return settled


def _claim_order(present: list[Placed], claims: list[Claim]) -> tuple[list[Placed], list[Claim]]:
    """The skills reading one way in claim order, and the earlier claims of skills no longer among them."""
    by_path = {entry.skill.path: entry for entry in present}
    known = [by_path[claim.path] for claim in claims if claim.path in by_path]
    new = sorted((entry for entry in present if entry not in known), key=_first_when_new)
    first_present = next((i for i, claim in enumerate(claims) if claim.path in by_path), len(claims))
    return known + new, claims[:min(first_present, MAX_GONE)]


def _first_when_new(entry: Placed) -> tuple[bool, int, str]:
    """Skills new to the order: external skills folders first (the agent creates no skill there), then the
    earlier tier, then the path."""
    return not entry.skill.external, entry.tier, entry.skill.path
