"""Damaged files the plugin reads at start never switch it off nor hold up ``register()``.

Real files in a real Hermes home, loaded by Hermes 0.19's own plugin manager:
the dedupe record (``$HERMES_HOME/semantic-skills/dedupe.json``) damaged in the
ways a disk, a crash or a hand edit damage it, and ``config.yaml`` as the
plugin reads it. ``register()`` is timed by wrapping the package's
``register`` that the plugin folder's entry point calls.
"""

from __future__ import annotations

import json
import logging
import random
import subprocess
import sys
import time

import pytest

from semantic_skills.files import FileTooLarge

from hermes_testkit import Gateway
from reliability_kit import WORKER_READY_SECONDS, agent_context, make_home, plugin_loaded

DOCKER = "My postgres container keeps restarting and the web service can't connect to it"
OPENING = '<skill-context name="docker-compose-debug"'
REGISTER_SECONDS = 1.0  # Hermes 0.21 skips a plugin whose register() takes plugins.load_timeout_seconds (10 s)

DAMAGED = {
    "200,000 open brackets": b"[" * 200_000,
    "a 400-digit timestamp": (b'{"version": 2, "clean": true, "blocks": [], "chats": [["agent:main:whatsapp:dm:1", '
                              b'"s1", ' + b"9" * 400 + b", {}]]}"),
    "61 MB": b'{"version": 2, "clean": true, "chats": [], "blocks": [], "pad": "' + b"x" * (61 * 1024 * 1024) + b'"}',
    "binary garbage": random.Random(18).randbytes(64 * 1024),
    "wrong types": b'{"version": 2, "clean": "yes", "chats": {"a": 1}, "blocks": 7}',
}


@pytest.fixture()
def timed_register(monkeypatch):
    """The seconds each ``register()`` call took, in call order."""
    import semantic_skills.hermes as package

    took, register = [], package.register

    def timed(ctx):
        start = time.perf_counter()
        try:
            register(ctx)
        finally:
            took.append(time.perf_counter() - start)

    monkeypatch.setattr(package, "register", timed)
    return took


def plugin_home(tmp_path, examples_index, **settings):
    return make_home(tmp_path, {"index_dir": str(examples_index), "route_timeout_ms": 10000, **settings})


@pytest.mark.parametrize("name", sorted(DAMAGED))
def test_a_damaged_dedupe_file_is_set_aside_with_one_warning_and_the_plugin_routes(
        tmp_path, examples_index, timed_register, caplog, monkeypatch, name):
    home = plugin_home(tmp_path, examples_index)
    state = home / "semantic-skills" / "dedupe.json"
    state.parent.mkdir()
    state.write_bytes(DAMAGED[name])
    monkeypatch.setenv("WHATSAPP_ALLOWED_USERS", "*")

    with caplog.at_level(logging.WARNING, logger="semantic_skills"), plugin_loaded(home) as runtime:
        assert runtime.client.wait_ready(WORKER_READY_SECONDS), runtime.client.status.detail
        gateway = Gateway(tmp_path / "sessions")
        assert gateway.send(DOCKER, gateway.new_user()).text.startswith(OPENING)  # through _handle_message
        assert runtime.trust.wait_loaded(30)
        assert agent_context(DOCKER, "cli", "after-damage").startswith(OPENING)

    assert timed_register and timed_register[0] < REGISTER_SECONDS, timed_register
    aside = state.with_name("dedupe.json.damaged")
    assert aside.stat().st_size == len(DAMAGED[name])
    warnings = [r.getMessage() for r in caplog.records if "dedupe file" in r.getMessage()]
    assert len(warnings) == 1 and str(state) in warnings[0] and "moved it to dedupe.json.damaged" in warnings[0]
    assert json.loads(state.read_bytes())["version"] == 2  # saved afresh when the plugin closed


CONFIG_DAMAGED = {
    "200,000 open brackets": "[" * 200_000,
    "300 KB": "# a long comment\n" * 18_000 + "plugins: {enabled: [semantic-skills]}\n",
    "an alias bomb": "".join(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" if i else "l0: &l0 [lol]\n"
                             for i in range(10)),
    "a cycle": "a: &a [*a]\n",
    "binary garbage": random.Random(3).randbytes(4096).decode("latin-1"),
}


@pytest.mark.parametrize("name", sorted(CONFIG_DAMAGED))
def test_a_damaged_config_yaml_is_read_as_empty_at_once_with_one_warning(tmp_path, caplog, name):
    """In a process of its own: libyaml's parser overflows the C stack on deep nesting (the process dies)."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text(CONFIG_DAMAGED[name], encoding="utf-8", errors="surrogateescape")
    script = ("import json, sys, time, logging; from pathlib import Path; logging.basicConfig(); "
              "from semantic_skills.hermes.config import load_config, plugin_settings; "
              "start = time.perf_counter(); config = [load_config(Path(sys.argv[1])) for _ in range(3)][0]; "
              "print(json.dumps({'config': config, 'seconds': time.perf_counter() - start, "
              "'settings': plugin_settings(config).max_skill_chars}))")
    done = subprocess.run([sys.executable, "-c", script, str(home)], capture_output=True, text=True, timeout=60)

    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["config"] == {} and result["seconds"] < REGISTER_SECONDS and result["settings"] == 16_000
    warnings = [line for line in done.stderr.splitlines() if "cannot use" in line]
    assert len(warnings) == 1 and str(home / "config.yaml") in warnings[0]


def test_an_oversized_config_yaml_holds_up_no_register_and_the_plugin_routes_on_its_defaults(
        tmp_path, examples_index, timed_register, caplog, monkeypatch):
    """Hermes reads a big config.yaml itself (it has no limit); the plugin does not, and still loads and routes."""
    home = plugin_home(tmp_path, examples_index)
    config = home / "config.yaml"
    config.write_text(config.read_text() + "# a long comment\n" * 18_000)
    monkeypatch.setenv("SEMANTIC_SKILLS_INDEX_DIR", str(examples_index))  # the settings are not read

    with caplog.at_level(logging.WARNING, logger="semantic_skills"), plugin_loaded(home) as runtime:
        assert runtime.client.wait_ready(WORKER_READY_SECONDS), runtime.client.status.detail
        assert agent_context(DOCKER, "cli", "big-config").startswith(OPENING)

    assert timed_register and timed_register[0] < REGISTER_SECONDS, timed_register
    assert [r.getMessage() for r in caplog.records if "cannot use" in r.getMessage()] == [
        f"semantic-skills: cannot use {config} (FileTooLarge: {FileTooLarge(config.stat().st_size, 256 * 1024)}); "
        "the plugin runs on its default settings until the file changes"]
