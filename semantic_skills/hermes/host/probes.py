"""What the running Hermes offers this plugin, found by probing its modules, never by its version number.

:func:`probe` answers without a plugin context and never raises; each
:class:`Capability` says in one line what was found, or what is missing and
what the plugin does instead. ``register()`` logs the ones it cannot use, and
``semantic-skills doctor`` shows them all. The probes name the functions the
plugin calls, so a Hermes that renames one shows up here first.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Callable

from .gateway import AUTHORIZATION_METHODS
from .home import hermes_home
from .limits import DEFAULT_HOOK_TIMEOUT_SECONDS, hook_output_spill, hook_timeout_is_known, host_hook_timeout
from .lookup import attribute, hermes_function, module, parameters, valid_hooks

SKILLS_PROMPT = "skills_prompt"
GATEWAY_AUTHORIZATION = "gateway_authorization"
PENDING_INPUT = "pending_input"
SECRET_CAPTURE = "secret_capture"
UPDATE_PROMPT = "update_prompt"
SKILL_LIFECYCLE = "skill_lifecycle"
TOOL_CALL_HOOK = "post_tool_call"
PLUGIN_CONFIG = "plugin_config"
PROFILE_HOME = "profile_home"
HOOK_OUTPUT_CAP = "hook_output_cap"
SKILL_CONDITIONS = "skill_conditions"
DISABLED_SKILLS = "disabled_skills"
ENVIRONMENTS = "environments"
PROJECT_SKILLS = "project_skills"
HOOK_TIME_LIMIT = "hook_time_limit"
PINNED_SKILLS = "pinned_skills"

# Missing in an older Hermes because that Hermes does not have the feature either: nothing is lost.
ABSENT_FEATURES = frozenset({SECRET_CAPTURE, SKILL_LIFECYCLE, PROJECT_SKILLS, PLUGIN_CONFIG, HOOK_TIME_LIMIT,
                            PINNED_SKILLS})


@dataclass(frozen=True)
class Capability:
    """One thing the plugin needs from Hermes: found or not, and in one line what follows."""

    name: str
    available: bool
    detail: str


def probe(load_gateway: bool) -> list[Capability]:
    """Every capability, probed in this process (imports Hermes modules as needed, never raises); the gateway's
    module is imported only with ``load_gateway`` (it costs ~0.2 s)."""
    probes: list[tuple[str, Callable[[], tuple[bool, str]]]] = [
        (SKILLS_PROMPT, _skills_prompt),
        (PENDING_INPUT, _pending_input),
        (SECRET_CAPTURE, _secret_capture),
        (SKILL_LIFECYCLE, lambda: _hook("on_skill_lifecycle", "re-indexes when Hermes reports a skill "
                                        "created, edited, installed or archived",
                                        "re-indexes after skill_manage calls only; skills installed "
                                        "from the hub need: semantic-skills build")),
        (TOOL_CALL_HOOK, lambda: _hook("post_tool_call", "re-indexes after each skill_manage call",
                                       "no automatic re-index: run semantic-skills build after changing skills")),
        (PLUGIN_CONFIG, _present("hermes_cli.plugins", ("PluginContext.get_config",),
                                 "settings are read with ctx.get_config (plugins.entries.semantic-skills.settings)",
                                 "no ctx.get_config: settings are read from config.yaml "
                                 "(plugins.entries.semantic-skills.settings)")),
        (PROFILE_HOME, _profile_home),
        (HOOK_OUTPUT_CAP, _hook_output_cap),
        (HOOK_TIME_LIMIT, _hook_time_limit),
        (SKILL_CONDITIONS, _skill_conditions),
        (DISABLED_SKILLS, _present("agent.skill_utils", ("get_disabled_skill_names",),
                                   "skills.disabled and skills.platform_disabled are read by Hermes' "
                                   "get_disabled_skill_names",
                                   "no get_disabled_skill_names: skills.disabled is read from config.yaml by the "
                                   "plugin")),
        (ENVIRONMENTS, _present("agent.skill_utils", ("skill_matches_environment",),
                                "environments: (kanban, docker, s6) are asked of Hermes for each message",
                                "no skill_matches_environment: skills are offered whatever their environments:")),
        (PROJECT_SKILLS, _present("agent.skill_utils", ("get_project_skills_dirs", "is_quarantined_project_skill"),
                                  "trusted project skills (.hermes/skills, .agents/skills) are indexed; quarantined "
                                  "ones are never offered",
                                  "this Hermes has no trusted project skills: none are indexed")),
        (PINNED_SKILLS, _present("agent.skill_commands", ("resolve_auto_load_skills",),
                                 "skills.auto_load skills are already in each session's system prompt: never "
                                 "injected again, and search_skills lists them as loaded",
                                 "this Hermes pins no skill into the system prompt (no skills.auto_load)")),
    ]
    if load_gateway or "gateway.run" in sys.modules:
        probes[1:1] = [(GATEWAY_AUTHORIZATION, _gateway_authorization), (UPDATE_PROMPT, _update_prompt)]
    return [_run(name, check) for name, check in probes]


def _run(name: str, check: Callable[[], tuple[bool, str]]) -> Capability:
    try:
        available, detail = check()
    except Exception as exc:  # noqa: BLE001 - a probe must answer, not raise
        available, detail = False, f"probe failed ({type(exc).__name__}: {exc})"
    return Capability(name, available, detail)


def _present(module: str, names: tuple[str, ...], found: str, missing: str) -> Callable[[], tuple[bool, str]]:
    """A probe that finds every one of ``names`` in ``module``; ``found`` / ``missing`` say what follows."""

    def check() -> tuple[bool, str]:
        present = all(hermes_function(module, name) for name in names)
        return (True, found) if present else (False, missing)

    return check


# --------------------------------------------------------------------------- probes


def _skills_prompt() -> tuple[bool, str]:
    if not callable(attribute("hermes_cli.plugins", "PluginContext.register_middleware")):
        return False, ("no ctx.register_middleware: Hermes' own skills listing stays in the system prompt (skills "
                       "are still injected into messages)")
    kinds = getattr(module("hermes_cli.middleware"), "VALID_MIDDLEWARE", None) or ()
    if "llm_request" not in kinds:
        return False, ("no llm_request middleware: Hermes' own skills listing stays in the system prompt (skills "
                       "are still injected into messages)")
    return True, "llm_request middleware: each request carries the compact skills section in place of the listing"


def _profile_home() -> tuple[bool, str]:
    if hermes_function("hermes_constants", "get_hermes_home"):
        return True, "hermes_constants.get_hermes_home() gives each call's profile home"
    return False, (f"no hermes_constants.get_hermes_home: every call uses {hermes_home()} (the HERMES_HOME "
                   "variable, else ~/.hermes)")


def _gateway_runner():
    return attribute("gateway.run", "GatewayRunner")


def _gateway_authorization() -> tuple[bool, str]:
    runner = _gateway_runner()
    for name in AUTHORIZATION_METHODS:
        if callable(getattr(runner, name, None)):
            return True, f"GatewayRunner.{name}(source) gives the gateway's verdict before a message is routed"
    return False, (f"the gateway has no {' or '.join(AUTHORIZATION_METHODS)}: gateway messages pass through "
                   "unrouted (the agent-side hook still adds their skill)")


def _update_prompt() -> tuple[bool, str]:
    runner = _gateway_runner()
    if callable(getattr(runner, "_peek_session_state", None)):
        return True, "an /update answer is seen in the session state (persistent.update_prompt_pending)"
    if runner is not None:
        return True, "an /update answer is seen in gateway._update_prompt_pending"
    return False, "the gateway is not importable: /update answers cannot be recognised"


def _pending_input() -> tuple[bool, str]:
    found = [f"{module}.{name}" for module, name in (("tools.clarify_gateway", "get_pending_for_session"),
                                                      ("tools.slash_confirm", "get_pending"),
                                                      ("tools.approval", "has_blocking_approval"))
             if hermes_function(module, name)]
    if not found:
        return False, "no clarify, confirm or approval state found: replies to such prompts may be routed"
    return True, "replies to pending prompts pass through untouched (" + ", ".join(found) + ")"


def _secret_capture() -> tuple[bool, str]:
    if module("tools.secret_capture_gateway") is None:
        return False, "this Hermes never captures a secret from chat: nothing to guard"
    for name in ("get_pending_for_session", "has_pending"):
        if hermes_function("tools.secret_capture_gateway", name):
            return True, f"a message awaited as a secret is never routed, embedded or logged ({name})"
    return False, ("tools.secret_capture_gateway has no get_pending_for_session or has_pending: every gateway "
                   "message passes through unrouted while that module is loaded")


def _hook(name: str, effect: str, instead: str) -> tuple[bool, str]:
    if name in (valid_hooks() or ()):
        return True, f"hook {name}: {effect}"
    return False, f"no {name} hook: {instead}"


def _hook_output_cap() -> tuple[bool, str]:
    spill = hook_output_spill()
    if spill is None:
        return False, "no hook output cap found: pre_llm_call context is capped by max_skill_chars only"
    if not spill.get("enabled"):
        return True, "hook output spilling is off: pre_llm_call context is capped by max_skill_chars only"
    return True, f"hook output over {int(spill['max_chars']):,} characters is spilled to a file: skills are cut to fit"


def _hook_time_limit() -> tuple[bool, str]:
    if not hook_timeout_is_known():
        return False, (f"this Hermes sets no time limit on hook callbacks: pre_llm_call waits as if it were "
                       f"{DEFAULT_HOOK_TIMEOUT_SECONDS:.0f} s, Hermes 0.21's default")
    seconds = host_hook_timeout()
    if math.isinf(seconds):
        return True, "plugins.hook_callback_timeout is off: pre_llm_call waits as long as its settings say"
    return True, (f"Hermes abandons a hook callback after {seconds:g} s (plugins.hook_callback_timeout): "
                  f"pre_llm_call waits at most half of that")


def _skill_conditions() -> tuple[bool, str]:
    should_show = attribute("agent.prompt_builder", "_skill_should_show")
    if not callable(should_show):
        return False, ("no agent.prompt_builder._skill_should_show: requires_tools / fallback_for_* conditions "
                       "are not applied, conditioned skills stay offered")
    platforms = " and session_platforms" if "session_platform" in parameters(should_show) else ""
    return True, f"metadata.hermes requires_* / fallback_for_*{platforms} applied with Hermes' own rule"
