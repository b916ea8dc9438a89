"""Hermes' skills listing as Hermes' own builder renders it for a session: the only bytes the stub may replace.

Hermes' system prompt builder calls ``agent.prompt_builder.build_skills_system_prompt``
with the session's tools, their toolsets, the categories the coding posture
demotes (where this Hermes has one) and the session's skills folder (where
its builder takes one), and writes no listing at all for a session without a
skills tool. :func:`session_listing` makes the same call for the tools a
request offers, so it answers with the bytes Hermes wrote (its builder keeps
them cached for those arguments) or, where anything differs, with bytes that
are simply not found in the prompt.
"""

from __future__ import annotations

from pathlib import Path

from .lookup import hermes_function, parameters
from .tools import toolsets_of

PROMPT_BUILDER = "agent.prompt_builder"
BUILDER = "build_skills_system_prompt"
SKILLS_TOOLS = frozenset({"skills_list", "skill_view", "skill_manage"})  # Hermes lists skills only with one of them


class ListingUnknown(Exception):
    """Hermes' listing cannot be rebuilt here; the message says why."""


def session_listing(tools: frozenset[str], platform: str, home: Path) -> str:
    """The listing Hermes' builder renders for a session of ``home`` on ``platform`` offering ``tools``; ``""``
    where Hermes writes none (no skills tool, no skill). Raises :class:`ListingUnknown` when this Hermes has no
    such builder or it fails."""
    build = hermes_function(PROMPT_BUILDER, BUILDER)
    if build is None:
        raise ListingUnknown(f"this Hermes has no {PROMPT_BUILDER}.{BUILDER}")
    if not tools & SKILLS_TOOLS:
        return ""
    toolsets = toolsets_of(tools)
    if toolsets is None:
        raise ListingUnknown("this Hermes cannot say which toolsets the session's tools belong to")
    arguments = {"available_tools": set(tools), "available_toolsets": set(toolsets)}
    accepted = parameters(build)
    if "compact_categories" in accepted:
        arguments["compact_categories"] = demoted_categories(platform) or None
    if "skills_dir_override" in accepted:
        arguments["skills_dir_override"] = Path(home) / "skills"
    try:
        listing = build(**arguments)
    except Exception as exc:  # noqa: BLE001 - Hermes' own code failed: nothing to be sure of
        raise ListingUnknown(f"Hermes' {BUILDER} failed ({type(exc).__name__}: {exc})") from None
    if not isinstance(listing, str):
        raise ListingUnknown(f"Hermes' {BUILDER} returned {type(listing).__name__}, not text")
    return listing


def demoted_categories(platform: str) -> frozenset[str]:
    """The skill categories Hermes' coding posture lists by name only, as its prompt builder asks for them (an
    empty set where this Hermes has no posture, or it fails, as Hermes then uses)."""
    categories = hermes_function("agent.coding_context", "coding_compact_skill_categories")
    context_cwd = hermes_function("agent.runtime_cwd", "resolve_context_cwd")
    if categories is None or context_cwd is None:
        return frozenset()
    try:
        return frozenset(categories(platform=platform, cwd=context_cwd()))
    except Exception:  # noqa: BLE001 - as Hermes: no demotion
        return frozenset()
