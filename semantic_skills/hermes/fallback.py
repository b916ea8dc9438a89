"""What the agent gets while routing cannot work, or has nothing to route to: Hermes' own skills listing, and
``search_skills`` by words.

:func:`routing_problem` says why routing cannot serve a Hermes home right now
(no index yet, or the routing worker's own verdict: an index from another
embedder, a missing package, a worker that keeps exiting), or ``""`` when it
can. While it cannot, a session whose system prompt Hermes builds keeps
Hermes' full skills listing instead of the compact stub (see
``prompt/mode.py``), and :func:`search_by_words` answers
``search_skills`` from the skill files themselves, matching the query's words
in names, folders, descriptions and tags. An index that holds no skills
(:func:`library_is_empty`) is no fault, so nothing is logged as one, but a
new session keeps Hermes' own listing all the same: the compact section
would point the agent to skills that are not there, while Hermes' listing
says what Hermes itself finds (nothing, or skills added since the build).

The word search errs towards leaving a skill out: one the offer hides
(disabled, another OS, an inactive environment) is never listed, and neither
is one whose offer depends on the session (``metadata.hermes`` conditions,
trusted project folders, organisation mirrors): see ``offer/rules.py``.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING

from ..files import read_regular_file
from ..index import MANIFEST, MAX_MANIFEST_BYTES
from ..skills.discovery import discover_skills
from ..skills.look_alikes import Claim, earlier_claims, groups_from_json
from ..skills.words import match_by_words
from ..worker.protocol import FAILED, WAITING_FOR_INDEX
from .config import hermes_command
from .offer.roots import scanned_roots
from .offer.rules import Offer, session_dependent

if TYPE_CHECKING:
    from .runtime import PluginRuntime


def routing_problem(rt: PluginRuntime) -> str:
    """Why routing cannot serve ``rt``'s home now, with the fix; ``""`` when it can (or may yet: still loading)."""
    rt.refresh()  # a changed index folder or embedder is taken up first
    status = rt.client.status
    if status.state in (FAILED, WAITING_FOR_INDEX) and status.detail:
        return status.detail
    if not (rt.index_dir / MANIFEST).is_file():
        return f"no skill index in {rt.index_dir}; build one with: {hermes_command(rt.home)} build"
    return ""


EMPTY_MANIFEST_BYTES = 64 * 1024  # a manifest without skills is a few KB; a bigger one is not read (it has skills)


def library_is_empty(rt: PluginRuntime) -> bool:
    """The index holds no skills (its skills folders hold none): an empty library is a state, not a fault.

    Read from the manifest itself, at most :data:`EMPTY_MANIFEST_BYTES` (a
    bigger one holds skills), so it is right also before the worker is ready
    and after a rebuild emptied the index.
    """
    try:
        data = json.loads(read_regular_file(rt.index_dir / MANIFEST, EMPTY_MANIFEST_BYTES))
    except (OSError, ValueError):
        return False  # no index, or one that holds skills: routing_problem and the worker say the rest
    return isinstance(data, dict) and data.get("skills") == []


def recorded_claims(rt: PluginRuntime) -> dict[str, list[Claim]]:
    """The order in which the home's index records names that read alike were claimed (see
    ``skills.look_alikes``), read from its manifest as JSON (no numpy in Hermes' process); none without one."""
    try:
        data = json.loads(read_regular_file(rt.index_dir / MANIFEST, MAX_MANIFEST_BYTES))
        routed = [Claim(str(record["path"]), str(record["name"])) for record in data["skills"]]
        return earlier_claims(groups_from_json(data.get("look_alikes") or []), routed)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def search_by_words(rt: PluginRuntime, query: str, limit: int, offer: Offer) -> dict:
    """``search_skills``' answer from the skill files, shaped as the worker's (``results``, ``best`` with its body)."""
    roots = scanned_roots(rt.home, rt.config())
    found = discover_skills(roots, earlier=recorded_claims(rt))
    for skipped in found.skipped:
        if skipped.kind:  # a FIFO or a device in a skills folder: never read, said once
            rt.log_once(logging.WARNING, f"skipped {skipped.path}: {skipped.reason}")
    offered = [skill for skill in found.skills
               if offer.hidden_by(skill) is None and not session_dependent(skill, roots)]
    matched = match_by_words(offered, query, limit)
    results = [{"name": skill.name, "description": skill.description, "score": round(score, 4)}
               for skill, score in matched]
    best = {"name": matched[0][0].name, "body": matched[0][0].body.strip("\n"), "omitted": 0} if matched else None
    return {"results": results, "best": best}
