"""What text is embedded for a skill.

Each skill becomes one or more texts ("views"); the first is its main vector.
``RECIPE`` names this scheme and is stored in the index, so changing the
scheme forces a full rebuild.
"""

from __future__ import annotations

from .skills import Skill

RECIPE = "v1: name + description + folder + first 500 body characters"
BODY_HEAD_CHARS = 500


def skill_views(skill: Skill) -> list[str]:
    """The texts to embed for ``skill``, main view first."""
    name = skill.name.replace("-", " ").replace("_", " ")
    folder = skill.folder.replace("-", " ").replace("_", " ")
    parts = [name, skill.description]
    if folder.lower() != name.lower():
        parts.append(folder)
    parts.append(" ".join(skill.body[: BODY_HEAD_CHARS * 2].split())[:BODY_HEAD_CHARS])
    return ["\n".join(p for p in parts if p)]
