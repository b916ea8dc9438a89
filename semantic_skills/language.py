"""Which vector set routes a message in an index that holds two: is the message (and the library) English?

The test is meant to be read and explained, not learned (docs/quality.md, "Two vector sets"):

* a message is **English** when every letter in it is an ASCII letter, at least ``ENGLISH_SHARE`` of its words
  are English function words (bm25s' stopwords, the ones the lexical index drops, and ``_MORE_ENGLISH``:
  pronouns, auxiliaries, question words) and it holds more of those than stopwords of the other common Latin-
  script languages (``_OTHER_STOPWORDS``). A letter of any other script, an accent, or Spanish's opening ¿ or ¡
  makes it another language; so does a message of no stopwords at all ("weather Paris"): those go to the
  multilingual set, which reads English too, so a wrong guess costs a little English ranking, never the skill;
* a **library** is English when at least ``ENGLISH_LIBRARY_SHARE`` of its skills' names and descriptions read as
  English by a looser test (letters mostly ASCII, no more foreign stopwords than English ones; terse
  descriptions have none of either): in a library written in another language, English messages are routed by
  the multilingual set too, since the English model cannot match them to skills it cannot read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable

ENGLISH_SHARE = 0.20  # of a message's words that are English stopwords
ENGLISH_LIBRARY_SHARE = 0.80  # of a library's skills that read as English
ASCII_LETTER_SHARE = 0.90  # of a skill description's letters, for the looser test
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")
# Frequent function words of Spanish, French, German, Italian and Portuguese that are not English words.
_OTHER_STOPWORDS = frozenset(
    """
    el los las del al una unos unas para por con como pero muy sin sobre entre desde hasta cuando donde porque
    es son está están ser hay qué cómo mi mis tu tus su sus nos les lo le se que y o en un de esta este eso esto
    todo nada algo hoy ahora mucho muchas muchos gracias
    le les des du une et est sont pour avec dans sur pas ne qui mais ou je tu il nous vous ils elle au aux ce cette
    merci
    der die das den dem des und ist sind nicht mit für von zu auf ein eine einen einem ich du wir ihr sie es im
    auch oder aber wie was wo wenn dass bitte kann können danke
    il lo gli della di che per con non sono una uno nel alla delle dei come ma anche più
    os da do das dos para com não uma em no na nos nas mais como ou se você eu meu minha
    """.split()
)
_ENGLISH_WORDS_TOO = frozenset("come die son sin con hay eu".split())  # not stopwords in English, but words
# English function words beyond bm25s' 33 (Lucene's list): pronouns, auxiliaries, question words, prepositions.
_MORE_ENGLISH = frozenset(
    """
    i me my mine myself you your yours we our us he him his she her its them what which who whom whose how why
    when where can could would should shall may might must do does did done have has had am were been being
    i'm i'd i've i'll you're it's that's what's there's let's don't can't won't isn't
    about from up down out off over under again than too very just some any all each every both more most other
    those here please
    """.split()
)


@dataclass(frozen=True)
class LanguageCall:
    """Whether a message goes to the English set, and why, in words (for the decision record); ``foreign``: the
    message is surely in another language (another script, an accent, ¿ or ¡, or more stopwords of other
    languages than English ones), not merely short of English stopwords."""

    english: bool
    reason: str
    foreign: bool = False


def message_language(text: str, english_library: bool = True) -> LanguageCall:
    """Whether ``text`` is routed by the English set (see the module's docstring)."""
    if not english_library:
        return LanguageCall(False, "the library is not mostly English")
    letters = [c for c in text if c.isalpha()]
    if any(not ("a" <= c.lower() <= "z") for c in letters):
        return LanguageCall(False, "letters other than English ones", foreign=True)
    if "¿" in text or "¡" in text:
        return LanguageCall(False, "Spanish question or exclamation marks", foreign=True)
    words = [w.lower() for w in _WORD.findall(text)]
    english, other = _stopword_counts(words)
    if not words or english < ENGLISH_SHARE * len(words):
        return LanguageCall(False, f"{english} English stopwords in {len(words)} words", foreign=other > english)
    if other >= english:
        return LanguageCall(False, f"{other} stopwords of other languages against {english} English ones",
                            foreign=other > english)
    return LanguageCall(True, f"English: {english} English stopwords in {len(words)} words")


def crosses_languages(text: str, english_library: bool = True) -> bool:
    """Whether ``text`` is surely in another language than the library: another script, an accent, ¿ or ¡, or
    more stopwords of other languages than English ones, against an English library; English against a library
    that is not. A message of neither kind (no stopwords at all, "weather Paris") is not said to cross."""
    call = message_language(text)
    return call.foreign if english_library else call.english


def english_library(texts: Iterable[str]) -> bool:
    """Whether a library whose skills' names and descriptions are ``texts`` is mostly English (an empty one is)."""
    texts = list(texts)
    english = sum(_reads_english(t) for t in texts)
    return not texts or english >= ENGLISH_LIBRARY_SHARE * len(texts)


def _reads_english(text: str) -> bool:
    letters = [c for c in text if c.isalpha()]
    ascii_letters = sum("a" <= c.lower() <= "z" for c in letters)
    if letters and ascii_letters < ASCII_LETTER_SHARE * len(letters):
        return False
    english, other = _stopword_counts([w.lower() for w in _WORD.findall(text)])
    return other <= english


def _stopword_counts(words: list[str]) -> tuple[int, int]:
    english_words, other_words = _stopwords()
    return sum(w in english_words for w in words), sum(w in other_words for w in words)


@lru_cache(maxsize=1)
def _stopwords() -> tuple[frozenset[str], frozenset[str]]:
    """English stopwords (bm25s', the lexical index's), and the other languages' that are no English word."""
    from bm25s.stopwords import STOPWORDS_EN

    english = frozenset(STOPWORDS_EN) | _MORE_ENGLISH
    return english, _OTHER_STOPWORDS - english - _ENGLISH_WORDS_TOO
