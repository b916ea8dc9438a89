"""On the gateway, a slower local embedder's answers are waited for: the wait follows the worker's measured answers.

The worker is real and serves a real index; only its embedder is made slower:
the worker runs under a Python (``slow_python``) that makes each query
embedding sleep :data:`DELAY` seconds first, longer than the 24 ms the gateway
waited before the wait was measured. The gateway hook runs against a real
``GatewayRunner``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from semantic_skills.hermes import hooks
from semantic_skills.hermes.budget import MAX_LOCAL_ROUTE_TIMEOUT_MS
from semantic_skills.hermes.runtime import PluginRuntime

from hermes_testkit import ONNX, Gateway, write_settings
from reliability_kit import WORKER_READY_SECONDS, make_home

DELAY = 0.026  # each query embedding's sleep: more than 24 ms, and well within the 45 ms the wait may reach
MESSAGES = 12
PDF = "convert this scanned PDF into clean markdown"

SLOW_PYTHON = """#!{python} -B
# Runs the worker as the client starts it (see worker/launch.py: -E -P -B -c BOOTSTRAP folder module paths ...),
# with every onnx query embedding made {delay} s slower.
import runpy, sys, time

bootstrap, sys.argv = sys.argv[5], ["-c", *sys.argv[6:]]
run_module = runpy.run_module


def run_slowly(*args, **kwargs):
    from semantic_skills.embedders.onnx import OnnxEmbedder

    embed = OnnxEmbedder.embed_query
    OnnxEmbedder.embed_query = lambda self, text: time.sleep({delay}) or embed(self, text)
    return run_module(*args, **kwargs)


runpy.run_module = run_slowly
exec(bootstrap, {{"__name__": "__main__"}})
"""


def slow_python(folder: Path) -> Path:
    script = folder / "slow-python"
    script.write_text(SLOW_PYTHON.format(python=sys.executable, delay=DELAY))
    script.chmod(0o755)
    return script


def gateway_messages(rt: PluginRuntime, gateway: Gateway, batch: str) -> list[dict | None]:
    """:data:`MESSAGES` messages no other ``batch`` sends (the router caches repeated ones), each from a new chat."""
    return [hooks.pre_gateway_dispatch(rt, event=gateway.event(f"{PDF} ({batch} {number})", gateway.new_user()),
                                       gateway=gateway.runner, session_store=gateway.runner.session_store)
            for number in range(MESSAGES)]


def test_a_slower_embedders_answers_are_waited_for_on_the_gateway(tmp_path, onnx_examples_index, monkeypatch):
    home = make_home(tmp_path, {"index_dir": str(onnx_examples_index), "embedder": ONNX}, skills=None)
    monkeypatch.setenv("HERMES_HOME", str(home))
    monkeypatch.setenv("WHATSAPP_ALLOWED_USERS", "*")
    rt = PluginRuntime(home)
    rt.client._python = str(slow_python(tmp_path))
    try:
        rt.start()
        assert rt.client.wait_ready(WORKER_READY_SECONDS), rt.client.status.detail
        first_wait = rt.route_timeout()  # from the worker's warm-up routes: no answer timed yet
        measured = gateway_messages(rt, Gateway(tmp_path / "measured"), "measured")
        measured_wait = rt.route_timeout()
        write_settings(home, index_dir=str(onnx_examples_index), embedder=ONNX, route_timeout_ms=24)
        fixed = gateway_messages(rt, Gateway(tmp_path / "fixed"), "fixed")
    finally:
        rt.close()

    assert DELAY < first_wait <= MAX_LOCAL_ROUTE_TIMEOUT_MS / 1000
    assert DELAY < measured_wait <= MAX_LOCAL_ROUTE_TIMEOUT_MS / 1000
    rewritten = [r["text"] for r in measured if r]
    assert len(rewritten) >= MESSAGES // 2, f"{len(rewritten)} of {MESSAGES} answered within {measured_wait}"
    assert all(text.startswith('<skill-context name="pdf-to-markdown"') for text in rewritten)
    assert fixed == [None] * MESSAGES  # 24 ms, set: no answer can come in time, each goes to pre_llm_call
