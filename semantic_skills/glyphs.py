"""How a reader sees text: characters that show nothing, and characters that look like others.

Three uses: :func:`misreading` says why a name would not read as written and
:func:`one_line` keeps a description on one visible line; :func:`visible`
writes out what a terminal must not act on; and :func:`tag_starts` finds every
place a reader would see a tag begin, however it is disguised (see
``injection.neutralise``).

A reader is not fooled by code points: ``<\\u200b/skill-context>`` (a zero-width
space inside), ``＜/skill‐context＞`` (full-width brackets and U+2010) or
``</skіll-сontext>`` (Cyrillic і and с) all read as the closing tag. To match
what a reader sees, each character is folded to a *skeleton*: invisible
characters and marks give nothing, spaces, dashes and underscores give
nothing, compatibility forms are decomposed (NFKD), case is folded, and
letters, digits and brackets that look like Latin ones (from Cyrillic, Greek,
Armenian, Cherokee, Lisu, small capitals, ...) become those Latin ones, with
``i``, ``l``, ``1`` and ``|`` as one letter and ``0`` as ``o``.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import Iterable

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
    """The characters of these Unicode names, in order (the tables below name them: their glyphs look alike)."""
    return "".join(unicodedata.lookup(name) for name in names)


# Characters that read as the Latin letter, digit or bracket they are listed under (besides those NFKD
# already maps to it, such as full-width and mathematical letters).
_LOOKALIKES = {
    "a": _named("CYRILLIC SMALL LETTER A", "CYRILLIC CAPITAL LETTER A", "LATIN SMALL LETTER ALPHA",
        "GREEK SMALL LETTER ALPHA", "GREEK CAPITAL LETTER ALPHA", "APL FUNCTIONAL SYMBOL ALPHA",
        "LATIN LETTER SMALL CAPITAL A", "CHEROKEE LETTER GO", "LISU LETTER A"),
    "b": _named("CYRILLIC SMALL LETTER VE", "CYRILLIC CAPITAL LETTER VE", "CYRILLIC CAPITAL LETTER SOFT SIGN",
        "CYRILLIC SMALL LETTER SOFT SIGN", "GREEK CAPITAL LETTER BETA", "GREEK SMALL LETTER BETA",
        "LATIN LETTER SMALL CAPITAL B", "CHEROKEE LETTER YV", "LISU LETTER BA"),
    "c": _named("CYRILLIC SMALL LETTER ES", "CYRILLIC CAPITAL LETTER ES", "GREEK LUNATE SIGMA SYMBOL",
        "GREEK CAPITAL LUNATE SIGMA SYMBOL", "GREEK SMALL LETTER FINAL SIGMA", "LATIN LETTER SMALL CAPITAL C",
        "CHEROKEE LETTER TLI", "LISU LETTER CA", "COPTIC SMALL LETTER SIMA", "COPTIC CAPITAL LETTER SIMA"),
    "d": _named("CYRILLIC SMALL LETTER KOMI DE", "CYRILLIC CAPITAL LETTER KOMI DE", "CHEROKEE LETTER A",
        "CHEROKEE LETTER TSU", "LATIN LETTER SMALL CAPITAL D", "LISU LETTER PHA"),
    "e": _named("CYRILLIC SMALL LETTER IE", "CYRILLIC CAPITAL LETTER IE", "GREEK CAPITAL LETTER EPSILON",
        "GREEK SMALL LETTER EPSILON", "LATIN SMALL LETTER OPEN E", "CYRILLIC SMALL LETTER ABKHASIAN CHE",
        "CYRILLIC CAPITAL LETTER ABKHASIAN CHE", "ESTIMATED SYMBOL", "LATIN LETTER SMALL CAPITAL E",
        "CHEROKEE LETTER GV", "LISU LETTER E"),
    "f": _named("GREEK SMALL LETTER DIGAMMA", "GREEK LETTER DIGAMMA", "LISU LETTER TSA"),
    "g": _named("LATIN SMALL LETTER SCRIPT G", "ARMENIAN SMALL LETTER CO", "CYRILLIC SMALL LETTER KOMI SJE",
        "CYRILLIC CAPITAL LETTER KOMI SJE", "CHEROKEE LETTER NAH", "LISU LETTER GA"),
    "h": _named("CYRILLIC SMALL LETTER SHHA", "CYRILLIC CAPITAL LETTER SHHA", "CYRILLIC CAPITAL LETTER EN",
        "CYRILLIC SMALL LETTER EN", "GREEK CAPITAL LETTER ETA", "LATIN LETTER SMALL CAPITAL H", "CHEROKEE LETTER MI",
        "LISU LETTER XA"),
    "j": _named("CYRILLIC SMALL LETTER JE", "CYRILLIC CAPITAL LETTER JE", "GREEK LETTER YOT",
        "GREEK CAPITAL LETTER YOT", "CHEROKEE LETTER GU", "LISU LETTER JA"),
    "k": _named("CYRILLIC SMALL LETTER KA", "CYRILLIC CAPITAL LETTER KA", "GREEK SMALL LETTER KAPPA",
        "GREEK CAPITAL LETTER KAPPA", "LATIN SMALL LETTER KRA", "LATIN LETTER SMALL CAPITAL K", "CHEROKEE LETTER TSO",
        "LISU LETTER KA", "CYRILLIC SMALL LETTER KA WITH DESCENDER", "CYRILLIC CAPITAL LETTER KA WITH DESCENDER",
        "CYRILLIC SMALL LETTER KA WITH STROKE", "CYRILLIC CAPITAL LETTER KA WITH STROKE",
        "CYRILLIC SMALL LETTER KA WITH VERTICAL STROKE", "CYRILLIC CAPITAL LETTER KA WITH VERTICAL STROKE",
        "CYRILLIC SMALL LETTER KA WITH HOOK", "CYRILLIC CAPITAL LETTER KA WITH HOOK"),
    # i, l, 1 and | are one letter here: each stands for the others in a disguised word.
    "l": "iIl1|" + _named("CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I",
        "CYRILLIC CAPITAL LETTER BYELORUSSIAN-UKRAINIAN I", "GREEK SMALL LETTER IOTA", "GREEK CAPITAL LETTER IOTA",
        "LATIN SMALL LETTER DOTLESS I", "LATIN SMALL LETTER IOTA", "CYRILLIC SMALL LETTER PALOCHKA",
        "CYRILLIC LETTER PALOCHKA", "LATIN LETTER DENTAL CLICK", "LATIN SMALL LETTER L WITH STROKE",
        "LATIN CAPITAL LETTER L WITH STROKE", "LATIN CAPITAL LETTER IOTA", "LATIN LETTER SMALL CAPITAL I",
        "LATIN LETTER SMALL CAPITAL L", "CHEROKEE LETTER V", "CHEROKEE LETTER TLE", "LISU LETTER I", "LISU LETTER LA",
        "CYRILLIC SMALL LETTER IOTA", "HEBREW PUNCTUATION PASEQ", "DIVIDES"),
    "m": _named("CYRILLIC SMALL LETTER EM", "CYRILLIC CAPITAL LETTER EM", "GREEK CAPITAL LETTER MU",
        "LATIN LETTER SMALL CAPITAL M", "CHEROKEE LETTER LU", "LISU LETTER MA"),
    "n": _named("ARMENIAN SMALL LETTER VO", "CYRILLIC SMALL LETTER PE", "GREEK SMALL LETTER ETA",
        "GREEK CAPITAL LETTER NU", "LATIN LETTER SMALL CAPITAL N", "LISU LETTER NA"),
    "o": "0" + _named("CYRILLIC SMALL LETTER O", "CYRILLIC CAPITAL LETTER O", "GREEK SMALL LETTER OMICRON",
        "GREEK CAPITAL LETTER OMICRON", "GREEK SMALL LETTER SIGMA", "ARMENIAN SMALL LETTER OH",
        "ARMENIAN CAPITAL LETTER OH", "LATIN LETTER SMALL CAPITAL O", "MYANMAR DIGIT ZERO", "BENGALI DIGIT ZERO",
        "DEVANAGARI DIGIT ZERO", "THAI DIGIT ZERO", "LAO DIGIT ZERO", "COPTIC SMALL LETTER O",
        "COPTIC CAPITAL LETTER O", "LISU LETTER O"),
    "p": _named("CYRILLIC SMALL LETTER ER", "CYRILLIC CAPITAL LETTER ER", "GREEK SMALL LETTER RHO",
        "GREEK CAPITAL LETTER RHO", "APL FUNCTIONAL SYMBOL RHO", "LATIN LETTER SMALL CAPITAL P", "CHEROKEE LETTER TLV",
        "LISU LETTER PA"),
    "q": _named("CYRILLIC SMALL LETTER QA", "CYRILLIC CAPITAL LETTER QA", "ARMENIAN SMALL LETTER ZA"),
    "r": _named("CYRILLIC SMALL LETTER GHE", "LATIN LETTER SMALL CAPITAL R", "CHEROKEE LETTER E", "LISU LETTER ZHA"),
    "s": _named("CYRILLIC SMALL LETTER DZE", "CYRILLIC CAPITAL LETTER DZE", "LATIN LETTER SMALL CAPITAL S",
        "CHEROKEE LETTER DU", "LISU LETTER SA"),
    "t": _named("CYRILLIC SMALL LETTER TE", "CYRILLIC CAPITAL LETTER TE", "GREEK SMALL LETTER TAU",
        "GREEK CAPITAL LETTER TAU", "LATIN LETTER SMALL CAPITAL T", "CHEROKEE LETTER I", "LISU LETTER TA",
        "LATIN SMALL LETTER T WITH STROKE", "LATIN CAPITAL LETTER T WITH STROKE"),
    "u": _named("GREEK SMALL LETTER UPSILON", "ARMENIAN SMALL LETTER SEH", "LATIN LETTER SMALL CAPITAL U",
        "GREEK SMALL LETTER MU", "LISU LETTER U"),
    "v": _named("GREEK SMALL LETTER NU", "CYRILLIC SMALL LETTER IZHITSA", "CYRILLIC CAPITAL LETTER IZHITSA",
        "LATIN LETTER SMALL CAPITAL V", "CHEROKEE LETTER DO", "LISU LETTER HA"),
    "w": _named("CYRILLIC SMALL LETTER WE", "CYRILLIC CAPITAL LETTER WE", "CYRILLIC SMALL LETTER OMEGA",
        "LATIN LETTER SMALL CAPITAL W", "CHEROKEE LETTER LA", "LISU LETTER WA", "GREEK SMALL LETTER OMEGA"),
    "x": _named("CYRILLIC SMALL LETTER HA", "CYRILLIC CAPITAL LETTER HA", "GREEK SMALL LETTER CHI",
        "GREEK CAPITAL LETTER CHI", "MULTIPLICATION SIGN", "VECTOR OR CROSS PRODUCT", "LISU LETTER SHA"),
    "y": _named("CYRILLIC SMALL LETTER U", "CYRILLIC CAPITAL LETTER U", "GREEK SMALL LETTER GAMMA",
        "GREEK CAPITAL LETTER UPSILON", "CYRILLIC SMALL LETTER STRAIGHT U", "CYRILLIC CAPITAL LETTER STRAIGHT U",
        "LATIN LETTER SMALL CAPITAL Y", "CHEROKEE LETTER GI", "LISU LETTER YA"),
    "z": _named("GREEK CAPITAL LETTER ZETA", "LATIN LETTER SMALL CAPITAL Z", "CHEROKEE LETTER NO", "LISU LETTER DZA"),
    ANGLE: _named("FULLWIDTH LESS-THAN SIGN", "SMALL LESS-THAN SIGN", "NOT LESS-THAN",
        "SINGLE LEFT-POINTING ANGLE QUOTATION MARK", "LEFT ANGLE BRACKET", "LEFT-POINTING ANGLE BRACKET",
        "PRESENTATION FORM FOR VERTICAL LEFT ANGLE BRACKET", "MATHEMATICAL LEFT ANGLE BRACKET",
        "MODIFIER LETTER LEFT ARROWHEAD", "MODIFIER LETTER LOW LEFT ARROWHEAD", "CANADIAN SYLLABICS PA",
        "RUNIC LETTER KAUNA", "LEFT-POINTING CURVED ANGLE BRACKET", "HEAVY LEFT-POINTING ANGLE QUOTATION MARK ORNAMENT",
        "MEDIUM LEFT-POINTING ANGLE BRACKET ORNAMENT", "HEAVY LEFT-POINTING ANGLE BRACKET ORNAMENT",
        "LEFT ANGLE BRACKET WITH DOT", "LEFT ARC LESS-THAN BRACKET", "LEFT-POINTING DOUBLE ANGLE QUOTATION MARK",
        "PRECEDES", "NORMAL SUBGROUP OF"),
    SLASH: _named("DIVISION SLASH", "FRACTION SLASH", "BIG SOLIDUS",
        "BOX DRAWINGS LIGHT DIAGONAL UPPER RIGHT TO LOWER LEFT", "MATHEMATICAL RISING DIAGONAL",
        "VERTICAL KANA REPEAT MARK UPPER HALF", "CJK UNIFIED IDEOGRAPH-4E3F", "KANGXI RADICAL SLASH",
        "PHILIPPINE SINGLE PUNCTUATION", "COPTIC CAPITAL LETTER OLD COPTIC ESH"),
}
# Characters that read as a space, a dash or an underscore besides those of categories Zs, Zl, Zp, Pd and Pc.
_SEPARATORS = _named("MINUS SIGN", "HYPHEN BULLET", "MODIFIER LETTER MINUS SIGN", "HEAVY MINUS SIGN",
    "HORIZONTAL LINE EXTENSION", "BOX DRAWINGS LIGHT HORIZONTAL", "BOX DRAWINGS HEAVY HORIZONTAL",
    "BOX DRAWINGS LIGHT LEFT", "BOX DRAWINGS LIGHT RIGHT", "BOX DRAWINGS HEAVY LEFT", "BOX DRAWINGS HEAVY RIGHT",
    "KATAKANA-HIRAGANA PROLONGED SOUND MARK", "HALFWIDTH KATAKANA-HIRAGANA PROLONGED SOUND MARK",
    "CJK UNIFIED IDEOGRAPH-4E00", "KANGXI RADICAL ONE", "HANGUL LETTER EU", "HANGUL JUNGSEONG EU",
    "HALFWIDTH HANGUL LETTER EU", "BRAILLE PATTERN BLANK")
_READ_AS_NOTHING = frozenset({"Zs", "Zl", "Zp", "Pd", "Pc", "Mn", "Me", "Cn"})  # separators, marks, unassigned

_FOLD = {lookalike: latin for latin, lookalikes in _LOOKALIKES.items() for lookalike in lookalikes}
ANGLES = ANGLE + _LOOKALIKES[ANGLE]
_ANGLE_FINDER = re.compile(f"[{re.escape(ANGLES)}]")


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
    """What ``char`` reads as, folded (see the module docstring): ``""`` for an invisible or unassigned
    character (a later Unicode may make it invisible), a mark or a separator, else a few lowercase Latin
    letters, digits or signs."""
    if char in _FOLD:
        return _FOLD[char]
    category = unicodedata.category(char)
    if category in _READ_AS_NOTHING or char.isspace() or char in _SEPARATORS or is_invisible(char):
        return ""
    decomposed = unicodedata.normalize("NFKD", char)
    if decomposed != char:
        return "".join(skeleton(c) for c in decomposed)
    folded = char.casefold()
    return folded if folded == char else "".join(_FOLD.get(c, c) for c in folded)


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
    for angle in _ANGLE_FINDER.finditer(text):
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
