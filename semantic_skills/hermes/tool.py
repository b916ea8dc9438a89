"""The ``search_skills`` tool: find skills by meaning from inside a conversation."""

from __future__ import annotations

import json

from ..injection import cap_body
from ..limits import MAX_QUERY_CHARS
from ..worker.protocol import DEFAULT_SEARCH_RESULTS, INDEX_MISSING, MAX_SEARCH_RESULTS
from .cli_command import HERMES_COMMAND
from .eligibility import current_platform
from .runtime import AGENT_ANSWER_TIMEOUT_SECONDS, PluginRuntime

NAME = "search_skills"
TOOLSET = "semantic_skills"

SCHEMA = {
    "name": NAME,
    "description": (
        "Find saved skills (task instructions) by meaning. Returns the best matches with scores and the "
        "full text of the top one; load any other with skill_view(name)."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "The task, in a few plain words."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_RESULTS,
                      "description": f"How many skills to list (default {DEFAULT_SEARCH_RESULTS})."},
        },
        "required": ["query"],
    },
}

BUILD_HINT = f"build it with: {HERMES_COMMAND} build, then try again"
PINNED_NOTE = "already in the system prompt in full (skills.auto_load): follow it there"


def search_skills(rt: PluginRuntime, args: dict, **_) -> str:
    """The tool handler: always returns a JSON string, never raises."""
    try:
        query = args.get("query") if isinstance(args, dict) else None
        if not isinstance(query, str) or not query.strip():
            return _error("invalid_arguments", "query must be a non-empty string")
        limit = args.get("limit", DEFAULT_SEARCH_RESULTS)
        if isinstance(limit, bool) or not isinstance(limit, (int, float, str)):
            return _error("invalid_arguments", f"limit must be an integer from 1 to {MAX_SEARCH_RESULTS}")
        try:
            limit = max(1, min(MAX_SEARCH_RESULTS, int(limit)))
        except ValueError:
            return _error("invalid_arguments", f"limit must be an integer from 1 to {MAX_SEARCH_RESULTS}")
        query = query.strip()[:MAX_QUERY_CHARS]
        settings = rt.settings()
        rt.client.start()
        offer = rt.offer(current_platform())
        reply = rt.client.search(query, limit, offer.exclude - offer.pinned, AGENT_ANSWER_TIMEOUT_SECONDS,
                                 wait_ready=settings.warmup_wait_seconds,
                                 inactive_environments=offer.inactive_environments)
        if reply.status == INDEX_MISSING:
            return _error(INDEX_MISSING, f"there is no skill index yet; {BUILD_HINT}")
        if not reply.ok:
            return _error(reply.status, reply.error or f"skill search is unavailable right now; check with: "
                                                       f"{HERMES_COMMAND} doctor")
        results = [_marked(result, offer.pinned) for result in reply.data.get("results", [])]
        return json.dumps({"query": query, "results": results,
                           "best": _best(reply.data.get("best"), settings.max_tool_chars, offer.pinned)},
                          ensure_ascii=False)
    except Exception as exc:  # noqa: BLE001 - a tool must answer, not raise
        return _error("error", f"search_skills failed: {type(exc).__name__}: {exc}")


def _marked(result, pinned: frozenset[str]):
    """A result, with ``already_loaded`` when the skill is pinned into the system prompt."""
    if isinstance(result, dict) and result.get("name") in pinned:
        return {**result, "already_loaded": True}
    return result


def _best(best, max_chars: int, pinned: frozenset[str]) -> dict | None:
    """The best match with its body capped at ``max_chars`` (``truncated`` says whether it was); a pinned skill
    is named, not repeated."""
    if not isinstance(best, dict) or not isinstance(best.get("body"), str):
        return None
    name, body, omitted = str(best.get("name")), best["body"], int(best.get("omitted") or 0)
    if name in pinned:
        return {"name": name, "already_loaded": True, "content": PINNED_NOTE, "truncated": False}
    return {"name": name, "content": cap_body(name, body, max_chars, omitted),
            "truncated": len(body) + omitted > max_chars}


def _error(status: str, message: str) -> str:
    return json.dumps({"error": message, "status": status}, ensure_ascii=False)
