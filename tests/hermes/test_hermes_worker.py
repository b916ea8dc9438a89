"""Faults around the routing worker: no index, a broken rebuild, a crash, a dead host."""

from __future__ import annotations

import functools
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from semantic_skills.hermes import hooks, tool
from semantic_skills.hermes import runtime as runtime_module
from semantic_skills.hermes.runtime import PluginRuntime
from semantic_skills.worker.client import RouterClient
from semantic_skills.worker.protocol import FAILED, WAITING_FOR_INDEX

from hermes_testkit import (
    EXAMPLE_SKILLS,
    ONNX,
    REPO,
    Gateway,
    build_index,
    wait_until,
    worker_processes,
    write_settings,
)

DOCKER = "My postgres container keeps restarting and the web service can't connect to it"

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to find worker processes")


def semantic_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "semantic_skills" and r.levelno >= logging.WARNING]


def test_missing_index_passes_messages_through_logs_once_and_is_served_once_built(tmp_path, monkeypatch,
                                                                                   caplog):
    home = tmp_path / "home"
    shutil.copytree(EXAMPLE_SKILLS, home / "skills")
    index_dir = tmp_path / "index-built-later"
    write_settings(home, index_dir=str(index_dir), embedder=ONNX)
    monkeypatch.setenv("WHATSAPP_ALLOWED_USERS", "*")
    gateway = Gateway(tmp_path / "sessions")
    rt = PluginRuntime(home)

    def one_message(number: int):
        event = gateway.event(f"{DOCKER} ({number})", gateway.new_user())
        return (hooks.pre_gateway_dispatch(rt, event=event, gateway=gateway.runner,
                                           session_store=gateway.runner.session_store),
                hooks.pre_llm_call(rt, session_id=f"cli-{number}", user_message=f"{DOCKER} ({number})",
                                   platform="cli", sender_id=""))

    try:
        with caplog.at_level(logging.INFO, logger="semantic_skills"):
            rt.client.start()
            assert wait_until(lambda: rt.client.status.state == WAITING_FOR_INDEX, timeout=60)
            assert [one_message(n) for n in range(3)] == [(None, None)] * 3
            warnings_after_three = semantic_warnings(caplog)
            assert [one_message(n) for n in range(3, 10)] == [(None, None)] * 7
            found = json.loads(tool.search_skills(rt, {"query": "pdf to markdown"}))

            build_index(home, "--skills-dir", str(EXAMPLE_SKILLS), "--index-dir", str(index_dir))
            # the worker looks for the index once a second: until it sees it, wait_ready returns at once
            assert wait_until(lambda: rt.client.status.state != WAITING_FOR_INDEX, timeout=30)
            assert rt.client.wait_ready(240), rt.client.status.detail
            later = hooks.pre_llm_call(rt, session_id="cli-after-build", user_message=DOCKER, platform="cli",
                                       sender_id="")
    finally:
        rt.close()

    assert warnings_after_three and semantic_warnings(caplog) == warnings_after_three
    assert warnings_after_three == [f"semantic-skills: no skill index in {index_dir}; build one with: "
                                    f"HERMES_HOME={home} hermes semantic-skills build"]  # as a Hermes user runs it
    # until then search_skills answers from the skill files' words, and says why
    assert found["matched"] == "words" and f"HERMES_HOME={home} hermes semantic-skills build" in found["note"]
    assert found["results"][0]["name"] == found["best"]["name"] == "pdf-to-markdown"
    assert later["context"].startswith('<skill-context name="docker-compose-debug"')


def test_broken_rebuild_keeps_the_old_index_and_is_reported_once(runtime, hermes_home, caplog):
    manifest = hermes_home.index_dir / "manifest.json"
    good = manifest.read_bytes()
    broken = hermes_home.index_dir / ".manifest.broken"

    def publish(data: bytes) -> None:
        broken.write_bytes(data)
        os.replace(broken, manifest)

    with caplog.at_level(logging.INFO, logger="semantic_skills"):
        publish(b'{"format": "semantic-skills-index", "format_version": 1}')
        try:
            reported = lambda: [m for m in semantic_warnings(caplog) if "kept the previous index" in m]  # noqa: E731
            assert wait_until(lambda: reported(), timeout=30)
            answers = [runtime.client.route(DOCKER, (), timeout=30) for _ in range(3)]
            wait_until(lambda: False, timeout=2.5)  # a few more reload checks
        finally:
            publish(good)

    assert all(a.ok and a.data["skill"] == "docker-compose-debug" for a in answers)
    assert len(reported()) == 1
    assert f"rebuild it with: HERMES_HOME={hermes_home.path} hermes semantic-skills build --full" in reported()[0]


def test_killed_worker_is_restarted_and_routing_resumes(runtime, hermes_home):
    workers = {pid for pid, parent in worker_processes(hermes_home.index_dir).items() if parent == os.getpid()}
    assert len(workers) == 1
    os.kill(workers.pop(), signal.SIGKILL)

    assert wait_until(lambda: not runtime.client.ready, timeout=30)
    assert runtime.client.wait_ready(240), runtime.client.status.detail
    answer = runtime.client.route(DOCKER, (), timeout=30)
    assert answer.ok and answer.data["skill"] == "docker-compose-debug"


