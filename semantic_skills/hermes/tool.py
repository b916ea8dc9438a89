"""The ``search_skills`` tool: find skills by meaning from inside a conversation."""

from __future__ import annotations

import json

from ..injection import cap_body, name_for_model, neutralise
from ..limits import MAX_QUERY_CHARS
from ..worker.protocol import DEFAULT_SEARCH_RESULTS, MAX_SEARCH_RESULTS, Reply
from .budget import AGENT_ANSWER_TIMEOUT_SECONDS
from .config import hermes_command
from .fallback import routing_problem, search_by_words
from .host.session import current_platform
from .names_note import search_note
from .prompt.stub import SEARCH_TOOL
from .runtime import PluginRuntime

NAME = SEARCH_TOOL
# Hermes' own skills toolset (skills_list, skill_view, skill_manage), which every Hermes declares in its toolsets
# module: Hermes 0.20+ checks a session's toolsets before plugins load, against that module and the live registry,
# taking plugin toolsets from the last run's cache, so a toolset of the plugin's own was "Unknown" on every chat
# after the first, and once more after removal. A bundled plugin (spotify) shares a declared key the same way.
TOOLSET = "skills"

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

PINNED_NOTE = "already in the system prompt in full (skills.auto_load): follow it there"
WORD_SEARCH = "words"  # ``matched`` when the answer comes from the skill files' words, not semantic search


def search_skills(rt: PluginRuntime, args: dict, **_) -> str:
    """The tool handler: always returns a JSON string, never raises.

    When the routing worker cannot answer (no index yet, a failed worker...),
    the skill files' names and descriptions answer instead, and ``note`` says
    why and how to fix it.
    """
    try:
        query, limit = _arguments(args)
    except ValueError as exc:
        return _error("invalid_arguments", str(exc))
    try:
        settings = rt.refresh()
        rt.client.start()
        offer = rt.offer(current_platform())
        reply = rt.client.search(query, limit, offer.exclude - offer.pinned, AGENT_ANSWER_TIMEOUT_SECONDS,
                                 wait_ready=settings.warmup_wait_seconds,
                                 inactive_environments=offer.inactive_environments)
        found, extra = reply.data, {}
        if not reply.ok:
            found = search_by_words(rt, query, limit, offer)
            extra = {"matched": WORD_SEARCH, "note": _why_by_words(rt, reply)}
        results = [marked for result in found.get("results", []) if (marked := _marked(result, offer.pinned))]
        return json.dumps({"query": query, "results": results,
                           "best": _best(found.get("best"), settings.max_tool_chars, offer.pinned), **extra,
                           **search_note(found)}, ensure_ascii=False)
    except Exception as exc:  # noqa: BLE001 - a tool must answer, not raise
        return _error("error", f"search_skills failed: {type(exc).__name__}: {exc}")


def _arguments(args) -> tuple[str, int]:
    """The query and the limit; raises ValueError saying what is wrong."""
    query = args.get("query") if isinstance(args, dict) else None
    if not isinstance(query, str) or not query.strip():
        raise ValueError("query must be a non-empty string")
    limit = args.get("limit", DEFAULT_SEARCH_RESULTS)
    wrong = f"limit must be an integer from 1 to {MAX_SEARCH_RESULTS}"
    if isinstance(limit, bool) or not isinstance(limit, (int, float, str)):
        raise ValueError(wrong)
    try:
        limit = max(1, min(MAX_SEARCH_RESULTS, int(limit)))
    except (ValueError, OverflowError):
        raise ValueError(wrong) from None
    return query.strip()[:MAX_QUERY_CHARS], limit


def _why_by_words(rt: PluginRuntime, reply: Reply) -> str:
    """The ``note`` of an answer by words: why the worker did not answer, with the fix."""
    reason = (reply.error or routing_problem(rt)
              or f"the routing worker did not answer; check with: {hermes_command(rt.home)} doctor")
    return (f"semantic search is unavailable ({reason}); these skills share words with the query in their names "
            "and descriptions")


def _marked(result, pinned: frozenset[str]) -> dict | None:
    """A result as the model reads it (its name and description escaped as a block's are), with
    ``already_loaded`` when the skill is pinned into the system prompt; None for anything else."""
    if not isinstance(result, dict) or not isinstance(result.get("name"), str):
        return None
    description = result.get("description") if isinstance(result.get("description"), str) else ""
    marked = {**result, "name": name_for_model(result["name"]), "description": neutralise(description)}
    return {**marked, "already_loaded": True} if result["name"] in pinned else marked


def _best(best, max_chars: int, pinned: frozenset[str]) -> dict | None:
    """The best match with its body capped at ``max_chars`` (``truncated`` says whether it was); a pinned skill
    is named, not repeated."""
    if not isinstance(best, dict) or not isinstance(best.get("body"), str):
        return None
    name, body, omitted = str(best.get("name")), best["body"], int(best.get("omitted") or 0)
    if name in pinned:
        return {"name": name_for_model(name), "already_loaded": True, "content": PINNED_NOTE, "truncated": False}
    escaped = body if best.get("escaped") is True else neutralise(body)  # the worker escapes it, once per version
    return {"name": name_for_model(name), "content": cap_body(name, escaped, max_chars, omitted),
            "truncated": len(escaped) + omitted > max_chars}


def _error(status: str, message: str) -> str:
    return json.dumps({"error": message, "status": status}, ensure_ascii=False)
