"""``semantic-skills uninstall``: the commands that remove the plugin, and all it added, from a Hermes home.

Nothing here removes anything: each :class:`Step` is one shell command and
what it removes, worked out for this home, this Python and what is installed
in it. ``hermes plugins remove`` alone leaves Hermes starting clean (the
package registers no entry point of its own); the other steps take away the
package, the dependencies nothing else uses, the settings, the plugin's state
and an index kept elsewhere.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from ...requirements import disk_usage, installed_size, packages_only_this_uses
from ..config import PLUGIN_NAME, hermes_cli, index_dir, load_config, plugin_settings, state_dir
from ..host.home import hermes_home


@dataclass(frozen=True)
class Step:
    command: str
    removes: str
    frees: int = 0  # bytes on disk the command frees, measured (as du counts them)


def size_words(size: int) -> str:
    """A size as the commands' comments say it: "1.47 GB", "230 MB", "12 KB"."""
    if size >= 1e9:
        return f"{size / 1e9:.2f} GB"
    if size >= 1e6:
        return f"{size / 1e6:.0f} MB"
    return f"{max(size, 0) / 1e3:.0f} KB"


def removal_steps() -> list[Step]:
    """What removes the plugin from this Hermes home, in order (only the steps that have something to remove)."""
    home = hermes_home()
    config = load_config(home)
    hermes = hermes_cli(home)
    plugin_folder = home / "plugins" / PLUGIN_NAME
    steps = []
    if plugin_folder.is_dir():
        steps.append(Step(f"{hermes} plugins remove {PLUGIN_NAME}", f"its code and the index in {plugin_folder}",
                          disk_usage([plugin_folder])))
    packages = packages_only_this_uses()
    if packages:
        steps.append(Step(f"{shlex.quote(sys.executable)} -m pip uninstall -y {' '.join(packages)}",
                          f"the package, its {PLUGIN_NAME} command and the {len(packages) - 1} packages only it "
                          "uses; what Hermes or anything else installed needs stays", installed_size(packages)))
    steps += _config_steps(config, hermes)
    steps += _folder_steps(home, config, plugin_folder)
    return steps


def _config_steps(config: dict, hermes: str) -> list[Step]:
    plugins = config.get("plugins") if isinstance(config.get("plugins"), dict) else {}
    steps = []
    if isinstance(plugins.get("entries"), dict) and PLUGIN_NAME in plugins["entries"]:
        steps.append(Step(f"{hermes} config unset plugins.entries.{PLUGIN_NAME}", "its settings in config.yaml"))
    for listing in ("enabled", "disabled"):
        names = plugins.get(listing)
        if isinstance(names, list) and PLUGIN_NAME in names:
            steps.append(Step(f"{hermes} config unset plugins.{listing}.{names.index(PLUGIN_NAME)}",
                              f"its name in plugins.{listing} (by position: run it before other changes to that "
                              "list)"))
    return steps


def _folder_steps(home: Path, config: dict, plugin_folder: Path) -> list[Step]:
    state = state_dir(home)
    steps = []
    if state.exists():
        steps.append(Step(f"rm -rf {shlex.quote(str(state))}", "its record of the skills each chat has and its "
                                                                "decision record (what it decided for each message)",
                          disk_usage([state])))
    index = index_dir(plugin_settings(config), home)
    inside = any(index.resolve().is_relative_to(folder.resolve()) for folder in (plugin_folder, state))
    if index.exists() and not inside:
        steps.append(Step(f"rm -rf {shlex.quote(str(index))}", "the skill index", disk_usage([index])))
    return steps
