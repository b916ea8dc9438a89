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
import stat
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
    "a 400-digit timestamp": (b'{"version": 3, "clean": true, "blocks": [], "chats": [["agent:main:whatsapp:dm:1", '
                              b'"s1", ' + b"9" * 400 + b", []]]}"),
    "61 MB": b'{"version": 3, "clean": true, "chats": [], "blocks": [], "pad": "' + b"x" * (61 * 1024 * 1024) + b'"}',
    "binary garbage": random.Random(18).randbytes(64 * 1024),
    "wrong types": b'{"version": 3, "clean": "yes", "chats": {"a": 1}, "blocks": 7}',
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


def plugin_home(tmp_path, index_dir, **settings):
    """A Hermes home under ``tmp_path`` whose plugin serves ``index_dir``."""
    return make_home(tmp_path, {"index_dir": str(index_dir), "route_timeout_ms": 10000, **settings})


@pytest.mark.parametrize("name", sorted(DAMAGED))
def test_a_damaged_dedupe_file_is_set_aside_with_one_warning_and_the_plugin_routes(
        tmp_path, onnx_examples_index, timed_register, caplog, monkeypatch, name):
    home = plugin_home(tmp_path, onnx_examples_index)
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
    assert aside.stat().st_size == len(DAMAGED[name]) and stat.S_IMODE(aside.stat().st_mode) == 0o600  # #27.7
    warnings = [r.getMessage() for r in caplog.records if "dedupe file" in r.getMessage()]
    assert len(warnings) == 1 and str(state) in warnings[0] and "moved it to dedupe.json.damaged" in warnings[0]
    assert json.loads(state.read_bytes())["version"] == 3  # saved afresh when the plugin closed


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
        tmp_path, onnx_examples_index, timed_register, caplog, monkeypatch):
    """Hermes reads a big config.yaml itself (it has no limit); the plugin does not, and still loads and routes."""
    home = plugin_home(tmp_path, onnx_examples_index)
    config = home / "config.yaml"
    config.write_text(config.read_text() + "# a long comment\n" * 18_000)
    monkeypatch.setenv("SEMANTIC_SKILLS_INDEX_DIR", str(onnx_examples_index))  # the settings are not read

    with caplog.at_level(logging.WARNING, logger="semantic_skills"), plugin_loaded(home) as runtime:
        assert runtime.client.wait_ready(WORKER_READY_SECONDS), runtime.client.status.detail
        assert agent_context(DOCKER, "cli", "big-config").startswith(OPENING)

    assert timed_register and timed_register[0] < REGISTER_SECONDS, timed_register
    assert [r.getMessage() for r in caplog.records if "cannot use" in r.getMessage()] == [
        f"semantic-skills: cannot use {config} (FileTooLarge: {FileTooLarge(config.stat().st_size, 256 * 1024)}); "
        "the plugin runs on its default settings until the file changes"]


# --------------------------------------------------------------------------- what sits at a state path, who reads it


def special_file(path, kind: str) -> None:
    """A FIFO, a socket or a character device (a link to /dev/zero, which never ends) at ``path``."""
    import os
    import socket

    if kind == "FIFO":
        os.mkfifo(path)
    elif kind == "socket":
        here = os.getcwd()
        os.chdir(path.parent)  # a socket's path is limited to 108 bytes: bind it by its name
        try:
            socket.socket(socket.AF_UNIX).bind(path.name)
        finally:
            os.chdir(here)
    else:
        path.symlink_to("/dev/zero")


LAYOUTS = {"FIFO, socket, device": ("FIFO", "socket", "device"), "device, FIFO, socket": ("device", "FIFO", "socket"),
           "socket, device, FIFO": ("socket", "device", "FIFO")}  # at the dedupe file, the record, its previous one


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_a_fifo_device_or_socket_at_any_state_path_is_set_aside_with_one_warning(
        tmp_path, onnx_examples_index, caplog, monkeypatch, layout):
    """#27.4: the dedupe file, the decision record and its previous generation, each a FIFO, a socket or a device:
    no turn waits on them, each is moved aside (``NAME.damaged``) with one warning naming it, and closing (what
    Hermes' exit runs) is quick; the plugin then writes regular files, readable by their owner only."""
    home = plugin_home(tmp_path, onnx_examples_index)
    folder = home / "semantic-skills"
    folder.mkdir()
    paths = [folder / "dedupe.json", folder / "decisions.jsonl", folder / "decisions.1.jsonl"]
    for path, kind in zip(paths, LAYOUTS[layout]):
        special_file(path, kind)
    monkeypatch.setenv("WHATSAPP_ALLOWED_USERS", "*")

    with caplog.at_level(logging.WARNING, logger="semantic_skills"), plugin_loaded(home) as runtime:
        assert runtime.client.wait_ready(WORKER_READY_SECONDS), runtime.client.status.detail
        gateway = Gateway(tmp_path / "sessions")
        user = gateway.new_user()
        for text in (DOCKER, "Can you turn this scanned contract PDF into markdown with the tables intact?"):
            start = time.monotonic()
            turn = gateway.send(text, user)
            assert turn.text.startswith("<skill-context") and time.monotonic() - start < 2.0
        runtime.decisions.flush()
        start = time.monotonic()
        runtime.close()
        assert time.monotonic() - start < 2.0

    for path, kind in zip(paths, LAYOUTS[layout]):
        aside = path.with_name(path.name + ".damaged")
        assert aside.is_symlink() if kind == "device" else aside.exists(), aside
        said = [r.getMessage() for r in caplog.records if str(path) in r.getMessage()]
        assert len(said) == 1 and f"moved it to {aside.name}" in said[0], said
    for path in paths[:2]:
        mode = path.lstat().st_mode
        assert stat.S_ISREG(mode) and stat.S_IMODE(mode) == 0o600, (path, oct(mode))


