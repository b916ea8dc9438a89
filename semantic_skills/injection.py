"""The exact text that carries a skill into a user message, and how its host recognises it.

The output depends only on the skill's name, body, score (two decimals), the
seal and the caps: no timestamps or ids, so identical inputs give identical
bytes and the provider's prompt cache keeps hitting.

The block cannot be broken out of or forged from either side:

- a skill's name and body can neither close the block early nor open another
  one: the ``<`` of every ``skill-context`` tag in them, as a reader sees it
  (in any case or spacing, with invisible characters inside, in look-alike
  letters or brackets; see glyphs.py), is written as ``&lt;``;
- the opening tag carries the host's ``seal``, a secret the user does not
  know, and a block is taken as the host's own only when it carries it: a
  message that merely starts with ``<skill-context`` is the user's text.
"""

from __future__ import annotations

import functools
import html
import re

from .glyphs import tag_starts
from .limits import DEFAULT_MAX_SKILL_CHARS
from .skills.parsing import skill_name, strip_front_matter

OPEN_TAG = "<skill-context"
CLOSE_TAG = "</skill-context>"
NOTE = ("This skill was pre-loaded because it matches the user's message. "
        "If it does not fit, call search_skills to find a better one.")
TAG_NAMES = ("skill-context",)  # tags no skill text may open or close, however disguised
ESCAPED_ANGLE = "&lt;"


def skill_body(skill_markdown: str) -> str:
    """The body of a SKILL.md text: front matter removed, blank lines at either end dropped."""
    return strip_front_matter(skill_markdown).strip("\n")


def neutralise(text: str) -> str:
    """``text`` with the ``<`` of every opening or closing tag of ``TAG_NAMES`` written as ``&lt;``.

    A tag is found as a reader sees it (see :func:`glyphs.tag_starts`): in any
    case, spacing or dash, with invisible characters inside, in full-width or
    look-alike letters and brackets; a look-alike ``<`` is replaced too. Every
    other character stays as it is, so ``<div>`` and ``a < b`` are untouched.
    """
    pieces, kept = [], 0
    for start in tag_starts(text, TAG_NAMES):
        pieces += (text[kept:start], ESCAPED_ANGLE)
        kept = start + 1
    return "".join(pieces) + text[kept:] if pieces else text


def cap_body(name: str, body: str, max_chars: int, omitted: int = 0) -> str:
    """``body`` in at most ``max_chars`` characters: cut at a clean boundary, ending with how to read the rest.

    ``omitted`` counts characters of the body already cut off after ``body``
    (a worker's answer clips very long bodies); the note counts them too.
    """
    total = len(body) + omitted
    if total <= max_chars:
        return body

    def note(left: int) -> str:
        return f"\n\n[Skill truncated: {left} more characters. Load the full skill with skill_view(\"{name}\").]"

    kept = body[:_clean_cut(body, max(0, max_chars - len(note(total))))].rstrip()
    return kept + note(total - len(kept))  # fewer characters left than ``total``: the note is no longer


def _clean_cut(text: str, room: int) -> int:
    """Where to cut ``text`` to keep at most ``room`` characters: a line break, else a space, else ``room``."""
    if len(text) <= room:
        return len(text)
    for boundary in ("\n", " "):
        cut = text.rfind(boundary, 0, room + 1)
        if cut >= room // 2:
            return cut
    return room


def tag_name(name: str) -> str:
    """``name`` as an opening tag's ``name="..."`` holds it: the skill's one-line name, escaped, no tag inside."""
    return neutralise(html.escape(skill_name(name), quote=True))


def opening_tag(name: str, score: float, seal: str) -> str:
    return f'{OPEN_TAG} name="{tag_name(name)}" score="{score:.2f}" seal="{seal}">'


def skill_block(name: str, score: float, body: str, seal: str, max_chars: int = DEFAULT_MAX_SKILL_CHARS,
                omitted: int = 0, max_block_chars: int | None = None) -> str:
    """The delimited block for a skill's ``body`` (see :func:`skill_body`).

    The body, with its truncation note, takes at most ``max_chars``
    characters, and the whole block at most ``max_block_chars`` when given
    (a host that refuses longer text).
    """
    head = f"{opening_tag(name, score, seal)}\n{NOTE}\n\n"
    tail = f"\n{CLOSE_TAG}\n\n"
    if max_block_chars is not None:
        max_chars = min(max_chars, max_block_chars - len(head) - len(tail))
    return head + cap_body(neutralise(name), neutralise(body), max_chars, omitted) + tail


def inject(original: str, block: str) -> str:
    """The rewritten message: the skill block, then ``original`` unchanged."""
    return block + original


@functools.lru_cache(maxsize=16)
def _sealed_opening(seal: str) -> re.Pattern:
    return re.compile(re.escape(OPEN_TAG) + r' name="[^"<>\n]*" score="\d+\.\d\d" seal="' + re.escape(seal) + '">')


def is_injected(text: str, seal: str) -> bool:
    """True if ``text`` starts with a block carrying ``seal``."""
    return bool(seal) and _sealed_opening(seal).match(text) is not None


def carries_block(text: str, seal: str) -> bool:
    """True if a block carrying ``seal`` stands anywhere in ``text``."""
    return bool(seal) and _sealed_opening(seal).search(text) is not None
