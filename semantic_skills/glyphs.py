"""How a reader sees text: characters that show nothing, and characters that look like others.

Two uses: :func:`one_line` keeps a name or description on one visible line,
and :func:`tag_starts` finds every place a reader would see a tag begin,
however it is disguised (see ``injection.neutralise``).

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
# Characters that read as the Latin letter, digit or bracket they are listed under (besides those NFKD
# already maps to it, such as full-width and mathematical letters). Written as escapes: they look alike.
_LOOKALIKES = {
    "a": "\u0430\u0410\u0251\u03b1\u0391\u237a\u1d00\u13aa\ua4ee",
    "b": "\u0432\u0412\u042c\u044c\u0392\u03b2\u0299\u13f4\ua4d0",
    "c": "\u0441\u0421\u03f2\u03f9\u03c2\u1d04\u13df\ua4da\u2ca5\u2ca4",
    "d": "\u0501\u0500\u13a0\u13e7\u1d05\ua4d2",
    "e": "\u0435\u0415\u0395\u03b5\u025b\u04bd\u04bc\u212e\u1d07\u13ac\ua4f0",
    "f": "\u03dd\u03dc\ua4dd",
    "g": "\u0261\u0581\u050d\u050c\u13c0\ua4d6",
    "h": "\u04bb\u04ba\u041d\u043d\u0397\u029c\u13bb\ua4e7",
    "j": "\u0458\u0408\u03f3\u037f\u13ab\ua4d9",
    "k": "\u043a\u041a\u03ba\u039a\u0138\u1d0b\u13e6\ua4d7\u049b\u049a\u049f\u049e\u049d\u049c\u04c4\u04c3",
    # i, l, 1 and | are one letter here: each stands for the others in a disguised word.
    "l": "iIl1|\u0456\u0406\u03b9\u0399\u0131\u0269\u04cf\u04c0\u01c0\u0142\u0141\u0196\u026a\u029f\u13a5\u13de"
         "\ua4f2\ua4e1\ua647\u05c0\u2223",
    "m": "\u043c\u041c\u039c\u1d0d\u13b7\ua4df",
    "n": "\u0578\u043f\u03b7\u039d\u0274\ua4e0",
    "o": "0\u043e\u041e\u03bf\u039f\u03c3\u0585\u0555\u1d0f\u1040\u09e6\u0966\u0e50\u0ed0\u2c9f\u2c9e\ua4f3",
    "p": "\u0440\u0420\u03c1\u03a1\u2374\u1d18\u13e2\ua4d1",
    "q": "\u051b\u051a\u0566",
    "r": "\u0433\u0280\u13a1\ua4e3",
    "s": "\u0455\u0405\ua731\u13da\ua4e2",
    "t": "\u0442\u0422\u03c4\u03a4\u1d1b\u13a2\ua4d4\u0167\u0166",
    "u": "\u03c5\u057d\u1d1c\u03bc\ua4f4",
    "v": "\u03bd\u0475\u0474\u1d20\u13d9\ua4e6",
    "w": "\u051d\u051c\u0461\u1d21\u13b3\ua4ea\u03c9",
    "x": "\u0445\u0425\u03c7\u03a7\u00d7\u2a2f\ua4eb",
    "y": "\u0443\u0423\u03b3\u03a5\u04af\u04ae\u028f\u13a9\ua4ec",
    "z": "\u0396\u1d22\u13c3\ua4dc",
    ANGLE: "\uff1c\ufe64\u226e\u2039\u3008\u2329\ufe3f\u27e8\u02c2\u02f1\u1438\u16b2\u29fc\u276e\u276c\u2770"
           "\u2991\u2993\u00ab\u227a\u22b2",
    SLASH: "\u2215\u2044\u29f8\u2571\u27cb\u3033\u4e3f\u2f03\u1735\u2cc6",
}
# Characters that read as a space, a dash or an underscore besides those of categories Zs, Zl, Zp, Pd and Pc.
_SEPARATORS = "\u2212\u2043\u02d7\u2796\u23af\u2500\u2501\u2574\u2576\u2578\u257a\u30fc\uff70\u4e00\u2f00" \
              "\u3161\u1173\uffda\u2800"
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
