"""Which indexed skills Hermes would offer in this session, asked of Hermes itself, in the host.

The worker ranks; these rules decide what it may rank, per message, because
they depend on the session and on the Hermes that runs it. Each rule is
Hermes' own function wherever the running Hermes has one, so every version
gets its own behaviour (a JSON-list ``skills.disabled`` on 0.21, none of the
project-skill tier on 0.19):

- ``skills.disabled`` / ``platform_disabled``: ``get_disabled_skill_names``;
- ``environments:``: ``skill_matches_environment``, asked for every message
  (Hermes 0.21 no longer caches the kanban answer);
- ``metadata.hermes`` ``requires_*`` / ``fallback_for_*`` / ``session_platforms``:
  ``agent.prompt_builder._skill_should_show``, given the tools and toolsets
  the agent's last provider request offered for this home and platform (the
  session's tool view, see ``hermes/prompt/tools_view.py``); until then, as in
  Hermes without that information, only ``session_platforms`` applies;
- trusted project skills: offered only while their project is one of
  ``get_project_skills_dirs()`` and ``is_quarantined_project_skill`` (asked
  off the gateway's loop, with the home passed explicitly) found it safe;
- organisation mirrors: only the active organisation's (``read_active_org_id``,
  see orgs.py), and a switch asks for a re-index;
- pinned skills (0.21 ``skills.auto_load``, read with Hermes'
  ``resolve_auto_load_skills``): Hermes writes them in full into every new
  session's system prompt, so a message never gets one again, and
  ``search_skills`` lists one as already loaded.

Skills read from disk (the word-search fallback, ``doctor``) are judged by the
same offer: :meth:`Offer.hidden_by` names the rule that hides one.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Callable

from ...skills.discovery import SkillsRoot, org_of
from ...skills.eligibility import environments_allow, platforms_allow
from ...skills.parsing import Skill
from ..config import disabled_skill_names
from ..host import skills as hermes_skills
from ..prompt.tools_view import session_tools
from .orgs import ActiveOrgs

METADATA_NAMESPACE = "hermes"  # the namespace under a skill's ``metadata`` whose offer conditions Hermes applies
DISABLED, PLATFORMS, ENVIRONMENTS = "skills.disabled", "platforms:", "environments:"  # what hides a skill on disk


@dataclass(frozen=True)
class Offer:
    """What one message may be routed to: the names to leave out, and the environments found inactive.

    ``exclude`` holds the ``pinned`` skills too (already in the system prompt):
    routing leaves them out, ``search_skills`` lists them as loaded.
    """

    exclude: frozenset[str]
    inactive_environments: frozenset[str]
    reindex: bool = False  # the index no longer matches what Hermes offers (an organisation switch)
    pinned: frozenset[str] = frozenset()

    def hidden_by(self, skill: Skill) -> str | None:
        """The rule that keeps ``skill`` (read from disk) out of this offer, or None when it is offered."""
        excluded = self.exclude - self.pinned
        if skill.name in excluded or skill.folder in excluded:
            return DISABLED
        if not platforms_allow(skill.platforms):
            return PLATFORMS
        if not environments_allow(skill.environments, self.inactive_environments):
            return ENVIRONMENTS
        return None


def session_dependent(skill: Skill, roots: list[SkillsRoot]) -> bool:
    """Whether ``skill``'s offer depends on the session: its ``metadata.hermes`` conditions, a trusted project
    folder or an organisation mirror (a caller without the session leaves such a skill out)."""
    if has_conditions(skill):
        return True
    path = Path(skill.path)
    return any((root.project and path.is_relative_to(root.path)) or org_of(skill.path, root.path) for root in roots)


def has_conditions(skill: Skill) -> bool:
    """Whether ``skill`` carries ``metadata.hermes`` offer conditions (``requires_*``, ``fallback_for_*``...)."""
    return bool(dict(skill.conditions).get(METADATA_NAMESPACE))


class Eligibility:
    """The offer rules for one Hermes home; ``config`` returns its parsed config.yaml."""

    def __init__(self, home: Path, config: Callable[[], dict], log_once):
        self.home = home
        self._config = config
        self._log_once = log_once
        self._quarantine: dict[str, bool] = {}  # project SKILL.md -> quarantined, once Hermes has said
        self._scanning: set[str] = set()
        self._lock = threading.Lock()
        self.orgs = ActiveOrgs(home / "skills", hermes_skills.active_org_id)

    def offer(self, platform: str, gated: tuple[dict, ...]) -> Offer:
        """The exclusions for a message on ``platform`` (``""`` when unknown); never raises."""
        other_orgs, org_switched = self.orgs.check(gated)
        exclude = self.disabled(platform) | self._hidden(platform, gated) | other_orgs
        pinned = self.pinned() - exclude
        return Offer(exclude | pinned, self.inactive_environments(), reindex=org_switched, pinned=pinned)

    def pinned(self) -> frozenset[str]:
        """The skills Hermes loads in full into each new session (``skills.auto_load``), by the name or folder
        the worker matches: each entry's last path part (an entry may be a name or a path)."""
        try:
            entries = hermes_skills.auto_load_entries(self._config())
        except Exception as exc:  # noqa: BLE001 - as Hermes when it cannot read the setting: nothing is pinned
            self._log_once(logging.WARNING, f"cannot read skills.auto_load through Hermes ({exc}); pinned skills "
                                            "may also be injected into messages")
            return frozenset()
        names = set()
        for entry in entries or ():
            path = PurePosixPath(str(entry).strip().replace("\\", "/"))
            names.add(path.parent.name if path.name == "SKILL.md" else path.name)
        return frozenset(name for name in names if name)

    def disabled(self, platform: str) -> frozenset[str]:
        try:
            found = hermes_skills.disabled_skills(platform)
        except Exception as exc:  # noqa: BLE001 - fall back to reading the config ourselves
            self._log_once(logging.WARNING, f"Hermes' get_disabled_skill_names failed ({exc}); "
                                            "reading skills.disabled from config.yaml instead")
            found = None
        return found if found is not None else disabled_skill_names(self._config(), platform or None)

    def inactive_environments(self) -> frozenset[str]:
        try:
            inactive = hermes_skills.inactive_environments()
            problem = "this Hermes has no skill_matches_environment" if inactive is None else ""
        except Exception as exc:  # noqa: BLE001 - no detection: hide nothing for its environments
            inactive, problem = None, str(exc)
        if inactive is None:
            self._log_once(logging.WARNING, f"cannot ask Hermes which environments are active ({problem}); skills "
                                            "are offered whatever their environments:")
        return inactive or frozenset()

    def _hidden(self, platform: str, gated: tuple[dict, ...]) -> frozenset[str]:
        if not gated:
            return frozenset()
        shows = self._condition_rule(platform)
        projects = hermes_skills.active_project_dirs() if any(g.get("project_root") for g in gated) else set()
        hidden = set()
        for skill in gated:
            root = skill.get("project_root")
            conditions = (skill.get("conditions") or {}).get(METADATA_NAMESPACE)
            if root and (root not in projects or self._quarantined(skill["path"])):
                hidden.add(skill["name"])
            elif conditions and not shows(conditions):
                hidden.add(skill["name"])
        return frozenset(hidden)

    def _condition_rule(self, platform: str) -> Callable[[dict], bool]:
        tools, toolsets = session_tools(self.home, platform) or (None, None)
        shows = hermes_skills.condition_rule(tools, toolsets, platform)
        if shows is None:
            self._log_once(logging.WARNING, "this Hermes has no _skill_should_show: skills with requires_* or "
                                            "fallback_for_* conditions are offered whatever the session's tools")
            return lambda conditions: True
        return shows

    def _quarantined(self, path: str) -> bool:
        """Hermes' verdict on a project skill; True (hidden) until it has one, which is asked off this thread."""
        with self._lock:
            verdict = self._quarantine.get(path)
            if verdict is None and path not in self._scanning:
                self._scanning.add(path)
                threading.Thread(target=self._scan, args=(path,), name="semantic-skills-scan", daemon=True).start()
        return verdict is not False

    def _scan(self, path: str) -> None:
        verdict = hermes_skills.quarantined_project_skill(path, self.home)
        with self._lock:
            self._quarantine[path] = verdict
            self._scanning.discard(path)
