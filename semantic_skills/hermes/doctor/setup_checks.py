"""The doctor's set-up checks: the Python that runs the plugin, its dependencies, Hermes, the plugin's install and
its folders (the settings line is ``settings_check``).

They run with nothing but this package, click and PyYAML importable (Hermes
itself depends on both), so they work before the plugin's dependencies are
installed.
"""

from __future__ import annotations

import importlib.metadata
import shlex
import shutil
import sys
from dataclasses import asdict
from pathlib import Path

from ...errors import command_name
from ...files import read_regular_file
from ...requirements import install_command, project_folder
from ...settings import EmbedderSettings
from ..config import PLUGIN_NAME, hermes_command, index_dir, load_config, read_settings, state_dir
from ..host import lookup, probes
from ..host.home import hermes_home
from ..host.lookup import hermes_version, valid_hooks
from .dependencies import Dependencies, routing_backend
from .install_fix import install_fix
from .report import FAIL, OK, WARN, Check, Setup
from .serving_check import BOTH, python_of, same_environment, served_check

ENTRY_POINTS = "hermes_agent.plugins"
GIT_CONFIG_BYTES = 64 * 1024  # a checkout's .git/config is well under 1 KB


def read_setup() -> Setup:
    """What every check reads, for the Hermes home this command runs on; the settings as the plugin runs on
    them (see :func:`~semantic_skills.hermes.config.read_settings`)."""
    home = hermes_home()
    config = load_config(home)
    settings, problems = read_settings(config)
    folder = index_dir(settings, home)
    return Setup(home, config, settings, folder, routing_backend(settings.embedder, folder), command_name(),
                 tuple(problems))


def python_check(setup: Setup) -> Check:
    """The Python that runs the plugin, and the one that runs its routing worker (the same, started isolated); run
    without Hermes, whether it is the Python the Hermes serving this home runs the plugin with (``served_check``),
    else the one the hermes command on PATH runs."""
    here = Path(sys.executable)
    version = ".".join(map(str, sys.version_info[:3]))
    facts = {"python": str(here), "worker_python": str(here)}
    if setup.under_hermes:
        return Check("python", OK, f"Hermes runs Python {version} at {here}: {BOTH}", facts=facts)
    served = served_check(setup)
    if served is not None:
        return served
    hermes_python = python_of(shutil.which(lookup.hermes_script()))
    facts["hermes_python"] = str(hermes_python or "")
    if hermes_python is None:
        return Check("python", OK, f"Python {version} at {here} (no hermes command on PATH to compare with)",
                     facts=facts)
    if same_environment(hermes_python, here):
        return Check("python", OK, f"Python {version} at {here}, which the hermes command runs: {BOTH}", facts=facts)
    return Check("python", WARN, f"this is {here}, but the hermes command runs {hermes_python}, which runs the "
                                 "plugin and its routing worker", f"{hermes_command(setup.home)} doctor", facts)


def dependencies_check(setup: Setup, found: Dependencies) -> Check:
    """The core libraries and the embedder's packages import here, at the versions the plugin's code declares
    (``found``).

    A module routing imports that is missing fails (routing cannot start); a
    declared dependency routing does not import, or one too old, warns: the
    routing worker's check below shows whether routing works without it.
    """
    facts = found.as_facts()
    if found.complete:
        return Check("dependencies", OK, f"everything the plugin needs for the {setup.backend} embedder is "
                                         f"installed in {sys.executable}", facts=facts)
    detail = f"the Python that runs the plugin ({sys.executable}) {found.words()}"
    chosen = install_fix(setup.home, found, setup.settings.embedder == EmbedderSettings())
    if not found.blocking:
        detail += ", which the plugin's code declares; the worker check below shows whether routing works without it"
    why = f"; {chosen.why}" if chosen.why else ""
    return Check("dependencies", FAIL if found.blocking else WARN, detail + why, chosen.fix, facts,
                 chosen.alternative)


