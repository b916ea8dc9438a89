"""The recipe: what is indexed for a skill.

Each skill becomes one or more texts to embed ("views"); the first is its main
vector (name, description, folder name and the start of the body), the others
are single sentences of the description and body, so a message that matches
one specific thing the skill does can still find it. ``body_terms`` are the
words of the whole body (its prose and section headings, code left out) for
the lexical index; they are stored in the manifest, since the body is not.
``RECIPE`` names this scheme and is stored in the index, so changing the
scheme forces a full rebuild.
"""

from __future__ import annotations

import re

from .lexical import tokenize
from .skills.parsing import Skill

RECIPE = ("v3: main (name + description + folder + first 500 body characters) + up to 4 sentences of description "
          "and body prose; body terms for the lexical index")
BODY_HEAD_CHARS = 500
MAX_SENTENCE_VIEWS = 4
MIN_SENTENCE_CHARS = 12
MAX_SENTENCE_CHARS = 300
MAX_BODY_TERMS = 400

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


def body_terms(skill: Skill, limit: int = MAX_BODY_TERMS) -> str:
    """The first ``limit`` distinct lexical terms of the body's prose and headings, space-separated."""
    terms = dict.fromkeys(tokenize(" ".join(_prose_lines(skill.body, headings=True))))
    return " ".join(list(terms)[:limit])


def _prose_lines(body: str, headings: bool = False) -> list[str]:
    """Body lines as plain text: code blocks and table rules dropped, markdown marks removed;
    headings (titles, like the name) dropped unless ``headings``."""
    lines, in_code = [], False
    for raw in body.split("\n"):
        line = raw.strip()
        if line.startswith("```"):
            in_code = not in_code
            continue
        if line.startswith("#") and headings:
            line = line.lstrip("#").strip()
        if in_code or not line or line.startswith("#") or set(line) <= set("|-: "):
            continue
        line = _LIST_MARKER.sub("", line)
        lines.append(_EMPHASIS.sub("", _LINK.sub(r"\1", line)))
    return lines


def _spaced(identifier: str) -> str:
    return identifier.replace("-", " ").replace("_", " ")
