"""A ``pre_llm_call`` waits at most one budget, all its waits together, well inside Hermes' own limit.

Hermes 0.21 abandons a ``pre_llm_call`` callback after
``plugins.hook_callback_timeout`` (30 s by default) and then mutes it for a
minute; 0.19 has no such limit. The plugin reads the limit where Hermes
exposes it (``hermes_cli.plugins._resolve_hook_callback_timeout``), assumes
the default elsewhere, and waits at most half of it. The worker here is real
and really stopped (``SIGSTOP``): alive, holding its requests, answering none.
"""

from __future__ import annotations

import math
import os
import signal
import time
from contextlib import contextmanager

import pytest

from semantic_skills.hermes.budget import AGENT_ANSWER_TIMEOUT_SECONDS
from semantic_skills.hermes.host import limits, probes

from hermes_testkit import Gateway
from reliability_kit import WORKER_READY_SECONDS, agent_context, make_home, plugin_loaded

SLACK_SECONDS = 1.5  # what a loaded 2-core machine may add to a wait (see docs/reliability.md)
MESSAGES = ("My postgres container keeps restarting and the web service can't connect to it",
            "Can you turn this scanned contract PDF into markdown with the tables intact?",
            "The docker compose database service restarts in a loop again and the api cannot reach it")


@pytest.fixture(scope="module")
def plugin(tmp_path_factory, onnx_examples_index):
    """A home of its own: stopping its worker must not disturb the other tests' worker."""
    home = make_home(tmp_path_factory.mktemp("time-limits"), {"index_dir": str(onnx_examples_index)})
    with plugin_loaded(home) as runtime:
        assert runtime.client.wait_ready(WORKER_READY_SECONDS), runtime.client.status.detail
        yield home, runtime


@pytest.fixture()
def runtime(plugin, monkeypatch):
    home, runtime = plugin
    monkeypatch.setenv("HERMES_HOME", str(home))
    assert runtime.client.wait_ready(WORKER_READY_SECONDS), runtime.client.status.detail
    return runtime


@pytest.fixture()
def host_limit(monkeypatch):
    """Give this Hermes 0.21's ``_resolve_hook_callback_timeout`` answering ``seconds``."""
    import hermes_cli.plugins

    def set_limit(seconds: float) -> None:
        monkeypatch.setattr(hermes_cli.plugins, "_resolve_hook_callback_timeout", lambda: seconds, raising=False)

    return set_limit


@contextmanager
def stopped(runtime):
    """The routing worker stopped with SIGSTOP for the duration of the block."""
    pid = runtime.client._process.pid
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def timed(call):
    start = time.monotonic()
    result = call()
    return result, time.monotonic() - start


def test_a_stopped_worker_holds_an_agent_turn_for_one_answer_wait_at_most(runtime):
    assert agent_context(MESSAGES[0], "cli", "before").startswith("<skill-context")  # the control

    with stopped(runtime):
        context, seconds = timed(lambda: agent_context(MESSAGES[0], "cli", "stopped"))

    assert context == "" and seconds < AGENT_ANSWER_TIMEOUT_SECONDS + SLACK_SECONDS, seconds


@pytest.mark.parametrize(("host_seconds", "bound"), [(None, AGENT_ANSWER_TIMEOUT_SECONDS), (4.0, 2.0)],
                         ids=["Hermes 0.19", "a 4 s hook limit"])
def test_every_pending_gateway_turn_of_one_call_shares_the_budget(runtime, host_limit, tmp_path, monkeypatch,
                                                                   host_seconds, bound):
    """Three gateway messages wait for a stopped worker; the agent turn that takes them all waits once:
    one answer window, and never past half of the host's limit."""
    from hermes_cli.plugins import invoke_hook

    if host_seconds is not None:
        host_limit(host_seconds)
    monkeypatch.setenv("WHATSAPP_ALLOWED_USERS", "*")
    gateway = Gateway(tmp_path / "sessions")
    user = gateway.new_user()

    with stopped(runtime):
        for text in MESSAGES:
            invoke_hook("pre_gateway_dispatch", event=gateway.event(text, user), gateway=gateway.runner,
                        session_store=gateway.runner.session_store)
        results, seconds = timed(lambda: invoke_hook(
            "pre_llm_call", session_id="pending-turns", user_message="\n\n".join(MESSAGES), platform="whatsapp",
            sender_id=user, conversation_history=[], is_first_turn=True))

    assert results == [] and seconds < bound + SLACK_SECONDS, seconds
    assert len(runtime.turns.take("whatsapp", user, None, "\n\n".join(MESSAGES))) == 0  # all three were taken


def test_the_budget_follows_the_hosts_limit(runtime, host_limit):
    wanted = runtime.refresh().warmup_wait_seconds + AGENT_ANSWER_TIMEOUT_SECONDS

    assert limits.host_hook_timeout() == limits.DEFAULT_HOOK_TIMEOUT_SECONDS  # Hermes 0.19: none said
    assert runtime.hook_deadline().seconds == min(wanted, 15.0)
    host_limit(600.0)  # Hermes' largest
    assert runtime.hook_deadline().seconds == wanted
    host_limit(0.0)  # switched off: Hermes never abandons a callback
    assert limits.host_hook_timeout() == math.inf and runtime.hook_deadline().seconds == wanted
    host_limit(8.0)
    assert runtime.hook_deadline().seconds == 4.0
    shown = {c.name: c for c in probes.probe(load_gateway=False)}[probes.HOOK_TIME_LIMIT]
    assert shown.available and "after 8 s" in shown.detail and "at most half" in shown.detail


def test_hermes_exits_within_5_s_with_a_stopped_worker_and_a_full_pipe(tmp_path, onnx_examples_index, monkeypatch):
    """Eight 16,000-character messages to a SIGSTOPped worker fill its stdin pipe, so the client's writer thread
    blocks in ``write()`` holding the buffer's lock; ``close_all`` (what Hermes' exit runs, through atexit) must
    still return, and the worker be gone, within 5 s (it never returned: closing stdin waited for that lock)."""
    import threading

    from hermes_cli.plugins import invoke_hook

    from semantic_skills.hermes import runtime as runtime_module

    home = make_home(tmp_path, {"index_dir": str(onnx_examples_index)})
    monkeypatch.setenv("WHATSAPP_ALLOWED_USERS", "*")
    with plugin_loaded(home) as runtime:
        assert runtime.client.wait_ready(WORKER_READY_SECONDS), runtime.client.status.detail
        gateway = Gateway(tmp_path / "sessions")
        process = runtime.client._process
        os.kill(process.pid, signal.SIGSTOP)
        try:
            for number in range(8):
                text = f"{number} my docker compose postgres container keeps restarting " * 250
                invoke_hook("pre_gateway_dispatch", event=gateway.event(text[:16_000], gateway.new_user()),
                            gateway=gateway.runner, session_store=gateway.runner.session_store)
            closing = threading.Thread(target=runtime_module.close_all, daemon=True)
            start = time.monotonic()
            closing.start()
            closing.join(10)
            seconds = time.monotonic() - start
            assert not closing.is_alive() and seconds <= 5.0, seconds
            assert process.poll() is not None  # the worker is gone, not left stopped
        finally:
            if process.poll() is None:
                process.kill()  # let a hung close finish, so the test ends
