"""The decision gate: when to inject the top-ranked skill, and when nothing.

Two checks run on every ranked message:

* an absolute floor on the top skill's similarity (cosine scale; never below
  ``FLOOR``, 0.30), and
* a relative gap: how far the top score stands above the mean of the next
  ``COMPETITORS`` scores, divided by how far the top skill stands from its own
  nearest neighbours in the index. A skill in a family of near-duplicates only
  ever wins by a little, a skill with no look-alikes by a lot; the division
  makes one threshold mean the same in both cases, in any corpus and for any
  embedder.

``is_small_talk`` decides, on characters alone, that a message needs no skill.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from functools import lru_cache

FLOOR = 0.30
DEFAULT_MIN_RELATIVE_GAP = 0.27
COMPETITORS = 9
NEIGHBOURS = 9
MIN_SEPARATION = 0.05


@dataclass(frozen=True)
class Gate:
    """Inject the top skill when its similarity clears ``floor`` and its relative gap ``min_relative_gap``."""

    floor: float = FLOOR
    min_relative_gap: float = DEFAULT_MIN_RELATIVE_GAP

    def __post_init__(self):
        object.__setattr__(self, "floor", max(FLOOR, float(self.floor)))

    @classmethod
    def from_router_settings(cls, router: dict, floor: float | None = None) -> "Gate":
        """The gate stored in an index manifest's ``router`` section; ``floor`` overrides its floor."""
        chosen_floor = floor if floor is not None else router.get("threshold", FLOOR)
        return cls(float(chosen_floor), float(router.get("min_relative_gap", DEFAULT_MIN_RELATIVE_GAP)))

    def verdict(self, similarity: float, relative_gap: float) -> tuple[bool, str]:
        """Whether to inject, and the reason in words."""
        if similarity < self.floor:
            return False, f"similarity {similarity:.3f} below the floor {self.floor:.2f}"
        if relative_gap < self.min_relative_gap:
            return False, (f"relative gap {relative_gap:.3f} below {self.min_relative_gap:.2f}: "
                           "the top skill does not stand out from the next ones")
        return True, (f"similarity {similarity:.3f} >= {self.floor:.2f} and "
                      f"relative gap {relative_gap:.3f} >= {self.min_relative_gap:.2f}")


def relative_gap(top: float, competitor_mean: float, separation: float) -> float:
    """``(top - competitor_mean) / separation``; ``separation`` is 1 minus the top skill's mean
    cosine to its nearest neighbours, floored at ``MIN_SEPARATION``."""
    return (top - competitor_mean) / max(separation, MIN_SEPARATION)

# Acknowledgements, greetings and sign-offs in common languages. A message made
# only of these (in any order, with or without spaces) is small talk.
_SMALL_TALK_WORDS = frozenset(
    """
    ok okay okey k kk yes yeah yea yep yup ya no nope nah sure thanks thank thx ty tysm you u
    cheers cool great nice awesome perfect excellent fine good alright right got it gotcha
    understood noted done hi hello hey yo hiya bye goodbye see later cya lol haha hehe hmm
    wow np welcome morning evening night so much very a lot all
    gracias merci danke grazie obrigado obrigada si sí oui ja nein non hola bonjour ciao hallo
    salut adios adiós tschüss bien bueno vale d'accord super genial
    спасибо да нет привет пока хорошо ок
    谢谢 謝謝 好的 好 是的 是 对 對 嗯 你好 再见 再見 没问题 收到 行 可以
    ありがとう ありがとうございます はい いいえ 了解 こんにちは おはよう わかりました どうも
    감사합니다 고마워 네 예 아니요 안녕하세요 안녕 좋아요
    شكرا نعم لا مرحبا תודה כן לא שלום धन्यवाद हाँ नहीं नमस्ते
    """.split()
)
_LONGEST_WORD = max(len(w) for w in _SMALL_TALK_WORDS)


def _is_content(char: str) -> bool:
    return unicodedata.category(char)[0] in "LN" or char == "'"


@lru_cache(maxsize=4096)
def _segments_into_small_talk(token: str) -> bool:
    """True if ``token`` is a concatenation of small-talk words ("okthanks", "好的谢谢")."""
    reachable = [True] + [False] * len(token)
    for end in range(1, len(token) + 1):
        for start in range(max(0, end - _LONGEST_WORD), end):
            if reachable[start] and token[start:end] in _SMALL_TALK_WORDS:
                reachable[end] = True
                break
    return reachable[-1]


def is_small_talk(text: str, max_chars: int = 200) -> bool:
    """True for acknowledgements, greetings and messages with (almost) no words.

    Works on characters, not word counts, so it also handles languages written
    without spaces. Long messages are never small talk.
    """
    if len(text) > max_chars:
        return False
    normalized = unicodedata.normalize("NFKC", text).lower()
    cleaned = "".join(c if _is_content(c) else " " for c in normalized)
    tokens = cleaned.split()
    if sum(len(t) for t in tokens) < 2:
        return True
    return all(_segments_into_small_talk(t) for t in tokens)
