"""Cheap checks that decide, before any embedding, that a message needs no skill."""

from __future__ import annotations

import unicodedata
from functools import lru_cache

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
