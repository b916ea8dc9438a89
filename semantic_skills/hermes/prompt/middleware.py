"""The stub on each outgoing provider request, through Hermes' public ``llm_request`` middleware.

Hermes builds its system prompt, listing included, and stores it as it is;
this middleware replaces the listing (see listing.py) in the request about to
be sent, so the stored session, ``/undo`` and a plugin switched off all keep
Hermes' own prompt, and every request of a session carries the same bytes.
Only agent-loop requests reach middleware (turns, subagents, cron); Hermes'
side calls (titles, compression summaries) never do, and carry no listing.

Where the request's shape or the listing is not what Hermes writes, the
request goes out unchanged and the reason is logged once. The request also
tells which tools the session offers: recorded as its tool view, an input of
the offer rules (see tools_view.py).
"""

from __future__ import annotations

import logging

from ..host.tools import toolsets_of
from ..runtime import PluginRuntime
from . import tools_view
from .listing import Unrecognised, listing_span
from .mode import prompt_mode
from .request import offered_on_demand, replaced, system_texts, tool_names
from .stub import COMPACT, SEARCH_TOOL, compact_skills_prompt

KIND = "llm_request"
SOURCE = "semantic-skills"


def on_llm_request(rt: PluginRuntime, request=None, session_id=None, platform=None, **_) -> dict | None:
    """``{"request": ...}`` with the compact skills section in place of Hermes' listing, or None to leave the
    request as Hermes built it."""
    if not isinstance(request, dict):
        return None
    names = tool_names(request)
    if names:
        tools_view.observe(rt.home, names, toolsets_of(names), platform or "")
    if prompt_mode(rt, session_id) != COMPACT:
        return None
    for path, text in system_texts(request):
        try:
            span = listing_span(text)
        except Unrecognised as exc:
            rt.log_once(logging.WARNING, f"the skills listing in this Hermes' system prompt is not in a shape this "
                                         f"plugin recognises ({exc}); Hermes' own listing is sent")
            return None
        if span is not None:
            stub = section_for(request)
            start, end = span
            return {"request": replaced(request, path, text[:start] + stub + text[end:]), "source": SOURCE,
                    "reason": "the compact skills section in place of Hermes' listing"}
    return None


def section_for(request: dict) -> str:
    """The stub's variant for the tools ``request`` offers: ``search_skills`` directly, on demand behind Hermes'
    tool search, or not at all (the same bytes for every request of a session)."""
    names = tool_names(request)
    return compact_skills_prompt(names or None, offered_on_demand(request, SEARCH_TOOL))
