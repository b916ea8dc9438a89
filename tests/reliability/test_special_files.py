"""Files others can write never hang or flood the plugin, and a state file is never reached through a link (#33).

Anyone who can write a skills folder (a team repository in
``skills.external_dirs``, the agent itself) can put a FIFO or a link to
``/dev/zero`` where the plugin reads: the active organisation's marker
``_org/.active_org``, which Hermes 0.19 and 0.22 never read themselves. Anyone
who can write the state folder can put a link where the plugin writes. Each
case runs through real Hermes 0.19: its gateway's ``_handle_message``, an
``AIAgent`` turn and ``hermes chat -q`` against a fake model on 127.0.0.1,
and its ``hermes semantic-skills build`` and ``doctor``. A child that could
fill the memory runs under a cap (``RLIMIT_DATA``), so a regression fails
the test instead of taking the machine's memory.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import resource
import stat
import subprocess
import threading
import time
from pathlib import Path

import pytest
import yaml

from fake_llm import FakeChatServer, last_user_content, make_agent
from hermes_testkit import HERMES, ONNX, Gateway, subprocess_env
from reliability_kit import WORKER_READY_SECONDS, make_home, plugin_loaded, write_skill

DOCKER = "My postgres container keeps restarting and the web service can't connect to it"
OPENING = '<skill-context name="docker-compose-debug"'
EXTRA_SECONDS = 1.5  # what a turn may take beyond the same turn without the FIFO (see docs/reliability.md)
MEMORY_CAP = 2 << 30  # RLIMIT_DATA of a child: an onnx build needs about 0.6 GB; /dev/zero read whole needs all
KITE = "kite-surfing-safety"
KITE_QUERY = "check the wind before kite surfing"


def marker_of(skills_dir: Path) -> Path:
    return skills_dir / "_org" / ".active_org"


def make_fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


@contextlib.contextmanager
def released(fifo: Path):
    """On leaving, let go any reader stuck opening ``fifo`` (the code before #33): a writer opens and closes it."""
    try:
        yield fifo
    finally:
        for _ in range(20):
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:  # ENXIO: no reader left
                break
            os.close(fd)
            time.sleep(0.05)


def timed(work, limit: float):
    """``(seconds, work())``, or ``(limit, None)`` when ``work`` has not returned within ``limit`` seconds."""
    outcome = []
    started = time.monotonic()
    thread = threading.Thread(target=lambda: outcome.append(work()), daemon=True)
    thread.start()
    thread.join(limit)
    return (time.monotonic() - started, outcome[0]) if outcome else (limit, None)


def plugin_home(tmp_path: Path, index_dir: Path, **settings) -> Path:
    return make_home(tmp_path, {"index_dir": str(index_dir), "route_timeout_ms": 10000, **settings})


# --------------------------------------------------------------------------- a FIFO as the marker: no turn waits


def test_a_fifo_as_the_active_org_marker_holds_up_no_gateway_message(tmp_path, onnx_examples_index, monkeypatch):
    """#33.1: a FIFO at ``skills/_org/.active_org`` stopped every gateway message of Hermes 0.19 in
    ``read_active_org`` (a plain read that waits for a writer). The marker is refused without being opened: a
    message takes what it took without the FIFO, give or take 1.5 s, and still gets its skill."""
    home = plugin_home(tmp_path, onnx_examples_index)
    monkeypatch.setenv("WHATSAPP_ALLOWED_USERS", "*")

    with plugin_loaded(home) as runtime:
        assert runtime.client.wait_ready(WORKER_READY_SECONDS), runtime.client.status.detail
        gateway = Gateway(tmp_path / "sessions")
        without, turn = timed(lambda: gateway.send(DOCKER, gateway.new_user()), 60)
        assert turn is not None and turn.text.startswith(OPENING)
        with released(make_fifo(marker_of(home / "skills"))):
            took, turn = timed(lambda: gateway.send(DOCKER, gateway.new_user()), 30)
            assert turn is not None, "the gateway message waited on the FIFO"

    assert turn.text.startswith(OPENING) and took < without + EXTRA_SECONDS, (took, without)


def test_a_fifo_as_the_active_org_marker_holds_up_no_agent_turn(tmp_path, onnx_examples_index, llm):
    """#33.1: ``hermes chat -q`` on Hermes 0.19 hung past 120 s with no model call (``pre_llm_call`` waited on
    the FIFO). A real ``AIAgent`` turn on the fake model takes what it took without the FIFO, give or take 1.5 s,
    and the model gets the skill."""
    home = plugin_home(tmp_path, onnx_examples_index)

    with plugin_loaded(home) as runtime:
        assert runtime.client.wait_ready(WORKER_READY_SECONDS), runtime.client.status.detail
        without, done = timed(lambda: make_agent(llm, "before-the-fifo").run_conversation(DOCKER), 120)
        assert done is not None
        with released(make_fifo(marker_of(home / "skills"))):
            took, done = timed(lambda: make_agent(llm, "with-the-fifo").run_conversation(DOCKER), 60)
            assert done is not None, "the agent turn waited on the FIFO"

    assert took < without + EXTRA_SECONDS, (took, without)
    assert last_user_content(llm.chat_requests()[-1]).count(OPENING) == 1


# --------------------------------------------------------------------------- build, doctor and the word search


def capped():
    resource.setrlimit(resource.RLIMIT_DATA, (MEMORY_CAP, MEMORY_CAP))


def hermes(home: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """The real ``hermes ARGS`` on ``home``, its memory capped."""
    env = dict(subprocess_env(home), COLUMNS="200")
    env.pop("PYTHONPATH")
    return subprocess.run([str(HERMES), *args], env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=timeout, preexec_fn=capped)


def team_repository(root: Path) -> Path:
    """A skills repository as a team shares it through ``skills.external_dirs``: a skill, and a marker that git
    keeps as a link to /dev/zero."""
    write_skill(root, f"outdoors/{KITE}", f"---\nname: {KITE}\ndescription: Check the wind, the spot and the gear "
                                          "before kite surfing\n---\n# Kite surfing safety\n\nRead the forecast.\n")
    marker = marker_of(root)
    marker.parent.mkdir()
    marker.symlink_to("/dev/zero")
    return marker


def configure(home: Path, external: Path | None = None, **settings) -> None:
    path = home / "config.yaml"
    config = yaml.safe_load(path.read_text())
    if external is not None:
        config["skills"]["external_dirs"] = [str(external)]
    config["plugins"]["entries"]["semantic-skills"]["settings"].update(settings)
    path.write_text(yaml.safe_dump(config))


SPECIAL_MARKERS = {"a FIFO in the home's skills folder": "FIFO (named pipe)",
                   "a link to /dev/zero in an external_dirs repository": "character device"}


@pytest.mark.parametrize("case", sorted(SPECIAL_MARKERS))
def test_build_and_doctor_name_a_special_marker_in_one_line_and_go_on(tmp_path, case):
    """#33.1 and #33.2: the FIFO hung ``build`` and ``doctor``; the link to /dev/zero made ``build`` read until
    MemoryError (3 GB after 7 s). Each is refused unread: ``build`` says it in one line naming the path and what it
    is, and indexes every skill; ``doctor`` warns with the same words and the fix."""
    home = make_home(tmp_path, {"index_dir": str(tmp_path / "index"), "embedder": ONNX})
    repository = tmp_path / "team-skills"
    if SPECIAL_MARKERS[case] == "character device":
        marker = team_repository(repository)
        configure(home, external=repository)
    else:
        marker = make_fifo(marker_of(home / "skills"))
    said = f"{marker}: a {SPECIAL_MARKERS[case]}, not a regular file; no organisation's mirrored skills are read"

    with released(marker) if SPECIAL_MARKERS[case].startswith("FIFO") else contextlib.nullcontext():
        built = hermes(home, "semantic-skills", "build", timeout=120)
        doctor = hermes(home, "semantic-skills", "doctor", timeout=300)

    assert built.returncode == 0, built.stdout + built.stderr
    assert [line for line in built.stdout.splitlines() if str(marker) in line] == [f"  skipped {said}"]
    skill_files = [*(home / "skills").rglob("SKILL.md"), *repository.rglob("SKILL.md")]
    indexed = json.loads((tmp_path / "index" / "manifest.json").read_bytes())["skills"]
    assert sorted(skill["path"] for skill in indexed) == sorted(map(str, skill_files))
    lines = doctor.stdout.splitlines()
    warning = next(line for line in lines if line.startswith("WARN skills: "))
    assert warning.endswith(f"; never read: {said}"), warning
    assert lines[lines.index(warning) + 1] == "     fix: remove each special file, or replace it with a regular file"


def test_the_word_search_in_the_hermes_process_refuses_a_link_to_dev_zero_in_one_line(tmp_path):
    """#33.2: before the first build ``search_skills`` answers by words from the skill files, in the Hermes
    process: the team repository's marker linked to /dev/zero took its memory to 3.1 GB before MemoryError. In a
    real ``hermes chat -q`` the model calls ``search_skills``; the answer lists the repository's skill, and
    agent.log says once which file was refused and what it is."""
    home = make_home(tmp_path, {"index_dir": str(tmp_path / "no-index-yet"), "embedder": ONNX})
    marker = team_repository(tmp_path / "team-skills")
    configure(home, external=tmp_path / "team-skills")

    with FakeChatServer() as llm:
        config = yaml.safe_load((home / "config.yaml").read_text())
        config["model"] = {"default": "fake-model", "provider": "custom", "base_url": llm.base_url,
                           "api_key": "sk-test"}
        (home / "config.yaml").write_text(yaml.safe_dump(config))
        llm.reply_tool_call("search_skills", {"query": KITE_QUERY})
        llm.reply_text("Check the wind first.")
        chat = hermes(home, "chat", "-q", KITE_QUERY, "-Q", timeout=300)
        requests = llm.chat_requests()

    assert chat.returncode == 0, chat.stdout[-3000:] + chat.stderr[-3000:]
    tool_messages = [m for request in requests for m in request["messages"] if m["role"] == "tool"]
    answer = json.loads(tool_messages[-1]["content"])
    assert answer.get("matched") == "words" and answer["results"][0]["name"] == KITE, answer
    log = (home / "logs" / "agent.log").read_text(errors="replace")
    refused = [line for line in log.splitlines() if str(marker) in line]
    assert len(refused) == 1 and "a character device, not a regular file" in refused[0], refused


# --------------------------------------------------------------------------- state files: never through a link

CARD = "My postgres container keeps restarting; the card on the account is 4111 1111 1111 1111"
LINKED = {"the decision record, a symbolic link": ("decisions.jsonl", "a symbolic link, not a regular file"),
          "the decision record, a hard link": ("decisions.jsonl", "a hard link (the same file has another name too), "
                                                                  "not a file of its own"),
          "its previous generation, a symbolic link": ("decisions.1.jsonl", "a symbolic link, not a regular file"),
          "the dedupe file, a symbolic link": ("dedupe.json", "a symbolic link, not a regular file")}


@pytest.mark.parametrize("case", sorted(LINKED))
def test_a_state_file_that_is_a_link_is_set_aside_and_its_target_never_touched(tmp_path, onnx_examples_index,
                                                                               caplog, monkeypatch, case):
    """#33.6: with ``record_message_text`` on, ``decisions.jsonl`` as a link made the message text (a card number)
    go to a 0644 file outside the state folder. A link in the state folder is never followed, for reading or
    writing: the plugin moves it aside to ``NAME.damaged`` with one warning naming it, writes its file afresh
    inside the state folder (0600), and the file the link led to keeps its bytes and its mode."""
    name, what = LINKED[case]
    home = plugin_home(tmp_path, onnx_examples_index, record_message_text=True)
    folder = home / "semantic-skills"
    folder.mkdir()
    outside = tmp_path / "elsewhere" / "notes.txt"
    outside.parent.mkdir()
    outside.write_bytes(b'{"version": 3, "clean": true, "blocks": [], "chats": []}\n')
    outside.chmod(0o644)
    before = outside.read_bytes()
    if "symbolic" in what:
        (folder / name).symlink_to(outside)
    else:
        os.link(outside, folder / name)
    monkeypatch.setenv("WHATSAPP_ALLOWED_USERS", "*")

    with caplog.at_level(logging.WARNING, logger="semantic_skills"), plugin_loaded(home) as runtime:
        assert runtime.client.wait_ready(WORKER_READY_SECONDS), runtime.client.status.detail
        assert runtime.trust.wait_loaded(30)
        assert Gateway(tmp_path / "sessions").send(CARD, "15550001@s.whatsapp.net").text.startswith(OPENING)
        runtime.decisions.flush()

    assert outside.read_bytes() == before and stat.S_IMODE(outside.stat().st_mode) == 0o644
    said = [r.getMessage() for r in caplog.records if str(folder / name) in r.getMessage()]
    assert len(said) == 1 and what in said[0] and f"{name}.damaged" in said[0], said
    record = folder / "decisions.jsonl"
    info = record.lstat()
    assert stat.S_ISREG(info.st_mode) and info.st_nlink == 1 and stat.S_IMODE(info.st_mode) == 0o600
    assert b"4111 1111 1111 1111" in record.read_bytes()
