"""Where the stub goes in a session's system prompt, decided on the session's first request and kept for the rest.

Hermes builds a session's system prompt once and sends it again on every
request (a gateway turn's fresh agent restores it from the session database),
so the decision taken on the first request (Hermes' listing at this exact
place, or the prompt left as it is) holds for every later request that
carries the same system texts, whatever changes on disk meanwhile: a skill
added in mid-session changes what Hermes' builder would render now, never
what this session's requests carry. When Hermes rebuilds the prompt itself
(after a compression, a model switch), its texts differ and the session is
decided anew. A decision is recognised by the hash of the texts it was taken
on (Python's, keyed per process, so no text can be written to collide), never
by holding the texts: a session costs a few dozen bytes.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from .listing import Span

MAX_SESSIONS = 4096  # sessions whose decision is remembered


@dataclass(frozen=True)
class Decision:
    """The stub in place of the listing at ``span``, or (``span`` None) the prompt as Hermes built it."""

    texts: int  # the hash of the system texts it was taken on
    span: Span | None = None
    stub: str = ""


def texts_key(texts: list[str]) -> int:
    """What recognises a request's system texts (each string's hash is computed once, then cached by Python)."""
    return hash(tuple(texts))


_decisions: OrderedDict[tuple[str, str], Decision] = OrderedDict()
_lock = threading.Lock()


def recall(home: Path, session_id: str | None, key: int) -> Decision | None:
    """The decision taken for ``session_id`` on system texts whose :func:`texts_key` is ``key``, if any."""
    if not session_id:
        return None
    with _lock:
        decision = _decisions.get((str(home), session_id))
        if decision is None or decision.texts != key:
            return None
        _decisions.move_to_end((str(home), session_id))
        return decision


def keep(home: Path, session_id: str | None, decision: Decision) -> None:
    """Remember ``decision`` for ``session_id`` (the oldest session is forgotten past :data:`MAX_SESSIONS`)."""
    if not session_id:
        return
    with _lock:
        _decisions[(str(home), session_id)] = decision
        _decisions.move_to_end((str(home), session_id))
        while len(_decisions) > MAX_SESSIONS:
            _decisions.popitem(last=False)
