"""How a reader sees text: characters that show nothing, and characters that look like others.

Three uses: :func:`misreading` says why a name would not read as written and
:func:`one_line` keeps a description on one visible line; :func:`visible`
writes out what a terminal must not act on; and :func:`tag_starts` finds every
place a reader would see a tag begin, however it is disguised (see
``injection.neutralise``), as :func:`word_skeleton` tells which names read alike.

A reader is not fooled by code points: ``<\\u200b/skill-context>`` (a zero-width
space inside), ``＜/skill‐context＞`` (full-width brackets and U+2010) or
``</skіll-сontext>`` (Cyrillic і and с) all read as the closing tag. To match
what a reader sees, each character is folded to a *skeleton*: invisible
characters and marks give nothing, spaces, dashes and underscores give
nothing, a compatibility form of plain text is that text (NFKD), a character
Unicode's confusables data (UTS #39, see ``confusables``) maps to a prototype
reads as that prototype (Coptic ``ⲣ`` as ``p``, ``m`` as ``rn``, ``0`` as
``O``), other compatibility forms are decomposed, case is folded (a lower-case
letter without a prototype of its own reads as its capital does, so Greek
``χ`` reads as ``X``), and ``i`` and ``l`` are one letter (the data already
maps ``1``, ``I`` and ``|`` to ``l``). Written here, because UTS #39 does not
list them as look-alikes of these: the angle brackets a reader takes for
``<`` and a few lines taken for a dash.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import Iterable

from . import confusables

# Default_Ignorable_Code_Point (Unicode's DerivedCoreProperties): shown as nothing when not supported.
_DEFAULT_IGNORABLE = ((0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
                      (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
                      (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
                      (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF))
_INVISIBLE_CATEGORIES = frozenset({"Cf", "Cs"})  # format characters (bidi controls, joiners...), lone surrogates
_MAYBE_IGNORABLE = frozenset({"Mn", "Lo", "Cn"})  # the categories of the other default ignorables

ANGLE = "<"
SLASH = "/"


def _named(*names: str) -> str:
    """The characters of these Unicode names, in order."""
    return "".join(unicodedata.lookup(name) for name in names)


# UTS #39 maps the left angle brackets (〈, ⟨, 〈...) to this one and keeps them apart from "<"; a reader of a
# tag does not, nor of these, which it lists as no one's look-alike.
_ANGLE_BRACKET = _named("MEDIUM LEFT-POINTING ANGLE BRACKET ORNAMENT")
_MORE_ANGLES = _named("MODIFIER LETTER LOW LEFT ARROWHEAD", "LEFT-POINTING CURVED ANGLE BRACKET",
                      "HEAVY LEFT-POINTING ANGLE BRACKET ORNAMENT", "LEFT ANGLE BRACKET WITH DOT",
                      "LEFT ARC LESS-THAN BRACKET", "LEFT-POINTING DOUBLE ANGLE QUOTATION MARK", "PRECEDES",
                      "NORMAL SUBGROUP OF")
# The characters whose decomposition (NFKD) begins with one of the angles above (tests/test_glyphs.py checks
# every code point).
_DECOMPOSING_ANGLES = _named("FULLWIDTH LESS-THAN SIGN", "SMALL LESS-THAN SIGN", "NOT LESS-THAN",
                             "LEFT-POINTING ANGLE BRACKET", "PRESENTATION FORM FOR VERTICAL LEFT ANGLE BRACKET",
                             "DOES NOT PRECEDE", "NOT NORMAL SUBGROUP OF", "HIRAGANA LETTER GU")
# Read as nothing: the prototypes UTS #39 gives dashes, spaces and low lines (the prolonged sound mark ー for
# the long ones: em dash, box drawings, CJK "one"), and lines it lists as no one's look-alike.
_SEPARATORS = "-_ " + _named("KATAKANA-HIRAGANA PROLONGED SOUND MARK", "HORIZONTAL LINE EXTENSION",
                             "BOX DRAWINGS LIGHT LEFT", "BOX DRAWINGS LIGHT RIGHT", "BOX DRAWINGS HEAVY LEFT",
                             "BOX DRAWINGS HEAVY RIGHT", "BRAILLE PATTERN BLANK")
_READ_AS_NOTHING = frozenset({"Zs", "Zl", "Zp", "Pd", "Pc", "Mn", "Me"})  # separators, marks
_ONE_LETTER = {"i": "l"}  # i and l stand for each other in a disguised word


@functools.cache
def angles() -> str:
    """Every character that reads as ``<`` (the angles :func:`tag_starts` reads from)."""
    prototypes = ANGLE + _ANGLE_BRACKET + _MORE_ANGLES
    look_alikes = "".join(confusables.look_alikes_of(angle) for angle in prototypes)
    return "".join(dict.fromkeys(prototypes + look_alikes + _DECOMPOSING_ANGLES))


@functools.cache
def _angle_set() -> frozenset[str]:
    return frozenset(angles())


@functools.cache
def _angle_finder() -> re.Pattern:
    return re.compile(f"[{re.escape(angles())}]")


@functools.lru_cache(maxsize=4096)
def is_invisible(char: str) -> bool:
    """True for a character a reader does not see: a format or non-space control character, a lone
    surrogate, or a default-ignorable code point (zero-width, joiners, bidi controls, variation selectors,
    Hangul fillers, tag characters...)."""
    category = unicodedata.category(char)
    if category in _INVISIBLE_CATEGORIES:
        return True
    if category == "Cc":
        return not char.isspace()
    code = ord(char)
    return category in _MAYBE_IGNORABLE and any(low <= code <= high for low, high in _DEFAULT_IGNORABLE)


def one_line(text: str) -> str:
    """``text`` as one line: invisible characters removed, every run of spaces and line breaks one space."""
    return " ".join("".join(c for c in text if not is_invisible(c)).split())


def misreading(name: str) -> str:
    """Why a reader would not read ``name`` as it is written, or ``""`` when they would: it is empty, holds a
    character they do not see (:func:`is_invisible`), or holds whitespace other than single spaces between
    visible characters (a line break, a tab, another space, a space at either end or two in a row)."""
    if not name:
        return "is empty"
    for char in name:
        if is_invisible(char):
            return f"holds {char_label(char)}, which a reader does not see"
        if char.isspace() and char != " ":
            return f"holds {char_label(char)} where only a single space may stand"
    if name.startswith(" ") or name.endswith(" "):
        return f"{'starts' if name.startswith(' ') else 'ends'} with a space, which a reader does not see"
    return "holds two spaces in a row, which a reader takes for one" if "  " in name else ""


_UNNAMED = {"Cc": "<control>", "Cs": "<surrogate>", "Co": "<private use>", "Cn": "<unassigned>"}


def char_label(char: str) -> str:
    """``char`` as a message names it: ``U+200B ZERO WIDTH SPACE`` (``U+0009 <control>`` where it has no name)."""
    name = unicodedata.name(char, "") or _UNNAMED.get(unicodedata.category(char), "<unnamed>")
    return f"U+{ord(char):04X} {name}"


_SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_CONTROL_OR_BREAK = frozenset({"Cc", "Zl", "Zp"})  # controls (ESC, CR, C1...), line and paragraph separators


def visible(text: str) -> str:
    """``text`` with each character a reader does not see or a terminal acts on (controls such as ESC and CR,
    line breaks, bidi overrides, zero-width characters) written out as its escape (``\\x1b``, ``\\r``,
    ``\\u202e``), so a terminal prints it as the one line it reads as and runs no sequence in it."""
    return "".join(_escape(c) if is_invisible(c) or unicodedata.category(c) in _CONTROL_OR_BREAK else c
                   for c in text)


def _escape(char: str) -> str:
    code = ord(char)
    if char in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[char]
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


@functools.lru_cache(maxsize=4096)
def skeleton(char: str) -> str:
    """What ``char`` reads as, folded (see the module docstring): ``""`` for an invisible character, a mark, a
    separator, or one unassigned in this Python that the confusables data does not know (a later Unicode may
    make it invisible), else a few lowercase letters, digits or signs."""
    if is_invisible(char) or char in _SEPARATORS or char.isspace() or unicodedata.category(char) in _READ_AS_NOTHING:
        return ""
    if char in _angle_set():
        return ANGLE
    decomposed = unicodedata.normalize("NFKD", char)
    if decomposed != char and decomposed.isascii():  # a compatibility form of plain text (full-width, ſ...)
        return word_skeleton(decomposed)
    folded = char.casefold()
    found = confusables.prototype(char) or _prototype_of_capital(char)
    if found is not None and found.casefold() != folded:  # a prototype in another case is the letter itself
        return word_skeleton(unicodedata.normalize("NFD", found))
    if decomposed != char:
        return word_skeleton(decomposed)
    if unicodedata.category(char) == "Cn":
        return ""
    return word_skeleton(folded) if folded != char else _ONE_LETTER.get(char, char)


def _prototype_of_capital(char: str) -> str | None:
    """The prototype of ``char``'s capital, for a lower-case letter read as its capital is."""
    capital = char.upper()
    if len(capital) != 1 or capital == char:
        return None
    found = confusables.prototype(capital)
    return None if found == char else found


