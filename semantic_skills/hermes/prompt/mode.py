"""Which skills section a Hermes home's new sessions get: the stub, or Hermes' own listing.

``prompt_mode: full`` keeps Hermes' listing. So does a home where routing
cannot work yet (no index, a failed worker: see ``hermes/fallback.py``), so
the agent still sees its skills; the reason is logged once with its fix.
"""

from __future__ import annotations

import logging
from pathlib import Path

from ..fallback import routing_problem
from ..runtime import get_runtime
from .stub import COMPACT, LISTING


def prompt_mode(home: Path) -> str:
    """:data:`~.stub.COMPACT` or :data:`~.stub.LISTING` for a prompt built for ``home``."""
    runtime = get_runtime(home)
    mode = runtime.refresh().prompt_mode
    problem = routing_problem(runtime) if mode == COMPACT else ""
    if problem:
        runtime.log_once(logging.WARNING, f"{problem}; until then new sessions keep Hermes' own skills listing "
                                          "and search_skills matches the words of skill names and descriptions")
        return LISTING
    return mode
