"""The exact text that carries a skill into a user message.

The output depends only on the skill's name, body, score (two decimals) and the
user's text: no timestamps or ids, so identical inputs give identical bytes and
the provider's prompt cache keeps hitting.
"""

from __future__ import annotations

import html

from .limits import DEFAULT_MAX_SKILL_CHARS
from .skills.parsing import strip_front_matter

OPEN_TAG = "<skill-context"
CLOSE_TAG = "</skill-context>"


def skill_body(skill_markdown: str) -> str:
    """The body of a SKILL.md text: front matter removed, blank lines at either end dropped."""
    return strip_front_matter(skill_markdown).strip("\n")


def cap_body(name: str, body: str, max_chars: int, omitted: int = 0) -> str:
    """``body`` cut to at most ``max_chars`` at a line break, with a note on how to read the rest.

    ``omitted`` counts characters of the body already cut off after ``body``
    (a worker's answer clips very long bodies); the note counts them too.
    """
    total = len(body) + omitted
    if total <= max_chars:
        return body
    cut = body.rfind("\n", 0, max_chars)
    if cut < max_chars // 2:
        cut = max_chars
    return (
        body[:cut].rstrip()
        + f"\n\n[Skill truncated: {total - cut} more characters. Load the full skill with skill_view(\"{name}\").]"
    )


def skill_block(name: str, score: float, body: str, max_chars: int = DEFAULT_MAX_SKILL_CHARS,
                omitted: int = 0) -> str:
    """The delimited block for a skill's ``body`` (see :func:`skill_body`), capped at ``max_chars``."""
    return (
        f'{OPEN_TAG} name="{html.escape(name, quote=True)}" score="{score:.2f}">\n'
        "This skill was pre-loaded because it matches the user's message. "
        "If it does not fit, call search_skills to find a better one.\n\n"
        f"{cap_body(name, body, max_chars, omitted)}\n"
        f"{CLOSE_TAG}\n\n"
    )


def inject(original: str, block: str) -> str:
    """The rewritten message: the skill block, then ``original`` unchanged."""
    return block + original


def is_injected(text: str) -> bool:
    """True if ``text`` already starts with a skill block."""
    return text.startswith(OPEN_TAG + " name=")
