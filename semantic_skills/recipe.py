"""The recipe: what text is embedded for a skill.

Each skill becomes one or more texts ("views"); the first is its main vector
(name, description, folder name and the start of the body), the others are
single sentences of the description and body, so a message that matches one
specific thing the skill does can still find it. ``RECIPE`` names this scheme
and is stored in the index, so changing the scheme forces a full rebuild.
"""

from __future__ import annotations

import re

from .skills.parsing import Skill

RECIPE = ("v2: main (name + description + folder + first 500 body characters) "
          "+ up to 4 sentences of description and body prose")
BODY_HEAD_CHARS = 500
MAX_SENTENCE_VIEWS = 4
MIN_SENTENCE_CHARS = 12
MAX_SENTENCE_CHARS = 300

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")
_LIST_MARKER = re.compile(r"^(?:[-*+>]|\d+[.)])\s+")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_EMPHASIS = re.compile(r"[*`]+")


def skill_views(skill: Skill) -> list[str]:
    """The texts to embed for ``skill``, main view first."""
    return [main_text(skill)] + sentence_views(skill)


def main_text(skill: Skill) -> str:
    """Name, description, folder name (when it differs) and the first body characters."""
    name = _spaced(skill.name)
    folder = _spaced(skill.folder)
    parts = [name, skill.description]
    if folder.lower() != name.lower():
        parts.append(folder)
    parts.append(" ".join(skill.body[: BODY_HEAD_CHARS * 2].split())[:BODY_HEAD_CHARS])
    return "\n".join(p for p in parts if p)


def sentence_views(skill: Skill, limit: int = MAX_SENTENCE_VIEWS) -> list[str]:
    """The first ``limit`` distinct sentences of the description, then of the body's prose."""
    views: list[str] = []
    for line in [skill.description, *_prose_lines(skill.body)]:
        for sentence in _SENTENCE_END.split(line):
            sentence = " ".join(sentence.split())[:MAX_SENTENCE_CHARS]
            if len(sentence) >= MIN_SENTENCE_CHARS and sentence not in views:
                views.append(sentence)
                if len(views) == limit:
                    return views
    return views


def _prose_lines(body: str) -> list[str]:
    """Body lines as plain text: headings (titles, like the name), code blocks and table rules
    dropped, markdown marks removed."""
    lines, in_code = [], False
    for raw in body.split("\n"):
        line = raw.strip()
        if line.startswith("```"):
            in_code = not in_code
            continue
        if in_code or not line or line.startswith("#") or set(line) <= set("|-: "):
            continue
        line = _LIST_MARKER.sub("", line)
        lines.append(_EMPHASIS.sub("", _LINK.sub(r"\1", line)))
    return lines


def _spaced(identifier: str) -> str:
    return identifier.replace("-", " ").replace("_", " ")
