"""Fixtures for the tests against the real Hermes Agent 0.19.

The session shares one Hermes home (the plugin installed with ``hermes plugins
install``, the example skills, the onnx embedder set, the first vector set of
the install without PyTorch, an index built with ``semantic-skills build``), one plugin
load through Hermes' own plugin manager and one warmed routing worker. No test
on that home is about the default model, and each routing worker a test starts
there is ready without importing PyTorch (about 5 s of CPU each);
``default_hermes_home`` is the default install, for the checks whose subject it
is.
"""

from __future__ import annotations

from concurrent.futures import Future
from concurrent.futures import TimeoutError as AnswerTimeout
from pathlib import Path

import pytest

pytest.importorskip("hermes_cli.plugins", reason="Hermes Agent is not installed (pip install -r requirements-dev.txt)")

from hermes_testkit import (  # noqa: E402
    ONNX,
    PLUGIN,
    WORKER_READY_SECONDS,
    Gateway,
    HermesHome,
    install_home,
    snapshot_checkout,
)

# A generous gateway budget makes the gateway path deterministic on a loaded machine;
# the late path (answer after the budget) has its own test.
GATEWAY_BUDGET = {"route_timeout_ms": 10000}


@pytest.fixture(scope="session")
def plugin_checkout(tmp_path_factory) -> Path:
    return snapshot_checkout(tmp_path_factory.mktemp("checkout") / PLUGIN)


@pytest.fixture(scope="session")
def hermes_home(tmp_path_factory, plugin_checkout, onnx_embedder) -> HermesHome:
    """The session's Hermes home (see the module docstring): the plugin installed and enabled, the example skills,
    the onnx embedder (``onnx_embedder`` skips where it is not installed), and an index it built."""
    return install_home(tmp_path_factory.mktemp("hermes_home"), plugin_checkout, **GATEWAY_BUDGET, embedder=ONNX)


@pytest.fixture(scope="session")
def default_hermes_home(tmp_path_factory, plugin_checkout, default_model) -> HermesHome:
    """A Hermes home as the default install leaves it: no embedder setting, an index the default model built."""
    return install_home(tmp_path_factory.mktemp("default_hermes_home"), plugin_checkout, **GATEWAY_BUDGET)


@pytest.fixture(autouse=True)
def _isolated_hermes_home(hermes_home, monkeypatch):
    """Overrides the suite-wide fixture: these tests share the session's Hermes home."""
    monkeypatch.setenv("HERMES_HOME", str(hermes_home.path))
    monkeypatch.delenv("SEMANTIC_SKILLS_INDEX_DIR", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    return hermes_home.path


@pytest.fixture(scope="session")
def plugin_manager(hermes_home):
    """Hermes' own plugin manager after discovery, with the routing worker warm."""
    from hermes_cli.plugins import get_plugin_manager

    from semantic_skills.hermes.runtime import current_runtime

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HERMES_HOME", str(hermes_home.path))
        manager = get_plugin_manager()
        manager.discover_and_load(force=True)
        runtime = current_runtime()
        assert runtime is not None and runtime.home == hermes_home.path
        assert runtime.client.wait_ready(WORKER_READY_SECONDS), runtime.client.status.detail
        yield manager
        runtime.close()


@pytest.fixture()
def runtime(plugin_manager):
    """The session's plugin runtime, its worker ready: an earlier test may have changed and restored a start-up
    setting, and the worker it restarted must not make this test's gateway answers late."""
    from semantic_skills.hermes.runtime import current_runtime

    rt = current_runtime()
    assert rt.client.wait_ready(WORKER_READY_SECONDS), rt.client.status.detail
    return rt


@pytest.fixture()
def gateway(runtime, tmp_path, monkeypatch) -> Gateway:
    for name in ("WHATSAPP_ALLOWED_USERS", "GATEWAY_ALLOWED_USERS", "WHATSAPP_ALLOW_ALL_USERS",
                 "GATEWAY_ALLOW_ALL_USERS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("WHATSAPP_ALLOWED_USERS", "*")
    return Gateway(tmp_path / "sessions")


@pytest.fixture()
def routing_requests(runtime, monkeypatch) -> list[tuple]:
    """Every request the plugin sends to the routing worker during the test."""
    sent = []
    submit = runtime.client.submit

    def counting_submit(op, **payload):
        sent.append((op, payload.get("text")))
        return submit(op, **payload)

    monkeypatch.setattr(runtime.client, "submit", counting_submit)
    return sent


class _LateAnswer:
    """A routing answer the gateway's event loop never gets in time: a wait of no time at all finds it missing,
    however fast the worker was; any real wait (``pre_llm_call``'s) gets the worker's answer."""

    def __init__(self, answer: Future):
        self._answer = answer

    def result(self, timeout=None):
        if timeout == 0:
            raise AnswerTimeout()
        return self._answer.result(timeout)


@pytest.fixture()
def late_gateway_answers(runtime, monkeypatch):
    """Every routing answer misses the gateway loop's budget, so the agent-side hook finishes each message."""
    monkeypatch.setattr(runtime, "route_timeout", lambda: 0.0)
    route_async = runtime.client.route_async
    monkeypatch.setattr(runtime.client, "route_async",
                        lambda *args, **kwargs: _LateAnswer(route_async(*args, **kwargs)))
