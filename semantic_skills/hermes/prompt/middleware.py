"""The stub on each outgoing provider request, through Hermes' public ``llm_request`` middleware.

Hermes builds its system prompt, listing included, and stores it as it is;
this middleware replaces the listing in the request about to be sent, so the
stored session, ``/undo`` and a plugin switched off all keep Hermes' own
prompt. Only agent-loop requests reach middleware (turns, subagents, cron);
Hermes' side calls (titles, compression summaries) never do, and carry no
listing.

The listing is what Hermes' own builder renders for the session's tools
(``host/listing.py``), found as those exact bytes at one exact place
(``listing.py``), once per session (``decisions.py``): every request of a
session carries the same bytes. Where the plugin cannot be sure (no builder,
the bytes not found exactly once), the request goes out as Hermes built it,
the reason is logged once and kept for ``doctor`` (``kept.py``). The request
also tells which tools the session offers: recorded as its tool view, an
input of the offer rules (see tools_view.py).
"""

from __future__ import annotations

import logging

from ..host.listing import ListingUnknown, session_listing
from ..host.tools import toolsets_of
from ..runtime import PluginRuntime
from . import decisions, kept, tools_view
from .listing import Unsure, listing_span
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
    located = list(system_texts(request))
    texts = [text for _, text in located]
    key = decisions.texts_key(texts)
    decision = decisions.recall(rt.home, session_id, key)
    if decision is None:
        decision = _decide(rt, request, texts, key, platform or "")
        decisions.keep(rt.home, session_id, decision)
    if decision.span is None:
        return None
    path, text = located[decision.span.part]
    swapped = text[:decision.span.start] + decision.stub + text[decision.span.end:]
    return {"request": replaced(request, path, swapped), "source": SOURCE,
            "reason": "the compact skills section in place of Hermes' listing"}


def _decide(rt: PluginRuntime, request: dict, texts: list[str], key: int, platform: str) -> decisions.Decision:
    """Where this session's stub goes: Hermes' listing for its tools, found exactly once; else nowhere."""
    try:
        listing = session_listing(tool_names(request), platform, rt.home)
        if not listing:  # Hermes wrote none for this session: nothing to replace
            return decisions.Decision(key)
        span = listing_span(texts, listing)
    except (ListingUnknown, Unsure) as exc:
        rt.log_once(logging.WARNING, f"{exc}: this session's system prompt keeps Hermes' own skills listing (the "
                                     "plugin replaces nothing it cannot be sure is that listing)")
        kept.remember(rt.home, str(exc))
        return decisions.Decision(key)
    kept.forget(rt.home)
    return decisions.Decision(key, span, section_for(request))


def section_for(request: dict) -> str:
    """The stub's variant for the tools ``request`` offers: ``search_skills`` directly, on demand behind Hermes'
    tool search, or not at all."""
    names = tool_names(request)
    return compact_skills_prompt(names or None, offered_on_demand(request, SEARCH_TOOL))
