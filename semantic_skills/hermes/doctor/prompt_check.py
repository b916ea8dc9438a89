"""The doctor's ``listing`` line: whether sessions get the compact section in place of Hermes' skills listing.

The swap replaces only the exact bytes Hermes' own builder renders for a
session (``host/listing.py``). This line rebuilds the listing a CLI session of
this home gets, so a Hermes without that builder, or whose builder fails,
shows here before any session; and it reads what the running plugin recorded
the last time a session kept Hermes' listing because the plugin could not be
sure where it lay (``prompt/kept.py``), until a later session gets the stub.
"""

from __future__ import annotations

import time

from ..host.listing import ListingUnknown, session_listing
from ..host.lookup import hermes_installed
from ..prompt.kept import last_kept
from ..prompt.stub import COMPACT, COMPACT_SKILLS_PROMPT
from .report import OK, SKIP, WARN, Check, Setup

NAME = "listing"
CLI_TOOLS = frozenset({"skills_list", "skill_view", "skill_manage"})  # Hermes' skills toolset, on every platform
SEEN_FIXES = {
    "times in its system prompt": "remove the copy of Hermes' skills listing from the context file (AGENTS.md, "
                                  "SOUL.md, .cursorrules...) or memory entry that holds it",
    "is not in its system prompt": "nothing for sessions that began before their skills changed; if new sessions "
                                   "keep it too, see agent.log for the first such session",
}


def listing_check(setup: Setup) -> Check:
    """``ok`` when sessions get the stub in place of Hermes' listing (or ``prompt_mode: full`` keeps it);
    ``warn`` when the plugin cannot tell Hermes' listing from other text here, or a session kept it lately."""
    if not hermes_installed():
        return Check(NAME, SKIP, "checked once Hermes imports in this Python (see hermes above)")
    if setup.settings.prompt_mode != COMPACT:
        return Check(NAME, OK, f"prompt_mode {setup.settings.prompt_mode}: sessions keep Hermes' own skills listing")
    try:
        listing = session_listing(CLI_TOOLS, "cli", setup.home)
    except ListingUnknown as exc:
        return Check(NAME, WARN, f"{exc}: sessions keep Hermes' own skills listing, since the plugin replaces only "
                                 "what Hermes' builder renders", f"{setup.hermes} update", {"rebuilt": False})
    facts = {"rebuilt": True, "listing_chars": len(listing), "stub_chars": len(COMPACT_SKILLS_PROMPT)}
    seen = last_kept(setup.home)
    if seen is not None:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(seen.when))
        facts["kept"] = {"when": seen.when, "reason": seen.reason}
        fix = next((fix for words, fix in SEEN_FIXES.items() if words in seen.reason), "see agent.log")
        return Check(NAME, WARN, f"on {when} a session kept Hermes' own skills listing: {seen.reason}", fix, facts)
    if not listing:
        return Check(NAME, OK, "Hermes lists no skill here: there is no listing to replace", facts=facts)
    return Check(NAME, OK, f"while routing works, each session's system prompt carries the "
                           f"{len(COMPACT_SKILLS_PROMPT):,}-character compact section in place of Hermes' "
                           f"{len(listing):,}-character listing", facts=facts)
