"""What Hermes caps: the length of hook context it passes on unchanged, and how long a hook callback may run."""

from __future__ import annotations

import math

from .lookup import hermes_function

# Hermes 0.21's default (hermes_cli/plugins_dispatch.py): a pre_llm_call or post_tool_call callback that runs
# longer than plugins.hook_callback_timeout is abandoned, then muted for 60 s. Used where this Hermes does not say.
DEFAULT_HOOK_TIMEOUT_SECONDS = 30.0


def hook_context_limit() -> int | None:
    """The longest ``pre_llm_call`` context Hermes passes on as it is, if it has such a limit.

    Hermes replaces hook context longer than ``hooks.output_spill.max_chars``
    with a short preview and a file path. Gateway blocks keep the same limit,
    so a skill arrives with the same bytes on either path.
    """
    try:
        spill = hook_output_spill()
        return int(spill["max_chars"]) if spill and spill.get("enabled") else None
    except Exception:  # noqa: BLE001 - an unreadable setting: no limit known
        return None


def hook_output_spill() -> dict | None:
    """Hermes' hook output spilling settings (``enabled``, ``max_chars``), or None when it has none."""
    get_spill_config = hermes_function("tools.hook_output_spill", "get_spill_config")
    return get_spill_config() if get_spill_config else None


def host_hook_timeout() -> float:
    """Seconds after which Hermes abandons a ``pre_llm_call`` callback: its ``plugins.hook_callback_timeout``
    as it resolves it, ``inf`` when that is switched off, :data:`DEFAULT_HOOK_TIMEOUT_SECONDS` when this
    Hermes does not say."""
    resolve = hermes_function("hermes_cli.plugins", "_resolve_hook_callback_timeout")
    if resolve is None:
        return DEFAULT_HOOK_TIMEOUT_SECONDS
    try:
        seconds = float(resolve())
    except Exception:  # noqa: BLE001 - an unreadable setting: Hermes itself falls back to its default
        return DEFAULT_HOOK_TIMEOUT_SECONDS
    return seconds if seconds > 0 else math.inf


def hook_timeout_is_known() -> bool:
    """True when this Hermes says how long a hook callback may run."""
    return hermes_function("hermes_cli.plugins", "_resolve_hook_callback_timeout") is not None
