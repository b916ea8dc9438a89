"""Where Hermes' skills listing lies in a system prompt, recognised by its exact structure, and nothing else.

Hermes writes the listing as one paragraph group between blank lines: a
``## Skills`` heading (``## Skills (mandatory)`` before 0.21) and its guidance,
an ``<available_skills>`` line, one indented line per category or skill, an
``</available_skills>`` line, then optionally the "Only proceed..." sentence
and parenthesised notes. Every part of that shape is checked; a text that
holds the tags in any other shape is not recognised (:class:`Unrecognised`
says why), so nothing but Hermes' own listing is ever replaced.
"""

from __future__ import annotations

HEADINGS = ("## Skills\n", "## Skills (mandatory)\n")
OPEN_LINE, CLOSE_LINE = "<available_skills>", "</available_skills>"
ROW_INDENT = "  "
TAIL = "\n\nOnly proceed without loading a skill if genuinely none are relevant to the task."
PARAGRAPH = "\n\n"


class Unrecognised(ValueError):
    """The text carries the listing's tags, but not in the shape Hermes writes."""


def listing_span(text: str) -> tuple[int, int] | None:
    """``(start, end)`` of the listing in ``text``: from its heading to its last note, without the blank lines
    around it; None when ``text`` has no listing. Raises :class:`Unrecognised` for tags in another shape."""
    if OPEN_LINE not in text:
        return None
    opening, closing = _only_line(text, OPEN_LINE), _only_line(text, CLOSE_LINE)
    if closing < opening:
        raise Unrecognised(f"{CLOSE_LINE} comes before {OPEN_LINE}")
    rows = text[opening + len(OPEN_LINE) + 1:closing - 1].split("\n")
    if any(not row.startswith(ROW_INDENT) for row in rows if row):
        raise Unrecognised(f"a line between {OPEN_LINE} and {CLOSE_LINE} is not a listing row")
    return _heading_before(text, opening), _end_after(text, closing + len(CLOSE_LINE))


def _only_line(text: str, line: str) -> int:
    """Where the one line of ``text`` that is exactly ``line`` starts."""
    found = [at for at in _find_all(text, line) if _whole_line(text, at, len(line))]
    if len(found) != 1:
        raise Unrecognised(f"{len(found)} lines are exactly {line}, not one")
    return found[0]


def _find_all(text: str, part: str) -> list[int]:
    found, at = [], text.find(part)
    while at != -1:
        found.append(at)
        at = text.find(part, at + 1)
    return found


def _whole_line(text: str, at: int, length: int) -> bool:
    end = at + length
    return (at == 0 or text[at - 1] == "\n") and (end == len(text) or text[end] == "\n")


def _heading_before(text: str, opening: int) -> int:
    """Where the listing's heading starts: the last ``## Skills`` heading before ``opening`` that opens a
    paragraph, with no other heading between them."""
    starts = [at for heading in HEADINGS for at in _find_all(text[:opening], heading)
              if at == 0 or text.endswith(PARAGRAPH, 0, at)]
    if not starts:
        raise Unrecognised("no '## Skills' heading opens the paragraph before <available_skills>")
    start = max(starts)
    if "\n#" in text[start:opening]:
        raise Unrecognised("another heading stands between '## Skills' and <available_skills>")
    return start


def _end_after(text: str, end: int) -> int:
    """Where the listing ends: after its "Only proceed..." sentence and notes, where a paragraph or the text
    ends."""
    if text.startswith(TAIL, end):
        end += len(TAIL)
    while text.startswith("\n(", end):
        line_end = text.find("\n", end + 1)
        line_end = len(text) if line_end == -1 else line_end
        if not text[end + 1:line_end].endswith(")"):
            break
        end = line_end
    if end != len(text) and not text.startswith(PARAGRAPH, end):
        raise Unrecognised("the listing does not end where a paragraph ends")
    return end
