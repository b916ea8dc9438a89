"""``semantic-skills doctor``: what routing needs in this Hermes home, checked one line at a time.

Each check says what it found and, when it is not right, the one command or
edit that fixes it. It runs with nothing but this package, click and PyYAML
importable (Hermes itself depends on both), so it works before the plugin's
dependencies are installed; the checks that need them are then skipped.
Started as ``hermes semantic-skills doctor`` it checks the Python and the
Hermes home (profile included) that Hermes really uses.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shlex
import shutil
import sys
from dataclasses import asdict
from pathlib import Path

from ...errors import ConfigError, command_name, first_line
from ...index import MANIFEST
from ...requirements import (
    CORE_MODULES,
    EMBEDDER_MODULES,
    install_command,
    missing_modules,
    package_name,
    unmet_requirements,
)
from ...settings import EmbedderSettings
from ..config import (
    ENTRY_KEY,
    HERMES_COMMAND,
    PLUGIN_NAME,
    SETTINGS_KEY,
    PluginSettings,
    hermes_cli,
    index_dir,
    load_config,
    not_a_setting,
    plugin_settings,
    state_dir,
    unknown_settings,
)
from ..host import lookup, probes
from ..host.home import hermes_home
from ..host.lookup import hermes_version, valid_hooks
from .install_fix import install_fix
from .report import FAIL, OK, SKIP, WARN, Check, Setup
from .routing_checks import index_check, skills_check, worker_check

ENTRY_POINTS = "hermes_agent.plugins"


def run_doctor(worker_timeout: float) -> list[Check]:
    """Every check, in the order a user fixes things; routing works when none is ``fail``.

    A check that cannot run before an earlier one is fixed is skipped without
    a fix of its own: each fix appears once, on the line of its problem.
    """
    setup, settings_error = _setup()
    dependencies = dependencies_check(setup)
    checks = [python_check(setup), dependencies, hermes_check(setup), plugin_check(setup),
              settings_check(setup, settings_error), paths_check(setup)]
    if dependencies.status != OK:
        checks += [Check(name, SKIP, "checked once the dependencies above are installed")
                   for name in ("index", "worker")]
    else:
        index = index_check(setup)
        checks.append(index)
        checks.append(worker_check(setup, worker_timeout) if index.status != FAIL
                      else Check("worker", SKIP, "checked once the index above is fixed"))
    checks.append(skills_check(setup))
    return checks


def _setup() -> tuple[Setup, ConfigError | None]:
    home = hermes_home()
    config = load_config(home)
    try:
        settings, error = plugin_settings(config), None
    except ConfigError as exc:
        settings, error = PluginSettings(), exc
    folder = index_dir(settings, home)
    return Setup(home, config, settings, folder, _routing_backend(settings, folder), command_name()), error


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
    """The core libraries and the embedder's packages import here, at the versions the plugin's code declares."""
    backend = setup.backend
    broken = _broken_core_modules()
    embedder_absent = [package_name(m) for m in missing_modules(EMBEDDER_MODULES[backend])]
    absent = [package_name(m) for m, why in broken if why is None] + embedder_absent
    failing = [f"{package_name(m)} ({why})" for m, why in broken if why is not None]
    unmet = [(package, requirement, version) for package, requirement, version in unmet_requirements(backend)
             if package not in absent]
    absent += [package for package, _, version in unmet if version is None]
    old = [f"{requirement} ({version} installed)" for _, requirement, version in unmet if version is not None]
    facts = {"python": sys.executable, "backend": backend, "missing": absent, "failing": failing, "too_old": old}
    if not (absent or failing or old):
        return Check("dependencies", OK, f"everything the plugin needs for the {backend} embedder is installed in "
                                         f"{sys.executable}", facts=facts)
    problems = [f"{verb} {', '.join(names)}" for verb, names in (("lacks", absent), ("has too old", old),
                                                                  ("cannot import", failing)) if names]
    detail = f"the Python that runs Hermes ({sys.executable}) {'; '.join(problems)}"
    only_the_embedder = bool(embedder_absent) and not (broken or unmet)
    chosen = install_fix(setup.home, backend, setup.settings.embedder == EmbedderSettings(), only_the_embedder)
    why = f"; {chosen.why}" if chosen.why else ""
    return Check("dependencies", FAIL, detail + why, chosen.fix, facts, chosen.alternative)


def _broken_core_modules() -> list[tuple[str, str | None]]:
    """(module, None when it is not installed, else why it does not import) for each core library that fails."""
    broken = []
    for module in CORE_MODULES:
        try:
            __import__(module)
        except ModuleNotFoundError as exc:
            broken.append((module, None if exc.name == module else f"it needs {exc.name}"))
        except Exception as exc:  # noqa: BLE001 - a broken binary is as missing as an absent one
            broken.append((module, f"{type(exc).__name__}: {first_line(exc)}"))
    return broken


def hermes_check(setup: Setup) -> Check:
    """Hermes imports here, has the hooks routing needs, and what else it offers (see host/probes.py).

    A missing routing hook fails; a missing capability that costs a feature
    warns; one that this Hermes never had costs nothing and is fine.
    """
    if not lookup.hermes_installed():
        status = FAIL if setup.under_hermes else WARN
        return Check("hermes", status, "Hermes does not import in this Python",
                     f"run the check with Hermes' Python: {HERMES_COMMAND} doctor", {"version": ""})
    from .. import ROUTING_HOOKS

    version, found, hooks = hermes_version(), probes.probe(load_gateway=True), valid_hooks()
    missing_hooks = [hook for hook in ROUTING_HOOKS if hooks is not None and hook not in hooks]
    absent = [c.name for c in found if not c.available and c.name in probes.ABSENT_FEATURES]
    lacking = [c for c in found if not c.available and c.name not in probes.ABSENT_FEATURES]
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


def plugin_check(setup: Setup) -> Check:
    """The plugin folder is installed in this home, Hermes loads it, and nothing else claims its name."""
    folder = setup.home / "plugins" / PLUGIN_NAME
    plugins = setup.config.get("plugins") if isinstance(setup.config.get("plugins"), dict) else {}
    listed = {name: PLUGIN_NAME in (plugins.get(name) or []) for name in ("enabled", "disabled")}
    entry_point = any(e.name == PLUGIN_NAME for e in importlib.metadata.entry_points(group=ENTRY_POINTS))
    facts = {"folder": str(folder), "installed": folder.is_dir(), "entry_point": entry_point, **listed}
    config = setup.home / "config.yaml"
    hermes = hermes_cli(setup.home)
    enable = f"{hermes} plugins enable {PLUGIN_NAME} --no-allow-tool-override"
    if not folder.is_dir():
        return Check("plugin", FAIL, f"not installed in {folder}",
                     f"{hermes} plugins install https://github.com/OWNER/semantic-skills --enable", facts)
    if listed["disabled"]:
        return Check("plugin", FAIL, f"installed but disabled (plugins.disabled in {config}): Hermes does not load "
                                     "it", enable, facts)
    if not listed["enabled"]:
        return Check("plugin", FAIL, f"installed but not enabled (plugins.enabled in {config}): Hermes does not "
                                     "load it", enable, facts)
    if entry_point:
        return Check("plugin", WARN, f"an older install also registered it as a {ENTRY_POINTS} entry point, which "
                                     f"Hermes loads instead of {folder} and which `hermes plugins remove` would leave "
                                     "behind", install_command(setup.backend), facts)
    return Check("plugin", OK, f"installed and enabled ({folder})", facts=facts)


def settings_check(setup: Setup, error: ConfigError | None) -> Check:
    """The settings are valid, and every key in the plugin's part of config.yaml is one the plugin reads."""
    config = setup.home / "config.yaml"
    if error is not None:
        return Check("settings", FAIL, f"{error} (under {SETTINGS_KEY} in {config}): the plugin runs on its defaults "
                                       "instead of your settings",
                     f"{hermes_cli(setup.home)} config set {SETTINGS_KEY}.<setting> <value> (README, "
                     "Configuration)")
    unknown = unknown_settings(setup.config)
    if not unknown:
        return Check("settings", OK, f"valid ({SETTINGS_KEY} in {config})")
    detail = f"ignored by the plugin: {'; '.join(not_a_setting(key, meant) for key, meant in unknown)}"
    hermes = hermes_cli(setup.home)
    return Check("settings", WARN, detail, " && ".join(_rename(setup.config, hermes, key, meant)
                                                        for key, meant in unknown),
                 {"unknown": [key for key, _ in unknown]})


