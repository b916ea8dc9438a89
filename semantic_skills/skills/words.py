"""Find skills by the words a query shares with their name, folder, description and tags: no model, no index.

The fallback for when semantic search cannot run: cruder than the router, but
it reads nothing beyond the parsed skills and imports nothing heavy.
"""

from __future__ import annotations

import re
from typing import Iterable

from .parsing import Skill

_WORD = re.compile(r"[^\W_]{2,}")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
# Words too common in requests to tell skills apart.
STOPWORDS = frozenset(
    "about after all also an and any are as at be but by can could do does for from get help how if in into is it "
    "its just like me my need no not of on or our please should so some that the their them then there these "
    "this to up use using want was we what when where which while who why will with would you your".split()
)


def split_words(text: str) -> list[str]:
    """The lower-case words of ``text``, in order: two or more letters or digits, camelCase split."""
    return _WORD.findall(_CAMEL.sub(" ", text).lower())


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