HOST = textwrap.dedent("""
    import sys, time
    from semantic_skills.worker.client import RouterClient
    client = RouterClient(sys.argv[1])
    client.start()
    while client.status.state != "waiting_for_index":
        time.sleep(0.05)
    print("ready", flush=True)
    time.sleep(600)
""")


def test_worker_exits_when_its_host_is_killed(tmp_path):
    index_dir = tmp_path / "index"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    host = subprocess.Popen([sys.executable, "-c", HOST, str(index_dir)], stdout=subprocess.PIPE, env=env,
                            stdin=subprocess.DEVNULL)
    try:
        assert host.stdout.readline().strip() == b"ready"
        workers = [pid for pid, parent in worker_processes(index_dir).items() if parent == host.pid]
        assert len(workers) == 1
    finally:
        host.kill()
        host.wait()

    assert wait_until(lambda: not worker_processes(index_dir), timeout=30)


def test_a_changed_threshold_applies_to_the_next_message_without_any_restart(gateway, runtime, hermes_home):
    workers = set(worker_processes(hermes_home.index_dir))
    before = gateway.send(DOCKER, gateway.new_user())
    hermes_home.configure(threshold=0.95)
    try:
        raised = gateway.send(DOCKER, gateway.new_user())
    finally:
        hermes_home.configure()
    restored = gateway.send(DOCKER, gateway.new_user())

    assert before.text.startswith('<skill-context name="docker-compose-debug"')
    assert raised.text == DOCKER and raised.context == ""
    assert restored.text.startswith('<skill-context name="docker-compose-debug"')
    assert set(worker_processes(hermes_home.index_dir)) == workers and runtime.client.ready


REMOTE = {"backend": "litellm", "model": "openai/text-embedding-3-small"}  # refused before any request is sent


def test_a_changed_embedder_setting_restarts_the_worker_without_restarting_the_runtime(tmp_path, hermes_home):
    """The session's index was built with the onnx embedder; settings that name no embedder use it."""
    home = tmp_path / "home"
    home.mkdir()
    write_settings(home, index_dir=str(hermes_home.index_dir), warmup_wait_seconds=240)
    rt = PluginRuntime(home)

    def route(number: int):
        return hooks.pre_llm_call(rt, session_id=f"cli-{number}", user_message=DOCKER, platform="cli", sender_id="")

    try:
        rt.client.start()
        assert rt.client.wait_ready(240), rt.client.status.detail
        first_worker = rt.client._process.pid
        write_settings(home, index_dir=str(hermes_home.index_dir), warmup_wait_seconds=240, embedder=REMOTE)
        refused = route(1)
        assert wait_until(lambda: rt.client.status.state == FAILED, timeout=240), rt.client.status.detail
        refusal, remote_worker = rt.client.status.detail, rt.client._process.pid
        write_settings(home, index_dir=str(hermes_home.index_dir), warmup_wait_seconds=240)
        rt.refresh()  # what the next hook call does first: the worker restarts with the index's embedder
        assert rt.client.wait_ready(240), rt.client.status.detail  # one hook call would wait 15 s at most
        routed, last_worker = route(2), rt.client._process.pid
    finally:
        rt.close()

    assert refused is None and "the configured embedder is litellm openai/text-embedding-3-small" in refusal
    assert len({first_worker, remote_worker, last_worker}) == 3
    assert routed["context"].startswith('<skill-context name="docker-compose-debug"')


CRASHING_PYTHON = ("#!/bin/sh\necho 'Traceback (most recent call last):' >&2\n"
                   "echo 'ImportError: planted inspect.py' >&2\nexit 1\n")


def test_a_worker_that_keeps_exiting_is_said_once_with_the_way_to_look_into_it(tmp_path, monkeypatch, caplog):
    python = tmp_path / "python"  # an interpreter that dies at start, as the worker did on a planted module
    python.write_text(CRASHING_PYTHON)
    python.chmod(0o755)
    monkeypatch.setattr(runtime_module, "RouterClient",
                        functools.partial(RouterClient, python=str(python), restart_delays=(0.2,)))
    home = tmp_path / "home"
    home.mkdir()
    rt = PluginRuntime(home)
    try:
        with caplog.at_level(logging.WARNING, logger="semantic_skills"):
            rt.client.start()
            assert wait_until(lambda: rt.client.status.state == FAILED, timeout=30)
            started = time.monotonic()
            routed = hooks.pre_llm_call(rt, session_id="s", user_message=DOCKER, platform="cli", sender_id="")
            unrouted_in = time.monotonic() - started
            answer = json.loads(tool.search_skills(rt, {"query": "pdf to markdown"}))
            wait_until(lambda: False, timeout=1.5)  # a few more restarts and exits
    finally:
        rt.close()

    assert routed is None and unrouted_in < rt.refresh().warmup_wait_seconds  # no warm-up wait on a failed worker
    assert answer["matched"] == "words" and answer["results"] == []  # a home without skills
    for part in ("the routing worker exited with code 1", "ImportError: planted inspect.py",
                 f"check with: HERMES_HOME={home} hermes semantic-skills doctor"):
        assert part in answer["note"]
    reported = [m for m in semantic_warnings(caplog) if "exited with code 1" in m]
    assert len(reported) == 1 and f"check with: HERMES_HOME={home} hermes semantic-skills doctor" in reported[0]