def test_every_state_file_is_readable_by_its_owner_only(tmp_path, onnx_examples_index, monkeypatch):
    """#27.7: the dedupe file names chats (phone numbers, user ids) and the decision record may hold message text:
    each is 0600, also when an earlier release left it readable by all (0644), and whatever the umask allowed."""
    home = plugin_home(tmp_path, onnx_examples_index)
    folder = home / "semantic-skills"
    folder.mkdir()
    earlier = {"dedupe.json": b'{"version": 1, "sessions": [["gateway:15550001#s1", 1000.0, ["pdf"]]]}',
               "decisions.jsonl": b"", "decisions.1.jsonl": b""}
    for name, content in earlier.items():
        (folder / name).write_bytes(content)
        (folder / name).chmod(0o644)
    monkeypatch.setenv("WHATSAPP_ALLOWED_USERS", "*")

    with plugin_loaded(home) as runtime:
        assert runtime.client.wait_ready(WORKER_READY_SECONDS), runtime.client.status.detail
        gateway = Gateway(tmp_path / "sessions")
        assert gateway.send(DOCKER, gateway.new_user()).text.startswith(OPENING)

    assert json.loads((folder / "dedupe.json").read_bytes())["chats"]  # written afresh, by this release
    assert (folder / "decisions.jsonl").stat().st_size  # the decision was recorded
    assert {name: oct(stat.S_IMODE((folder / name).stat().st_mode)) for name in earlier} == dict.fromkeys(
        earlier, oct(0o600))


def test_a_chat_key_over_1024_characters_is_saved_so_every_chat_record_survives_a_restart(
        tmp_path, onnx_examples_index, caplog, monkeypatch):
    """#27.6: Hermes' webhook adapter builds the chat id from an unsigned request header, so a session key can be
    any length. Saved as it was, a 1,500-character key made the next start refuse the plugin's own file ("a chat
    key is not a short string") and lose every chat's record: after a clean restart the gateway could no longer
    rewrite at once in any chat. A long key is kept as its digest, bounded on saving as on loading."""
    home = plugin_home(tmp_path, onnx_examples_index)
    monkeypatch.setenv("WHATSAPP_ALLOWED_USERS", "*")
    gateway = Gateway(tmp_path / "sessions")  # one gateway across the restart: its sessions and histories stay
    users = [gateway.new_user(), "webhook-" + "x" * 1500 + gateway.new_user()]
    assert len(gateway.session_key(users[1])) > 1024
    pdf = "Can you turn this scanned contract PDF into markdown with the tables intact?"

    with caplog.at_level(logging.WARNING, logger="semantic_skills"):
        with plugin_loaded(home) as runtime:
            assert runtime.client.wait_ready(WORKER_READY_SECONDS), runtime.client.status.detail
            for user in users:
                assert gateway.send(DOCKER, user).text.startswith(OPENING)
        with plugin_loaded(home) as runtime:  # a clean restart: the records are certain
            assert runtime.client.wait_ready(WORKER_READY_SECONDS), runtime.client.status.detail
            assert runtime.trust.wait_loaded(30) and len(runtime.trust.chats) == 2
            for user in users:
                turn = gateway.send(pdf, user)
                assert turn.text.startswith('<skill-context name="pdf-to-markdown"') and turn.context == ""
                assert gateway.send(DOCKER, user).text == DOCKER  # the chat's record: docker is in its history

    assert not [r.getMessage() for r in caplog.records if "dedupe" in r.getMessage()]
    assert not (home / "semantic-skills" / "dedupe.json.damaged").exists()
