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
  the agent last built its prompt with for this home and platform (seen by
  the skills-prompt wrapper); until then, as in Hermes without that
  information, only ``session_platforms`` applies;
- trusted project skills: offered only while their project is one of
  ``get_project_skills_dirs()`` and ``is_quarantined_project_skill`` (asked
  off the gateway's loop, with the home passed explicitly) found it safe;
- organisation mirrors: only the active organisation's (``read_active_org_id``,
  see orgs.py), and a switch asks for a re-index;
- pinned skills (0.21 ``skills.auto_load``, read with Hermes'
  ``resolve_auto_load_skills``): Hermes writes them in full into every new
  session's system prompt, so a message never gets one again, and
  ``search_skills`` lists one as already loaded.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Callable, Iterator

from ..skills.discovery import SkillsRoot, read_active_org
from .capabilities import hermes_function, parameters
from .config import disabled_skill_names
from .orgs import ActiveOrgs

HERMES_ENVIRONMENTS = ("kanban", "docker", "s6")
METADATA_NAMESPACE = "hermes"  # the namespace under a skill's ``metadata`` whose offer conditions Hermes applies

_tool_views: dict[tuple[str, str], tuple[frozenset[str], frozenset[str]]] = {}
_tool_views_lock = threading.Lock()


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


def current_platform() -> str:
    """The chat platform of the running session, as Hermes' prompt builder finds it (``""`` when unknown)."""
    platform = os.environ.get("HERMES_PLATFORM") or os.environ.get("HERMES_SESSION_PLATFORM")
    if platform:
        return platform
    get_session_env = getattr(sys.modules.get("gateway.session_context"), "get_session_env", None)
    try:
        return str(get_session_env("HERMES_SESSION_PLATFORM") or "") if get_session_env else ""
    except Exception:  # noqa: BLE001
        return ""


def observe_prompt_build(arguments: dict, home: Path) -> None:
    """Remember the tools and toolsets an agent built its skills prompt with, for ``home`` and this platform."""
    tools, toolsets = arguments.get("available_tools"), arguments.get("available_toolsets")
    if tools is None and toolsets is None:
        return
    key = (str(home), current_platform())
    with _tool_views_lock:
        _tool_views[key] = (frozenset(tools or ()), frozenset(toolsets or ()))


def session_tools(home: Path, platform: str) -> tuple[frozenset[str], frozenset[str]] | None:
    with _tool_views_lock:
        return _tool_views.get((str(home), platform))


def read_active_org_id(skills_dir: Path) -> str:
    """The active organisation of ``skills_dir``'s mirrors, as the running Hermes reads it ("" for none)."""
    read = hermes_function("agent.skill_utils", "read_active_org_id")
    if read is None:
        return read_active_org(skills_dir)
    try:
        return str(read(skills_dir) or "")
    except Exception:  # noqa: BLE001 - as Hermes when it cannot read the marker: no organisation
        return ""


def hermes_skills_roots() -> list[SkillsRoot] | None:
    """The skills folders the running Hermes scans, in its order of precedence; None without Hermes.

    Trusted project folders first (Hermes 0.21+, for the current directory),
    then the profile's own, ``skills.create_dir`` and ``skills.external_dirs``.
    """
    all_dirs = hermes_function("agent.skill_utils", "get_all_skills_dirs")
    if all_dirs is None:
        return None
    external_dirs = hermes_function("agent.skill_utils", "get_external_skills_dirs")
    project_dirs = hermes_function("agent.skill_utils", "get_project_skills_dirs")
    try:
        external = {Path(d).resolve() for d in (external_dirs() if external_dirs else ())}
        roots = [SkillsRoot(Path(d).resolve(), project=True) for d in (project_dirs() if project_dirs else ())]
        roots += [SkillsRoot(Path(d).resolve(), external=Path(d).resolve() in external) for d in all_dirs()]
    except Exception:  # noqa: BLE001 - Hermes could not say: the caller reads config.yaml itself
        return None
    unique: dict[Path, SkillsRoot] = {}
    for root in roots:
        unique.setdefault(root.path, root)
    return list(unique.values())


