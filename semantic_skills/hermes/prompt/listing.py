"""Where Hermes' skills listing lies in a system prompt: the exact bytes Hermes' builder rendered, and nothing else.

Hermes joins the parts of its system prompt with a blank line, the listing
being one whole part, so the listing is found only where those exact bytes
stand as whole paragraphs (a text's start or a blank line before them, a
text's end or a blank line after them), and only when they stand there
exactly once in the whole prompt. Markers are never looked for: a context
file, a memory entry or a skill description can hold any tag or heading and
is still never taken for the listing. :class:`Unsure` says why nothing is
replaced.
"""

from __future__ import annotations

from dataclasses import dataclass

PARAGRAPH = "\n\n"


class Unsure(ValueError):
    """Hermes' listing is not found exactly once where Hermes puts it."""


@dataclass(frozen=True)
class Span:
    """The listing's place: the ``part``-th system text, from ``start`` to ``end``."""

    part: int
    start: int
    end: int


def listing_span(texts: list[str], listing: str) -> Span:
    """Where ``listing`` stands as whole paragraphs in ``texts`` (the system prompt's strings, in order); raises
    :class:`Unsure` unless it stands there exactly once."""
    if not listing:
        raise Unsure("Hermes' builder rendered an empty listing")
    found = [Span(part, start, start + len(listing)) for part, text in enumerate(texts)
             for start in _paragraph_starts(text, listing)]
    if not found:
        raise Unsure("the skills listing Hermes' builder renders for this session's tools is not in its system "
                     "prompt (a session begun before its skills changed, or a prompt Hermes built another way)")
    if len(found) > 1:
        raise Unsure(f"the skills listing Hermes' builder renders for this session's tools stands {len(found)} times "
                     "in its system prompt (a context file or memory entry holds a copy of it)")
    return found[0]


def _paragraph_starts(text: str, listing: str) -> list[int]:
    starts, at = [], text.find(listing)
    while at != -1:
        end = at + len(listing)
        if (at == 0 or text.endswith(PARAGRAPH, 0, at)) and (end == len(text) or text.startswith(PARAGRAPH, end)):
            starts.append(at)
        at = text.find(listing, at + 1)
    return starts