def hermes_check(setup: Setup) -> Check:
    """Hermes imports here, has the hooks routing needs, and what else it offers (see host/probes.py).

    A missing routing hook fails; a missing capability that costs a feature
    warns; one that this Hermes never had costs nothing and is fine.
    """
    if not lookup.hermes_installed():
        status = FAIL if setup.under_hermes else WARN
        return Check("hermes", status, "Hermes does not import in this Python",
                     f"run the check with Hermes' Python: {setup.hermes} {PLUGIN_NAME} doctor", {"version": ""})
    from .. import ROUTING_HOOKS

    version, found, hooks = hermes_version(), probes.probe(load_gateway=True), valid_hooks()
    missing_hooks = [hook for hook in ROUTING_HOOKS if hooks is not None and hook not in hooks]
    absent = [c.name for c in found if not c.available and c.name in probes.ABSENT_FEATURES]
    lacking = [c for c in found if not c.available and c.name not in probes.ABSENT_FEATURES]
    facts = {"version": version, "capabilities": [asdict(c) for c in found], "missing_hooks": missing_hooks}
    fix = f"{setup.hermes} update (a Hermes that has them: see docs/install.md, Which Hermes)"
    if missing_hooks:
        return Check("hermes", FAIL, f"Hermes {version} has no {', '.join(missing_hooks)} hook: skills are not "
                                     "injected there", fix, facts)
    never_had = f"; not in this Hermes, so nothing is lost: {', '.join(map(_feature, absent))}" if absent else ""
    if lacking:
        return Check("hermes", WARN, f"Hermes {version} lacks: " + "; ".join(
            f"{_feature(c.name)} ({c.detail})" for c in lacking) + never_had, fix, facts)
    have = sum(1 for c in found if c.available)
    return Check("hermes", OK, f"Hermes {version}: the {have} features routing uses are here{never_had}", facts=facts)


def _feature(name: str) -> str:
    """A capability's name in words (``secret_capture``: "secret capture")."""
    return name.replace("_", " ")


def plugin_check(setup: Setup) -> Check:
    """The plugin folder is installed in this home, Hermes loads it, and nothing else claims its name."""
    folder = setup.home / "plugins" / PLUGIN_NAME
    plugins = setup.config.get("plugins") if isinstance(setup.config.get("plugins"), dict) else {}
    listed = {name: PLUGIN_NAME in (plugins.get(name) or []) for name in ("enabled", "disabled")}
    entry_point = any(e.name == PLUGIN_NAME for e in importlib.metadata.entry_points(group=ENTRY_POINTS))
    facts = {"folder": str(folder), "installed": folder.is_dir(), "entry_point": entry_point, **listed}
    config = setup.home / "config.yaml"
    enable = f"{setup.hermes} plugins enable {PLUGIN_NAME} --no-allow-tool-override"
    if not folder.is_dir():
        return Check("plugin", FAIL, f"not installed in {folder}", _install_plugin(setup), facts)
    if listed["disabled"]:
        return Check("plugin", FAIL, f"installed but disabled (plugins.disabled in {config}): Hermes does not load "
                                     "it", enable, facts)
    if not listed["enabled"]:
        return Check("plugin", FAIL, f"installed but not enabled (plugins.enabled in {config}): Hermes does not "
                                     "load it", enable, facts)
    if entry_point:
        return Check("plugin", WARN, f"an older install also registered it as a {ENTRY_POINTS} entry point, which "
                                     f"Hermes loads instead of {folder} and which `{setup.hermes} plugins remove` "
                                     "would leave behind", install_command(setup.backend), facts)
    return Check("plugin", OK, f"installed and enabled ({folder})", facts=facts)


def _install_plugin(setup: Setup) -> str:
    """``hermes plugins install`` from where this code came from: its checkout's remote, else the checkout."""
    source = plugin_source()
    if source is None:
        return (f"{setup.hermes} plugins install with the URL of the semantic-skills repository and --enable "
                "(docs/install.md)")
    return f"{setup.hermes} plugins install {shlex.quote(source)} --enable"


def plugin_source() -> str | None:
    """What ``hermes plugins install`` can clone this code from: the checkout's ``origin`` when it is a URL,
    else the checkout itself as a ``file://`` URL (Hermes clones only committed changes); None outside a
    git checkout."""
    folder = project_folder()
    if folder is None or not (folder / ".git").exists():
        return None
    try:
        config = read_regular_file(folder / ".git" / "config", GIT_CONFIG_BYTES).decode("utf-8", "replace")
    except OSError:
        config = ""
    section = config.split('[remote "origin"]', 1)[1].split("\n[", 1)[0] if '[remote "origin"]' in config else ""
    for line in section.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "url" and value.strip().startswith(("https://", "git@", "ssh://")):
            return value.strip()
    return folder.as_uri()


def paths_check(setup: Setup) -> Check:
    facts = {"hermes_home": str(setup.home), "config": str(setup.home / "config.yaml"),
             "plugin_folder": str(setup.home / "plugins" / PLUGIN_NAME), "index_folder": str(setup.index_dir),
             "state_folder": str(state_dir(setup.home)), "code": str(Path(__file__).resolve().parents[2])}
    return Check("paths", OK, f"plugin folder {facts['plugin_folder']}; index folder {facts['index_folder']}",
                 facts=facts)