class Eligibility:
    """The offer rules for one Hermes home; ``config`` returns its parsed config.yaml."""

    def __init__(self, home: Path, config: Callable[[], dict], log_once):
        self.home = home
        self._config = config
        self._log_once = log_once
        self._quarantine: dict[str, bool] = {}  # project SKILL.md -> quarantined, once Hermes has said
        self._scanning: set[str] = set()
        self._lock = threading.Lock()
        self.orgs = ActiveOrgs(home / "skills", read_active_org_id)

    def offer(self, platform: str, gated: tuple[dict, ...]) -> Offer:
        """The exclusions for a message on ``platform`` (``""`` when unknown); never raises."""
        other_orgs, org_switched = self.orgs.check(gated)
        exclude = self.disabled(platform) | self._hidden(platform, gated) | other_orgs
        pinned = self.pinned() - exclude
        return Offer(exclude | pinned, self.inactive_environments(), reindex=org_switched, pinned=pinned)

    def pinned(self) -> frozenset[str]:
        """The skills Hermes loads in full into each new session (``skills.auto_load``), by the name or folder
        the worker matches: each entry's last path part (an entry may be a name or a path)."""
        resolve = hermes_function("agent.skill_commands", "resolve_auto_load_skills")
        if resolve is None or _ignoring_rules():
            return frozenset()
        try:
            entries = resolve(self._config())
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
        get_disabled = hermes_function("agent.skill_utils", "get_disabled_skill_names")
        if get_disabled is not None:
            try:
                return frozenset(get_disabled(platform or None))
            except Exception as exc:  # noqa: BLE001 - fall back to reading the config ourselves
                self._log_once(logging.WARNING, f"Hermes' get_disabled_skill_names failed ({exc}); "
                                                "reading skills.disabled from config.yaml instead")
        return disabled_skill_names(self._config(), platform or None)

    def inactive_environments(self) -> frozenset[str]:
        matches = hermes_function("agent.skill_utils", "skill_matches_environment")
        try:
            return frozenset(env for env in HERMES_ENVIRONMENTS if not matches({"environments": [env]}))
        except Exception as exc:  # noqa: BLE001 - no detection: hide nothing for its environments
            self._log_once(logging.WARNING, f"cannot ask Hermes which environments are active ({exc}); skills "
                                            "are offered whatever their environments:")
            return frozenset()

    def _hidden(self, platform: str, gated: tuple[dict, ...]) -> frozenset[str]:
        if not gated:
            return frozenset()
        shows = self._condition_rule(platform)
        projects = self._active_project_dirs() if any(g.get("project_root") for g in gated) else set()
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
        should_show = hermes_function("agent.prompt_builder", "_skill_should_show")
        if should_show is None:
            self._log_once(logging.WARNING, "this Hermes has no _skill_should_show: skills with requires_* or "
                                            "fallback_for_* conditions are offered whatever the session's tools")
            return lambda conditions: True
        tools, toolsets = session_tools(self.home, platform) or (None, None)
        with_platform = "session_platform" in parameters(should_show)

        def shows(conditions: dict) -> bool:
            try:
                if with_platform:
                    return bool(should_show(conditions, tools, toolsets, platform or None))
                return bool(should_show(conditions, tools, toolsets))
            except Exception:  # noqa: BLE001 - as Hermes when it cannot read a skill: offer it
                return True

        return shows

    def _active_project_dirs(self) -> set[str]:
        project_dirs = hermes_function("agent.skill_utils", "get_project_skills_dirs")
        try:
            return {str(Path(d)) for d in project_dirs()} if project_dirs else set()
        except Exception:  # noqa: BLE001 - cannot tell: no project is active
            return set()

    def _quarantined(self, path: str) -> bool:
        """Hermes' verdict on a project skill; True (hidden) until it has one, which is asked off this thread."""
        with self._lock:
            verdict = self._quarantine.get(path)
            if verdict is None and path not in self._scanning:
                self._scanning.add(path)
                threading.Thread(target=self._scan, args=(path,), name="semantic-skills-scan", daemon=True).start()
        return verdict is not False

    def _scan(self, path: str) -> None:
        quarantined = hermes_function("agent.skill_utils", "is_quarantined_project_skill")
        verdict = True
        try:
            with hermes_home_bound(self.home):
                verdict = bool(quarantined(path)) if quarantined else True
        except Exception:  # noqa: BLE001 - as Hermes: a scan that fails quarantines
            verdict = True
        with self._lock:
            self._quarantine[path] = verdict
            self._scanning.discard(path)


def _ignoring_rules() -> bool:
    """``HERMES_IGNORE_RULES`` (``--ignore-rules``): Hermes then pins no skill into the prompt."""
    is_truthy = hermes_function("utils", "is_truthy_value")
    value = os.environ.get("HERMES_IGNORE_RULES")
    try:
        return bool(is_truthy(value)) if is_truthy else False
    except Exception:  # noqa: BLE001
        return False


@contextmanager
def hermes_home_bound(home: Path) -> Iterator[None]:
    """Hermes' home bound to ``home`` in this thread's context (a thread of ours does not inherit the caller's)."""
    constants = sys.modules.get("hermes_constants")
    bind = getattr(constants, "set_hermes_home_override", None)
    token = bind(str(home)) if callable(bind) else None
    try:
        yield
    finally:
        if token is not None:
            constants.reset_hermes_home_override(token)
