"""The wire between a host and its routing worker: JSON, one object per line each way.

The host starts the worker with its start-up settings as one JSON argument::

    python -m semantic_skills.worker '{"index_dir": "...", "embedder": {...}}'

``embedder`` holds :class:`~semantic_skills.settings.EmbedderSettings` fields.
Requests arrive on stdin and are answered on stdout, in any order, matched by
``id``; each request carries its own per-message settings::

    {"id": 1, "op": "route",  "text": "...", "exclude": [...], "floor": 0.45 or null, "inactive_environments": [...]}
    {"id": 2, "op": "search", "text": "...", "limit": 3, "exclude": [...], "inactive_environments": [...]}
    {"id": 3, "op": "ping"}
    {"id": 4, "op": "rebuild"}
    {"id": 5, "op": "claim", "path": ".../SKILL.md"}

``exclude`` names the skills the host turns off for this message; ``floor``
overrides the index's similarity floor; a skill whose ``environments:`` are
all among ``inactive_environments`` is not offered. ``rebuild`` asks for an
incremental build of the index from its own recorded roots: it runs on the
worker's own thread a moment after the last such request (several skill
changes make one build), never holds up routing, waits its turn if another
build holds the index, and the rebuilt index is then swapped in as any
rebuild is. ``claim`` asks whether the skill in that file (as it is now) would
be left out because its name reads as a skill the index routes, which keeps
that reading (see ``skills.look_alikes``). Answers::

    {"id": 1, "ok": true, "skill": "name" or null, "mode": "full" | "hint" | null, "score": 0.62, "reason": "...",
     "named": [{"name", "description", "version"}...], "version": "...", "body": "...", "omitted": 0,
     "escaped": true,
     "top": "name" or null, "similarity": 0.58 or null, "relative_gap": 0.41 or null, "relative_margin": 0.3 or null,
     "threshold": 0.38, "min_relative_gap": 0.27, "full_relative_gap": 0.31, "full_relative_margin": 0.20}
    {"id": 2, "ok": true, "results": [{"name", "description", "score"}...],
     "best": {"name", "body", "omitted", "escaped"} or null, "not_routed": [{"name", "reads_as"}...]}
    {"id": 3, "ok": true, "state": "ready", "detail": ""}
    {"id": 4, "ok": true}
    {"id": 5, "ok": true, "name": "..." or null, "kept_by": {"name", "path"} or null}
    {"id": 1, "ok": false, "status": "index_missing" | "not_ready" | "error", "error": "..."}

``mode`` is "full" (the whole skill) or "hint" (a pointer) when ``skill`` is
set; ``named`` lists the skills it names (a hint may name two), each with its
``version`` (the first 32 hex digits of the SHA-256 of its SKILL.md as the
worker reads it now; null when it cannot be read), ``version`` is the
skill's, and only a full answer carries ``body``: the skill's text with its
front matter removed, clipped at ``limits.MAX_BODY_CHARS`` (``omitted``
counts what was clipped) and with every tag neutralised
(``injection.neutralise``; ``escaped`` says so), once per version of the
file; the host caps it to taste. Every route answer, also one that injects nothing, says what
the gate judged: ``top`` (the best-ranked skill), its ``similarity``,
``relative_gap`` and ``relative_margin`` (null when the gate did not run, e.g.
for small talk) and the thresholds they were held to: ``threshold`` (the
similarity floor) and ``min_relative_gap`` for any injection,
``full_relative_gap`` and ``full_relative_margin`` for the whole skill. A
search answer's ``not_routed`` names the skills (at most
``MAX_NOT_ROUTED``) the index leaves out because their names read as a routed
skill's, and the name each reads as.

Lines with an ``event`` key report the worker's state
(``{"event": "state", "state", "detail", "skills", "backend", "gated", "route_ms"}``) or a
log message (``{"event": "log", "level", "message"}``). ``route_ms`` (with the
first ``ready`` of a local embedder) is the median time of a few warm-up
routes, in milliseconds (see ``answer_times.py``). ``gated`` (with
``ready``) lists the skills whose offer is for the host to decide, one
``{"name", "folder", "path", "conditions", "project_root"}`` each: those with
offer conditions, those from a project root, and those from an organisation
mirror, which also carry ``org`` (the organisation) and ``org_marker`` (the
file that names the active one). ``conditions`` maps each
agent namespace under the skill's ``metadata`` to the offer conditions it
sets (see ``skills.parsing.CONDITION_KEYS``); the host applies its own.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field

from ..settings import EmbedderSettings

ROUTE = "route"
SEARCH = "search"
PING = "ping"
REBUILD = "rebuild"
CLAIM = "claim"

DEFAULT_SEARCH_RESULTS = 3
MAX_SEARCH_RESULTS = 10
MAX_NOT_ROUTED = 5  # look-alikes a search answer names (the build, status and doctor name them all)

# Worker states, as reported in ``state`` events.
STARTING = "starting"
WAITING_FOR_INDEX = "waiting_for_index"
LOADING = "loading"
READY = "ready"
FAILED = "error"

# Reply statuses.
OK = "ok"
TIMEOUT = "timeout"
NOT_READY = "not_ready"
INDEX_MISSING = "index_missing"
ERROR = "error"
UNAVAILABLE = "unavailable"


def status_for_state(state: str) -> str:
    """The status of a request that a worker in ``state`` (not ready) cannot answer."""
    return {WAITING_FOR_INDEX: INDEX_MISSING, FAILED: ERROR}.get(state, NOT_READY)


@dataclass(frozen=True)
class Startup:
    """What a worker needs before it can route: changing any of it means starting another worker."""

    index_dir: str
    embedder: EmbedderSettings = field(default_factory=EmbedderSettings)

    def to_json(self) -> str:
        return json.dumps({"index_dir": self.index_dir, "embedder": asdict(self.embedder)}, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> "Startup":
        """Parse the start-up argument; raises ValueError (or ConfigError for bad embedder settings)."""
        data = json.loads(text)
        if not isinstance(data, dict) or not isinstance(data.get("index_dir"), str):
            raise ValueError("the start-up settings need an index_dir")
        return cls(data["index_dir"], EmbedderSettings.from_mapping(data.get("embedder")))


@dataclass(frozen=True)
class Reply:
    """The outcome of one request: ``status`` is ``ok`` or why there is no answer; ``at`` is when it came
    (``time.monotonic()``: the answer's arrival, or the moment a wait gave up)."""

    status: str
    data: dict = field(default_factory=dict)
    error: str = ""
    at: float = field(default_factory=time.monotonic, compare=False)

    @property
    def ok(self) -> bool:
        return self.status == OK


def encode(message: dict) -> bytes:
    """One protocol line; an unpaired surrogate (chat text can carry one) cannot be UTF-8 and becomes "?"."""
    return json.dumps(message, ensure_ascii=False).encode("utf-8", "replace") + b"\n"
