"""Whose code a Hermes home runs, and which other homes share what is installed in this Python.

Every home (profile) of one Hermes installation runs on the same Python, so
the packages pip installs there serve them all, and ``pip install -e`` ties
the one ``semantic_skills`` package pip knows to one home's plugin folder.
Hermes runs each home's own folder (the plugin folder's ``__init__.py``
imports it from there) unless its process had imported the package already.
What runs, and which homes have the plugin, is read here for ``register()``'s
log line, doctor's code check and the uninstall plan.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..requirements import CODE_FOLDER, editable_source
from .config import PLUGIN_NAME, plugin_folder


def running_elsewhere(home: Path) -> str:
    """One line saying that the code running here is not ``home``'s own plugin folder's, and whose it is; "" when
    it is, or when ``home`` has no plugin folder (the plugin check says so)."""
    own = plugin_folder(home)
    if not own.exists() or _same(CODE_FOLDER, own):
        return ""
    return f"the plugin's code running here is {CODE_FOLDER}{_whose(CODE_FOLDER, home)}, not this home's " \
           f"plugin folder {own}"


def other_homes(home: Path) -> list[Path]:
    """The other Hermes homes with the plugin installed that may run on this Python: the installation's root home
    and its profiles, and the home whose plugin folder pip installed the package from."""
    root = home.parent.parent if home.parent.name == "profiles" else home  # a profile is ROOT/profiles/NAME
    try:
        profiles = sorted(entry for entry in (root / "profiles").iterdir() if entry.is_dir())
    except OSError:
        profiles = []
    source = editable_source()
    installed_from = [source.parent.parent] if source is not None and _is_plugin_folder(source) else []
    found: list[Path] = []
    for candidate in [root, *profiles, *installed_from]:
        if os.path.lexists(plugin_folder(candidate)) and not _same(candidate, home) and candidate not in found:
            found.append(candidate)
    return found


def _whose(folder: Path, home: Path) -> str:
    """", the plugin folder of the Hermes home H" when ``folder`` is another home's plugin folder, else ""."""
    for other in other_homes(home):
        if _same(plugin_folder(other), folder):
            return f", the plugin folder of the Hermes home {other}"
    return f", the plugin folder of the Hermes home {folder.parent.parent}" if _is_plugin_folder(folder) else ""


def _is_plugin_folder(folder: Path) -> bool:
    return folder.name == PLUGIN_NAME and folder.parent.name == "plugins"


def _same(a: Path, b: Path) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return False
