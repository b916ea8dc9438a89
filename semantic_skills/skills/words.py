"""Find skills by the words a query shares with their name, folder, description and tags: no model, no index.

The fallback for when semantic search cannot run: cruder than the router, but
it reads nothing beyond the parsed skills and imports nothing heavy.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Iterable

from .parsing import Skill

_RUN = re.compile(r"[^\W_]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
# Scripts written without spaces between words: Han (CJK ideographs, their extensions and compatibility forms),
# hiragana, katakana (and its half-width forms). A run of them is cut into overlapping character pairs.
_UNSPACED = "\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f"
_SCRIPT_RUN = re.compile(f"[{_UNSPACED}]+|[^{_UNSPACED}]+")
_IS_UNSPACED = re.compile(f"[{_UNSPACED}]")
# Words too common in requests to tell skills apart.
STOPWORDS = frozenset(
    "about after all also an and any are as at be but by can could do does for from get help how if in into is it "
    "its just like me my need no not of on or our please should so some that the their them then there these "
    "this to up use using want was we what when where which while who why will with would you your".split()
)


def split_words(text: str) -> list[str]:
    """The lower-case words of ``text``, in order: two or more letters or digits, camelCase split.

    Chinese and Japanese put no spaces between words, so a run of Han or kana
    characters is cut into its overlapping pairs ("数据分析" gives "数据",
    "据分", "分析"; a lone character stays whole), and letters of other scripts
    around it ("用Python画图") make words of their own. Full-width letters count as
    their usual forms (NFKC).
    """
    found: list[str] = []
    for run in _RUN.findall(_CAMEL.sub(" ", unicodedata.normalize("NFKC", text)).lower()):
        for part in _SCRIPT_RUN.findall(run) if _IS_UNSPACED.search(run) else (run,):
            if _IS_UNSPACED.match(part):
                found.extend(part[i : i + 2] for i in range(max(1, len(part) - 1)))
            elif len(part) >= 2:
                found.append(part)
    return found


def has_unspaced_script(text: str) -> bool:
    """True when ``text`` holds Chinese or Japanese characters (see :func:`split_words`)."""
    return _IS_UNSPACED.search(text) is not None


def words(text: str) -> set[str]:
    """The words of ``text`` (:func:`split_words`), common words dropped."""
    return {w for w in split_words(text) if w not in STOPWORDS}


def match_by_words(skills: Iterable[Skill], query: str, limit: int) -> list[tuple[Skill, float]]:
    """The ``limit`` skills sharing the most of ``query``'s words, best first, with a score from 0 to 1.

    A query word found in a skill's name or folder counts twice one found only
    in its description or tags; the score is what a skill matched over what a
    skill matching every word in its name would. Skills matching no word are
    left out; ties go by name.
    """
    wanted = words(query)
    if not wanted:
        return []
    scored = []
    for skill in skills:
        title = words(f"{skill.name} {skill.folder}")
        rest = words(f"{skill.description} {' '.join(skill.tags)}") - title
        points = 2 * len(wanted & title) + len(wanted & rest)
        if points:
            scored.append((skill, points / (2 * len(wanted))))
    scored.sort(key=lambda pair: (-pair[1], pair[0].name))
    return scored[:limit]
