"""Unicode's confusables data (UTS #39): the prototype each look-alike character maps to.

The data is Unicode's own ``confusables.txt``, kept as published beside this
module (``confusables.txt``, Unicode License V3 in
``confusables-LICENSE.txt``); docs/routing.md, "Which names read alike", says
why no package serves it and how to update it. It is read once, on first
use (tens of milliseconds), so importing this module costs nothing.

One reading is derived from the data: UTS #39 maps by shape with case kept, so
Cyrillic ``к`` maps to ``ĸ`` and ``в`` to the small capital ``ʙ``; for a
reader who ignores case a small capital is its letter, so a small capital,
and any prototype whose class (the prototype and the characters mapped to it)
holds one, reads as that letter (``ĸ``'s class holds ``ᴋ``).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from .files import read_regular_file

DATA_FILE = Path(__file__).with_name("confusables.txt")
MAX_DATA_BYTES = 4 * 1024 * 1024
_LINE = re.compile(r"^([0-9A-F]{4,6}) ;\t([0-9A-F]{4,6}(?: [0-9A-F]{4,6})*) ;\tMA\t", re.MULTILINE)
_VERSION = re.compile(r"^# Version: ([0-9.]+)$", re.MULTILINE)
_SMALL_CAPITAL = re.compile(r"LATIN LETTER SMALL CAPITAL ([A-Z])")


@dataclass(frozen=True)
class _Data:
    prototypes: dict[str, str]  # a look-alike character -> its prototype (one or more characters)
    classes: dict[str, tuple[str, ...]]  # a prototype -> the characters mapped to it, in code point order
    unicode_version: str


@functools.cache
def _data() -> _Data:
    text = read_regular_file(DATA_FILE, MAX_DATA_BYTES).decode("utf-8-sig")
    prototypes = {chr(int(source, 16)): "".join(chr(int(code, 16)) for code in target.split())
                  for source, target in _LINE.findall(text)}
    classes: dict[str, list[str]] = {}
    for char, found in prototypes.items():
        classes.setdefault(found, []).append(char)
    version = _VERSION.search(text)
    return _Data(prototypes, {found: tuple(sorted(chars)) for found, chars in classes.items()},
                 version.group(1) if version else "")


@functools.lru_cache(maxsize=1024)
def _class_letter(found: str) -> str:
    """The letter of the Latin small capital in ``found``'s class (``found`` and what maps to it); "" for none."""
    if found.isascii():
        return ""
    members = (found, *_data().classes.get(found, ()))
    return next((letter for member in members if (letter := _small_capital(member))), "")


def _small_capital(char: str) -> str:
    """The letter a Latin small capital stands for; "" for any other text."""
    named = _SMALL_CAPITAL.fullmatch(unicodedata.name(char, "")) if len(char) == 1 else None
    return named.group(1).lower() if named else ""


def prototype(char: str) -> str | None:
    """What UTS #39 says ``char`` looks like (a small capital, or a class holding one, read as its letter); None
    when it lists ``char`` as no other character's look-alike."""
    found = _data().prototypes.get(char, char)
    read = _class_letter(found) or found
    return None if read == char else read


def look_alikes_of(target: str) -> str:
    """The characters UTS #39 maps to ``target``, in code point order."""
    return "".join(_data().classes.get(target, ()))


def unicode_version() -> str:
    """The Unicode version of the confusables data, as its file names it."""
    return _data().unicode_version
