"""``semantic-skills doctor``: what routing needs in this Hermes home, checked one line at a time.

Each check says what it found and, when it is not right, the one command or
edit that fixes it. It runs with nothing but this package, click and PyYAML
importable (Hermes itself depends on both), so it works before the plugin's
dependencies are installed; the checks that need them are then skipped.
Started as ``hermes semantic-skills doctor`` it checks the Python and the
Hermes home (profile included) that Hermes really uses.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import os
import shutil
import sys
from dataclasses import asdict
from pathlib import Path

from ..errors import ConfigError, command_name
from ..index import MANIFEST
from ..requirements import CORE_MODULES, EMBEDDER_MODULES, install_command, missing_modules
from ..settings import EmbedderSettings
from . import capabilities
from .config import (
    HERMES_COMMAND,
    PLUGIN_NAME,
    PluginSettings,
    hermes_home,
    index_dir,
    load_config,
    plugin_settings,
    state_dir,
)
from .doctor_report import FAIL, OK, SKIP, WARN, Check, Setup
from .doctor_routing import index_check, skills_check, worker_check


def run_doctor(worker_timeout: float) -> list[Check]:
    """Every check, in the order a user fixes things; routing works when none is ``fail``."""
    setup, settings = _setup()
    dependencies = dependencies_check(setup)
    checks = [python_check(setup), dependencies, hermes_check(setup), plugin_check(setup), settings,
              paths_check(setup)]
    if dependencies.status != OK:
        checks += [Check(name, SKIP, "needs the plugin's dependencies", dependencies.fix)
                   for name in ("index", "worker")]
    else:
        index = index_check(setup)
        checks.append(index)
        checks.append(worker_check(setup, worker_timeout) if index.status != FAIL
                      else Check("worker", SKIP, "needs a usable index", index.fix))
    checks.append(skills_check(setup))
    return checks


def _setup() -> tuple[Setup, Check]:
    home = hermes_home()
    config = load_config(home)
    command = command_name()
    where = f"plugins.entries.{PLUGIN_NAME}.settings in {home / 'config.yaml'}"
    try:
        settings = plugin_settings(config)
        check = Check("settings", OK, f"valid ({where})")
    except ConfigError as exc:
        settings = PluginSettings()
        check = Check("settings", FAIL, f"{exc}; the plugin runs on the defaults instead of your settings",
                      f"correct {where}")
    folder = index_dir(settings, home)
    return Setup(home, config, settings, folder, _routing_backend(settings, folder), command), check


def _routing_backend(settings: PluginSettings, folder: Path) -> str:
    """With default embedder settings routing uses whatever built the index (read here without numpy)."""
    if settings.embedder != EmbedderSettings():
        return settings.embedder.backend
    try:
        backend = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))["embedder"]["backend"]
    except (OSError, ValueError, KeyError, TypeError):
        return settings.embedder.backend
    return backend if backend in EMBEDDER_MODULES else settings.embedder.backend


def python_check(setup: Setup) -> Check:
    here = Path(sys.executable)
    version = ".".join(map(str, sys.version_info[:3]))
    if setup.under_hermes:
        return Check("python", OK, f"Hermes runs Python {version} at {here}", facts={"python": str(here)})
    hermes_python = _python_of(shutil.which("hermes"))
    facts = {"python": str(here), "hermes_python": str(hermes_python or "")}
    if hermes_python is None or _same_file(hermes_python, here):
        return Check("python", OK, f"Python {version} at {here}", facts=facts)
    return Check("python", WARN, f"this is {here}, but the hermes command runs {hermes_python}",
                 f"check Hermes' own Python with: {HERMES_COMMAND} doctor", facts)


def _python_of(script: str | None) -> Path | None:
    """The interpreter a console script starts, from its ``#!`` line."""
    try:
        with open(script, "rb") as handle:
            first = handle.readline(512).decode("utf-8", "replace")
    except (OSError, TypeError):
        return None
    return Path(first[2:].strip().split()[0]) if first.startswith("#!/") else None


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or os.path.samefile(a, b)
    except OSError:
        return False