def word_skeleton(text: str) -> str:
    """The skeleton of each character of ``text``, joined."""
    return "".join(skeleton(c) for c in text)


_NOTHING = "\x00"  # an aligned character that reads as nothing
_SEVERAL = "\x01"  # an aligned character that reads as several (a ligature, a Roman numeral): it ends a tag
MAX_REMEMBERED_CHARACTERS = 16_384  # about 3 MB at most


class _Aligned(dict):
    """``str.translate`` table to one character per character: its skeleton, ``_NOTHING`` or ``_SEVERAL``.

    Filled as characters are met (at most ``MAX_REMEMBERED_CHARACTERS`` kept),
    so a text of familiar characters is translated at C speed.
    """

    def __missing__(self, code: int) -> str:
        read = skeleton(chr(code))
        aligned = read if len(read) == 1 else _SEVERAL if read else _NOTHING
        if len(self) < MAX_REMEMBERED_CHARACTERS:
            self[code] = aligned
        return aligned


_ALIGNED = _Aligned()


WINDOW = 32  # characters read after an angle at first; more only while they could still make a tag


@functools.lru_cache(maxsize=8)
def _tag_patterns(names: tuple[str, ...]) -> tuple[re.Pattern, re.Pattern]:
    """In aligned text: the opening or closing tag ``<NAME`` or ``</NAME`` (anything read as nothing allowed
    between any two of its characters), and any start of one."""
    gap = f"{_NOTHING}*"
    words = [word_skeleton(name) for name in names]
    whole = "|".join(gap.join(map(re.escape, word)) for word in words)
    starts = "|".join(_optional_chain(word, gap) for word in words)
    angle = f"{re.escape(ANGLE)}{gap}(?:{re.escape(SLASH)}{gap})?"
    return re.compile(f"{angle}(?:{whole})"), re.compile(f"{angle}(?:{starts})")


