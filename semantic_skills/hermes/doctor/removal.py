"""``semantic-skills uninstall``: the commands that remove the plugin, and all it added, from a Hermes home.

Nothing here removes anything: each :class:`Step` is one shell command and
what it removes, worked out for this home, this Python and what is installed
in it. ``hermes plugins remove`` alone leaves Hermes starting clean (the
package registers no entry point of its own); the other steps take away the
package, the dependencies nothing else uses, the settings, the plugin's state
(the index with it) and an index kept elsewhere. The package and its
dependencies serve every home on this Python: while other homes have the
plugin, that step names them and is not to be run.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from ...index import MANIFEST
from ...requirements import disk_usage, installed_size, packages_only_this_uses
from ..config import PLUGIN_NAME, hermes_cli, index_dir, load_config, plugin_folder, plugin_settings, state_dir
from ..home_index import legacy_index_dir
from ..host.home import hermes_home
from ..installs import other_homes


@dataclass(frozen=True)
class Step:
    command: str
    removes: str
    frees: int = 0  # bytes on disk the command frees, measured (as du counts them)
    shared_with: tuple[str, ...] = ()  # other Hermes homes that need what it removes: not to run while they do


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
    code = plugin_folder(home)
    # config.yaml first: Hermes 0.22's own `plugins remove` takes the plugin out of plugins.enabled, after which an
    # unset by position would fail, or unset the plugin listed next
    steps = _config_steps(config, hermes)
    if code.is_dir():
        steps.append(_code_step(home, hermes))
    packages = packages_only_this_uses()
    if packages:
        others = tuple(str(other) for other in other_homes(home))
        steps.append(Step(f"{shlex.quote(sys.executable)} -m pip uninstall -y {' '.join(packages)}",
                          f"the package, its {PLUGIN_NAME} command and the {len(packages) - 1} packages only it "
                          "uses; what Hermes or anything else installed needs stays", installed_size(packages), others))
    steps += _folder_steps(home, config, code)
    return steps


def _code_step(home: Path, hermes: str) -> Step:
    """What removes the plugin folder: Hermes' own command, or for a link (which Hermes cannot remove) the link
    alone, leaving the folder it points to, which other homes may share."""
    code = plugin_folder(home)
    if code.is_symlink():
        return Step(f"rm {shlex.quote(str(code))}", f"the link to its code in {code.resolve()} (that folder stays, "
                                                    "with all it holds)", disk_usage([code]))
    left = " and the index an earlier release left in it" if (legacy_index_dir(home) / MANIFEST).exists() else ""
    return Step(f"{hermes} plugins remove {PLUGIN_NAME}", f"its code in {code}{left}", disk_usage([code]))


def gateway_restart() -> str:
    """The command that restarts this home's gateway, which keeps a removed plugin loaded until then."""
    return f"{hermes_cli(hermes_home())} gateway restart"


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


def _folder_steps(home: Path, config: dict, code: Path) -> list[Step]:
    state = state_dir(home)
    steps = []
    if state.exists():
        steps.append(Step(f"rm -rf {shlex.quote(str(state))}", "its index, its record of the skills each chat has "
                                                                "and its decision record (what it decided for each "
                                                                "message)", disk_usage([state])))
    index = index_dir(plugin_settings(config), home)
    inside = any(index.resolve().is_relative_to(folder.resolve()) for folder in (code, state))
    if index.exists() and not inside:
        steps.append(Step(f"rm -rf {shlex.quote(str(index))}", "the skill index", disk_usage([index])))
    return steps
