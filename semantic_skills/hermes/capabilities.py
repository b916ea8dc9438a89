"""What the running Hermes offers this plugin, found by probing (never by comparing versions).

A minimal set of probes: whether Hermes imports, its plugin hooks, the
skills-listing function the compact prompt replaces, and its limit on hook
context.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

HOOKS = ("pre_gateway_dispatch", "pre_llm_call", "on_session_reset")


@dataclass(frozen=True)
class Capability:
    name: str
    available: bool
    detail: str


def hermes_version() -> str:
    """The version Hermes reports, or ``""`` when Hermes does not import in this Python."""
    try:
        return str(getattr(importlib.import_module("hermes_cli"), "__version__", "") or "unknown")
    except Exception:  # noqa: BLE001
        return ""


def detect() -> list[Capability]:
    """Each capability this plugin uses, with whether this Python's Hermes has it; never raises."""
    return [_probe(name, probe) for name, probe in (
        ("hermes", _hermes),
        *((f"hook {hook}", _hook(hook)) for hook in HOOKS),
        ("skills prompt", _skills_prompt),
        ("context limit", _hook_context_limit),
    )]


def _probe(name: str, probe) -> Capability:
    try:
        available, detail = probe()
    except Exception as exc:  # noqa: BLE001 - a probe says what it could not find, never raises
        available, detail = False, f"{type(exc).__name__}: {exc}"
    return Capability(name, available, detail)


def _hermes() -> tuple[bool, str]:
    version = hermes_version()
    return bool(version), f"Hermes {version}" if version else "hermes_cli does not import in this Python"


def _hook(hook: str):
    def probe() -> tuple[bool, str]:
        valid = importlib.import_module("hermes_cli.plugins").VALID_HOOKS
        return hook in valid, "offered to plugins" if hook in valid else "not offered by this Hermes"

    return probe


def _skills_prompt() -> tuple[bool, str]:
    builder = getattr(importlib.import_module("agent.prompt_builder"), "build_skills_system_prompt", None)
    return callable(builder), ("agent.prompt_builder.build_skills_system_prompt" if callable(builder)
                               else "no build_skills_system_prompt: Hermes' skills listing stays")


def _hook_context_limit() -> tuple[bool, str]:
    config = importlib.import_module("tools.hook_output_spill").get_spill_config()
    if not config.get("enabled"):
        return True, "hooks.output_spill is off: no limit"
    return True, f"hooks.output_spill.max_chars = {config['max_chars']}"