def _optional_chain(letters: str, gap: str) -> str:
    """A pattern for any start of ``letters``, each followed by ``gap``."""
    pattern = ""
    for letter in reversed(letters):
        pattern = f"(?:{re.escape(letter)}{gap}{pattern})?"
    return pattern


def tag_starts(text: str, names: Iterable[str]) -> list[int]:
    """Where in ``text`` a reader sees an opening or closing tag named one of ``names`` begin.

    Each position holds the ``<`` or its look-alike. Anything read as nothing
    may stand anywhere in the tag's start, so ``< / Skill_Context`` is found as
    well as ``<\u200d/skill\u00adcontext``. The text is translated to its
    skeleton one character for one, so positions carry over: ASCII text all at
    once (Python translates it fastest), other text only after each angle, as
    far as it could still be a tag, unless that would cost more than a
    quarter of translating it all.
    """
    tag, tag_start = _tag_patterns(tuple(names))
    if not text.isascii():
        found = _tags_after_angles(text, tag, tag_start, budget=len(text) // 4)
        if found is not None:
            return found
    return _tags_anywhere(text, tag)


def _tags_anywhere(text: str, tag: re.Pattern) -> list[int]:
    return [match.start() for match in tag.finditer(text.translate(_ALIGNED))]


def _tags_after_angles(text: str, tag: re.Pattern, tag_start: re.Pattern, budget: int) -> list[int] | None:
    """The tags, read from each angle on; None once more than ``budget`` characters would be translated."""
    found = []
    for angle in _angle_finder().finditer(text):
        start, size = angle.start(), WINDOW
        while True:
            budget -= size
            if budget < 0:
                return None
            read = text[start:start + size].translate(_ALIGNED)
            if tag.match(read):
                found.append(start)
                break
            if start + size >= len(text) or not tag_start.fullmatch(read):
                break
            size *= 4
    return found
