"""The settings and code paths chosen for speed keep their behaviour (timings live in benchmarks/)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from semantic_skills.worker.client import RouterClient
from semantic_skills.worker.protocol import WAITING_FOR_INDEX


def _environment_of(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(entry.split("=", 1) for entry in raw.decode(errors="replace").split("\0") if "=" in entry)


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to read the worker's environment")
def test_routing_worker_runs_numpy_torch_and_onnxruntime_on_one_thread(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "8")  # the host's own setting does not leak into the worker
    client = RouterClient(tmp_path / "no-index-yet")
    client.start()
    try:
        deadline = time.monotonic() + 60
        while client.status.state != WAITING_FOR_INDEX and time.monotonic() < deadline:
            time.sleep(0.05)
        assert client.status.state == WAITING_FOR_INDEX, client.status.detail
        environment = _environment_of(client._process.pid)
    finally:
        client.close()

    assert environment["OMP_NUM_THREADS"] == "1"
    assert environment["OPENBLAS_NUM_THREADS"] == "1" and environment["MKL_NUM_THREADS"] == "1"


QUERIES = [
    "convert this PDF to markdown",
    "My postgres container keeps restarting and the web service can't connect to it",
    "好的，请帮我把这个表格转换成图表",
    "deploy " * 400,  # longer than the model's 256 tokens: truncated the same way
]


def _encode_vector(embedder, text):
    import numpy as np

    vector = embedder._model.encode([text], normalize_embeddings=True, convert_to_numpy=True)[0]
    return vector / np.linalg.norm(vector)


@pytest.mark.parametrize("text", QUERIES)
def test_query_vector_is_the_one_encode_gives(bundled_embedder, text):
    import numpy as np

    assert np.allclose(bundled_embedder.embed_query(text), _encode_vector(bundled_embedder, text), atol=1e-6)


def test_query_vector_honours_a_default_prompt_as_encode_does(bundled_embedder, monkeypatch):
    import numpy as np

    text = QUERIES[0]
    plain = bundled_embedder.embed_query(text)
    monkeypatch.setattr(bundled_embedder._model, "prompts", {"query": "query: "})
    monkeypatch.setattr(bundled_embedder._model, "default_prompt_name", "query")

    prompted = bundled_embedder.embed_query(text)

    assert np.allclose(prompted, _encode_vector(bundled_embedder, text), atol=1e-6)
    assert not np.allclose(prompted, plain, atol=1e-3)


def test_documents_are_embedded_by_length_but_returned_in_input_order(bundled_embedder, monkeypatch):
    import numpy as np

    texts = ["bake bread", "deploy the web service with docker compose and check its health", "pdf",
             "convert a scanned PDF into clean markdown with tables and headings preserved", "sql"]
    monkeypatch.setattr(bundled_embedder, "batch_size", 2)
    advanced = []

    vectors = bundled_embedder.embed_documents(texts, progress=advanced.append)

    expected = np.vstack([_encode_vector(bundled_embedder, t) for t in texts])
    assert np.allclose(vectors, expected, atol=1e-5)
    assert advanced == [2, 1, 2]  # the longest two, the shortest, then the middle two


def test_config_is_read_as_yaml_safe_load_reads_it(tmp_path):
    import yaml

    from semantic_skills.hermes.config import load_config

    hermes_config = pytest.importorskip("hermes_cli.config", reason="Hermes Agent is not installed")
    text = yaml.safe_dump({**hermes_config.DEFAULT_CONFIG, "when": "2026-01-02", "ratio": 1e-3, "empty": None},
                          sort_keys=False)
    (tmp_path / "config.yaml").write_text(text + "anchors: &a {x: 1}\nalias: *a\n")

    assert load_config(tmp_path) == yaml.safe_load((tmp_path / "config.yaml").read_text())


@pytest.mark.parametrize("backend, expected", [("sentence-transformers", 16), ("onnx", 16), ("litellm", 64)])
def test_batch_size_defaults_to_the_backends_own_and_a_setting_overrides_it(backend, expected):
    from semantic_skills.embedders.factory import create_embedder
    from semantic_skills.settings import EmbedderSettings

    model = "openai/text-embedding-3-small" if backend == "litellm" else ""

    assert create_embedder(EmbedderSettings(backend=backend, model=model)).batch_size == expected
    assert create_embedder(EmbedderSettings(backend=backend, model=model, batch_size=5)).batch_size == 5


def test_loading_the_torch_model_makes_openmp_threads_wait_passively(monkeypatch, default_model):
    import os

    from semantic_skills.embedders.sentence_transformers import SentenceTransformerEmbedder

    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    SentenceTransformerEmbedder().load()

    assert os.environ["OMP_WAIT_POLICY"] == "PASSIVE"


@pytest.fixture(scope="module")
def prompted_model_folder(tmp_path_factory) -> Path:
    """The bundled MiniLM's files plus a config_sentence_transformers.json with query and document prompts."""
    import json

    from semantic_skills.embedders.sentence_transformers import bundled_model_folder

    folder = tmp_path_factory.mktemp("prompted-model")
    for entry in bundled_model_folder().iterdir():
        if entry.name != "config_sentence_transformers.json":
            (folder / entry.name).symlink_to(entry)
    prompts = {"query": "search query: ", "document": "skill text: "}
    (folder / "config_sentence_transformers.json").write_text(
        json.dumps({"prompts": prompts, "default_prompt_name": None}))
    return folder


def test_a_local_model_folder_gets_its_own_query_and_document_prompts(prompted_model_folder, bundled_embedder):
    import numpy as np

    from semantic_skills.embedders.sentence_transformers import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder(str(prompted_model_folder))
    text = QUERIES[1]
    assert np.allclose(embedder.embed_query(text), bundled_embedder.embed_query("search query: " + text), atol=1e-5)
    document = embedder.embed_documents([text])[0]
    assert np.allclose(document, bundled_embedder.embed_documents(["skill text: " + text])[0], atol=1e-5)
    configured = SentenceTransformerEmbedder(str(prompted_model_folder), query_prefix="q: ", document_prefix="d: ")
    assert np.allclose(configured.embed_query(text), bundled_embedder.embed_query("q: " + text), atol=1e-5)
    assert np.allclose(configured.embed_documents([text])[0], bundled_embedder.embed_documents(["d: " + text])[0],
                       atol=1e-5)


def test_an_index_built_with_a_prompted_model_folder_routes_with_its_prompts(
        prompted_model_folder, tmp_path, default_model):
    from semantic_skills.builder import build_index
    from semantic_skills.router import SkillRouter
    from semantic_skills.settings import EmbedderSettings
    from semantic_skills.skills.discovery import SkillsRoot

    from support import EXAMPLES

    settings = EmbedderSettings(backend="sentence-transformers", model=str(prompted_model_folder))
    build_index([SkillsRoot(EXAMPLES / "skills")], tmp_path / "index", settings)
    router = SkillRouter.open(tmp_path / "index")  # the embedder recorded in the index, prompts from its folder
    decision = router.route("convert this scanned PDF into markdown")
    assert router.embedder.identity.model == str(prompted_model_folder)
    assert decision.skill is not None and decision.skill.name == "pdf-to-markdown"
