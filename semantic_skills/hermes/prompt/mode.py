"""Which skills section a Hermes home's sessions get: the stub, or Hermes' own listing.

``prompt_mode: full`` keeps Hermes' listing. So does a home where routing
cannot work yet (no index, a failed worker: see ``hermes/fallback.py``), so
the agent still sees its skills; the reason is logged once with its fix. An
index that holds no skills keeps Hermes' listing too, without a warning: an
empty library is a state, and the stub would point to skills that are not
there. A
session keeps the section its first request got, so its system prompt stays
the same bytes whatever routing does meanwhile; a new session takes the
current answer.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict

from ..fallback import library_is_empty, routing_problem
from ..runtime import PluginRuntime
from .stub import COMPACT, LISTING

MAX_SESSIONS = 4096  # sessions whose section is remembered

_sessions: OrderedDict[tuple[str, str], str] = OrderedDict()
_lock = threading.Lock()


def prompt_mode(runtime: PluginRuntime, session_id: str | None = None) -> str:
    """:data:`~.stub.COMPACT` or :data:`~.stub.LISTING` for a request of ``session_id`` in ``runtime``'s home."""
    key = (str(runtime.home), session_id or "")
    with _lock:
        kept = _sessions.get(key) if session_id else None
    if kept is not None:
        return kept
    mode = _current_mode(runtime)
    if session_id:
        with _lock:
            _sessions[key] = mode
            while len(_sessions) > MAX_SESSIONS:
                _sessions.popitem(last=False)
    return mode


def _current_mode(runtime: PluginRuntime) -> str:
    mode = runtime.refresh().prompt_mode
    problem = routing_problem(runtime) if mode == COMPACT else ""
    if problem:
        runtime.log_once(logging.WARNING, f"{problem}; until then new sessions keep Hermes' own skills listing "
                                          "and search_skills matches the words of skill names and descriptions")
        return LISTING
    if mode == COMPACT and library_is_empty(runtime):  # a state, not a fault: nothing to warn about
        runtime.log_once(logging.DEBUG, f"the index in {runtime.index_dir} holds no skills; new sessions keep "
                                        "Hermes' own skills listing until skills are added and built")
        return LISTING
    return mode