def _rename(config: dict, hermes: str, key: str, meant: str | None) -> str:
    """The commands that move ``key`` to ``meant``, both below ENTRY_KEY; only drop it when nothing is meant or
    ``meant`` is set already (a duplicate must not overwrite the real setting)."""
    unset = f"{hermes} config unset {ENTRY_KEY}.{key}"
    entry = config["plugins"]["entries"][PLUGIN_NAME]
    value = _at(entry, key)
    if meant is None or _at(entry, meant) is not None:
        return unset
    if isinstance(value, (dict, list)):
        return f"move {ENTRY_KEY}.{key} to {ENTRY_KEY}.{meant} in config.yaml"
    return f"{unset} && {hermes} config set {ENTRY_KEY}.{meant} {shlex.quote(str(value))}"


def _at(mapping: dict, dotted: str):
    for part in dotted.split("."):
        mapping = mapping.get(part) if isinstance(mapping, dict) else None
    return mapping


def paths_check(setup: Setup) -> Check:
    facts = {"hermes_home": str(setup.home), "config": str(setup.home / "config.yaml"),
             "plugin_folder": str(setup.home / "plugins" / PLUGIN_NAME), "index_folder": str(setup.index_dir),
             "state_folder": str(state_dir(setup.home)), "code": str(Path(__file__).resolve().parents[2])}
    return Check("paths", OK, f"plugin folder {facts['plugin_folder']}; index folder {facts['index_folder']}",
                 facts=facts)
