"""Hermes' own answers about skills: its folders, and the rules that decide which skills a session is offered.

Each function calls the running Hermes' function for it and returns None
where this Hermes has no such function; what Hermes raises is raised, for the
caller to decide what a failure means (see ``hermes/offer``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from ...skills.discovery import SkillsRoot, read_active_org
from .home import hermes_home_bound
from .lookup import hermes_function, parameters

SKILL_UTILS = "agent.skill_utils"
HERMES_ENVIRONMENTS = ("kanban", "docker", "s6")


def skills_roots() -> list[SkillsRoot] | None:
    """The skills folders the running Hermes scans, in its order of precedence; None without Hermes.

    Trusted project folders first (Hermes 0.21+, for the current directory),
    then the profile's own, ``skills.create_dir`` and ``skills.external_dirs``.
    """
    all_dirs = hermes_function(SKILL_UTILS, "get_all_skills_dirs")
    if all_dirs is None:
        return None
    external_dirs = hermes_function(SKILL_UTILS, "get_external_skills_dirs")
    project_dirs = hermes_function(SKILL_UTILS, "get_project_skills_dirs")
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


def disabled_skills(platform: str) -> frozenset[str] | None:
    """``skills.disabled`` and ``skills.platform_disabled`` as Hermes reads them for ``platform``."""
    get_disabled = hermes_function(SKILL_UTILS, "get_disabled_skill_names")
    return None if get_disabled is None else frozenset(get_disabled(platform or None))


def inactive_environments() -> frozenset[str] | None:
    """The ``environments:`` values (kanban, docker, s6) Hermes finds inactive in this process."""
    matches = hermes_function(SKILL_UTILS, "skill_matches_environment")
    if matches is None:
        return None
    return frozenset(env for env in HERMES_ENVIRONMENTS if not matches({"environments": [env]}))


def condition_rule(tools, toolsets, platform: str) -> Callable[[dict], bool] | None:
    """Hermes' rule for a skill's ``metadata.hermes`` conditions, for a session with these tools, toolsets and
    platform (tools and toolsets None when unknown); None when this Hermes has no such rule. The rule itself
    answers True (offered) when Hermes fails to read a skill's conditions, as Hermes does."""
    should_show = hermes_function("agent.prompt_builder", "_skill_should_show")
    if should_show is None:
        return None
    with_platform = "session_platform" in parameters(should_show)

    def shows(conditions: dict) -> bool:
        try:
            if with_platform:
                return bool(should_show(conditions, tools, toolsets, platform or None))
            return bool(should_show(conditions, tools, toolsets))
        except Exception:  # noqa: BLE001 - as Hermes when it cannot read a skill: offer it
            return True

    return shows


def active_project_dirs() -> set[str]:
    """The trusted project skills folders Hermes offers now (none where it has no project skills)."""
    project_dirs = hermes_function(SKILL_UTILS, "get_project_skills_dirs")
    try:
        return {str(Path(d)) for d in project_dirs()} if project_dirs else set()
    except Exception:  # noqa: BLE001 - cannot tell: no project is active
        return set()


def quarantined_project_skill(path: str, home: Path) -> bool:
    """Hermes' verdict on a project skill file, asked for ``home`` (slow: a scan); True when it cannot say."""
    quarantined = hermes_function(SKILL_UTILS, "is_quarantined_project_skill")
    try:
        with hermes_home_bound(home):
            return bool(quarantined(path)) if quarantined else True
    except Exception:  # noqa: BLE001 - as Hermes: a scan that fails quarantines
        return True


def active_org_id(skills_dir: Path) -> str:
    """The active organisation of ``skills_dir``'s mirrors, as the running Hermes reads it ("" for none).

    The plugin reads the marker first, without blocking and within a bound: one
    that is no small regular file (a FIFO, which hangs a plain read; a link to
    ``/dev/zero``) names none, and Hermes' own reader is then not asked.
    """
    try:
        own = read_active_org(skills_dir)
    except OSError:
        return ""
    read = hermes_function(SKILL_UTILS, "read_active_org_id")
    if read is None:
        return own
    try:
        return str(read(skills_dir) or "")
    except Exception:  # noqa: BLE001 - as Hermes when it cannot read the marker: no organisation
        return ""


def auto_load_entries(config: dict) -> list | None:
    """The ``skills.auto_load`` entries (names or paths) Hermes pins into every new session's system prompt;
    None when this Hermes pins nothing, [] while ``--ignore-rules`` is on."""
    resolve = hermes_function("agent.skill_commands", "resolve_auto_load_skills")
    if resolve is None:
        return None
    if _ignoring_rules():
        return []
    return list(resolve(config) or ())


def _ignoring_rules() -> bool:
    """``HERMES_IGNORE_RULES`` (``--ignore-rules``): Hermes then pins no skill into the prompt."""
    is_truthy = hermes_function("utils", "is_truthy_value")
    value = os.environ.get("HERMES_IGNORE_RULES")
    try:
        return bool(is_truthy(value)) if is_truthy else False
    except Exception:  # noqa: BLE001
        return False