def dependencies_check(setup: Setup) -> Check:
    """The core libraries import here, and the embedder's packages are installed."""
    backend = setup.backend
    core_broken = []
    for module in CORE_MODULES:
        try:
            __import__(module)
        except Exception as exc:  # noqa: BLE001 - a broken binary is as missing as an absent one
            core_broken.append(f"{module} ({type(exc).__name__})")
    broken = core_broken + missing_modules(EMBEDDER_MODULES[backend])
    facts = {"python": sys.executable, "backend": backend, "missing": broken}
    if not broken:
        return Check("dependencies", OK, f"{', '.join(CORE_MODULES)} and the {backend} embedder's packages are "
                                         f"installed in {sys.executable}", facts=facts)
    fix = f"install the plugin's dependencies into this Python: {install_command(backend)}"
    if backend != "onnx" and not core_broken and not missing_modules(EMBEDDER_MODULES["onnx"]):
        fix = (f"set embedder: onnx under plugins.entries.{PLUGIN_NAME}.settings in {setup.home / 'config.yaml'} "
               f"(its packages are installed: the torch-free install), or {fix}")
    return Check("dependencies", FAIL, f"not installed in {sys.executable}: {', '.join(broken)}", fix, facts)


def hermes_check(setup: Setup) -> Check:
    """Hermes imports here, has the hooks routing needs, and what else it offers (see capabilities.py).

    A missing routing hook fails; a missing capability that costs a feature
    warns; one that this Hermes never had costs nothing and is fine.
    """
    if not _hermes_imports():
        status = FAIL if setup.under_hermes else WARN
        return Check("hermes", status, "Hermes does not import in this Python",
                     f"run the check with Hermes' Python: {HERMES_COMMAND} doctor", {"version": ""})
    from . import ROUTING_HOOKS, valid_hooks

    version, found, hooks = capabilities.hermes_version(), capabilities.detect(), valid_hooks()
    missing_hooks = [hook for hook in ROUTING_HOOKS if hooks is not None and hook not in hooks]
    absent = [c.name for c in found if not c.available and c.name in capabilities.ABSENT_FEATURES]
    lacking = [c for c in found if not c.available and c.name not in capabilities.ABSENT_FEATURES]
    facts = {"version": version, "capabilities": [asdict(c) for c in found], "missing_hooks": missing_hooks}
    fix = "update Hermes (hermes update), or use a Hermes version the README names"
    if missing_hooks:
        return Check("hermes", FAIL, f"Hermes {version} has no {', '.join(missing_hooks)} hook: skills are not "
                                     "injected there", fix, facts)
    never_had = f"; not in this Hermes, so nothing is lost: {', '.join(absent)}" if absent else ""
    if lacking:
        return Check("hermes", WARN, f"Hermes {version} lacks: " + "; ".join(f"{c.name} ({c.detail})"
                                                                           for c in lacking) + never_had, fix, facts)
    have = ", ".join(c.name for c in found if c.available)
    return Check("hermes", OK, f"Hermes {version}: {have}{never_had}", facts=facts)


def _hermes_imports() -> bool:
    try:
        importlib.import_module("hermes_cli.plugins")
    except Exception:  # noqa: BLE001 - absent, or broken in this Python
        return False
    return True


def plugin_check(setup: Setup) -> Check:
    folder = setup.home / "plugins" / PLUGIN_NAME
    plugins = setup.config.get("plugins") if isinstance(setup.config.get("plugins"), dict) else {}
    enabled = PLUGIN_NAME in (plugins.get("enabled") or []) and PLUGIN_NAME not in (plugins.get("disabled") or [])
    entry_point = any(e.name == PLUGIN_NAME for e in importlib.metadata.entry_points(group="hermes_agent.plugins"))
    facts = {"folder": str(folder), "installed": folder.is_dir(), "entry_point": entry_point, "enabled": enabled}
    if not (folder.is_dir() or entry_point):
        return Check("plugin", FAIL, f"not installed in {folder}",
                     "hermes plugins install https://github.com/OWNER/semantic-skills --enable", facts)
    where = str(folder) if folder.is_dir() else "the hermes_agent.plugins entry point"
    if not enabled:
        return Check("plugin", FAIL, f"installed ({where}) but not enabled in {setup.home / 'config.yaml'}",
                     f"hermes plugins enable {PLUGIN_NAME} --no-allow-tool-override", facts)
    return Check("plugin", OK, f"installed and enabled ({where})", facts=facts)


def paths_check(setup: Setup) -> Check:
    facts = {"hermes_home": str(setup.home), "config": str(setup.home / "config.yaml"),
             "plugin_folder": str(setup.home / "plugins" / PLUGIN_NAME), "index_folder": str(setup.index_dir),
             "state_folder": str(state_dir(setup.home)), "code": str(Path(__file__).resolve().parents[1])}
    return Check("paths", OK, f"plugin folder {facts['plugin_folder']}; index folder {facts['index_folder']}",
                 facts=facts)
