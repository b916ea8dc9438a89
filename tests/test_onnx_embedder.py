"""The optional ``onnx`` embedder: all-MiniLM-L6-v2 int8 on onnxruntime, compared with the torch model."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from semantic_skills.cli import main
from semantic_skills.embedders.factory import configured_identity, create_embedder, settings_for_identity
from semantic_skills.embedders.onnx import BUNDLED_ONNX_MODEL, OnnxEmbedder
from semantic_skills.errors import EmbedderError
from semantic_skills.settings import EmbedderSettings

from support import EXAMPLES, import_refused

TEXTS = [
    "My postgres container keeps restarting and the web service can't connect to it",
    "Can you turn this scanned contract PDF into markdown with the tables intact?",
    "bake bread",
    "好的，请帮我把这个表格转换成图表",
]


def test_vectors_are_unit_length_and_close_to_the_torch_model(onnx_embedder, bundled_embedder):
    onnx = onnx_embedder.embed_documents(TEXTS)
    torch = bundled_embedder.embed_documents(TEXTS)

    assert onnx.shape == (len(TEXTS), 384) and onnx_embedder.identity.dimension == 384
    assert np.allclose(np.linalg.norm(onnx, axis=1), 1.0, atol=1e-5)
    assert (onnx * torch).sum(axis=1).min() > 0.99


def test_padding_in_a_batch_does_not_change_a_vector(onnx_embedder):
    batched = onnx_embedder.embed_documents(TEXTS)
    alone = np.vstack([onnx_embedder.embed_query(t) for t in TEXTS])

    assert np.allclose(batched, alone, atol=1e-4)


def test_long_texts_are_cut_at_256_tokens(onnx_embedder):
    # [CLS] + 254 words + [SEP] is exactly 256 tokens; anything after is dropped.
    assert np.allclose(onnx_embedder.embed_query("deploy " * 400), onnx_embedder.embed_query("deploy " * 254),
                       atol=1e-6)
    assert not np.allclose(onnx_embedder.embed_query("deploy " * 400),
                           onnx_embedder.embed_query("deploy " * 126), atol=1e-3)


def test_onnxruntime_uses_the_configured_thread_count_without_spinning(onnx_embedder, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    embedder = OnnxEmbedder()
    embedder.load()

    options = embedder._session.get_session_options()
    assert options.intra_op_num_threads == 1
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"


def test_routes_the_example_messages_like_the_torch_model(onnx_embedder, onnx_examples_index, examples_index):
    """The ground for ``onnx_examples_index`` standing in for the default model where the model is not the subject."""
    from semantic_skills.router import SkillRouter

    onnx_router = SkillRouter.open(onnx_examples_index, embedder=onnx_embedder)
    torch_router = SkillRouter.open(examples_index)
    messages = [m for m in (EXAMPLES / "messages.txt").read_text().splitlines() if m and not m.startswith("#")]

    for message in messages:
        onnx, torch = onnx_router.route(message), torch_router.route(message)
        assert [c.name for c in onnx.candidates[:1]] == [c.name for c in torch.candidates[:1]], message
        assert abs(onnx.score - torch.score) < 0.02
        assert (onnx.skill is None) == (torch.skill is None), message


def test_settings_and_identity_name_the_bundled_int8_model():
    settings = EmbedderSettings(backend="onnx")

    assert isinstance(create_embedder(settings), OnnxEmbedder)
    assert configured_identity(settings).model == BUNDLED_ONNX_MODEL
    assert settings_for_identity(configured_identity(settings)) == settings


def test_cli_builds_with_onnx_and_refuses_to_query_that_index_with_torch(onnx_embedder, tmp_path, monkeypatch):
    from semantic_skills import builder, router

    monkeypatch.setattr(builder, "create_embedder", lambda settings: onnx_embedder)
    monkeypatch.setattr(router, "create_embedder", lambda settings: onnx_embedder)
    built = CliRunner().invoke(main, ["build", "--skills-dir", str(EXAMPLES / "skills"), "--index-dir",
                                      str(tmp_path), "--embedder", "onnx", "--json"])
    assert built.exit_code == 0, built.output
    routed = CliRunner().invoke(main, ["route", "--index-dir", str(tmp_path), "--json",
                                       "My postgres container keeps restarting"])
    refused = CliRunner().invoke(main, ["route", "--index-dir", str(tmp_path), "--embedder",
                                        "sentence-transformers", "hello there friend"])

    assert json.loads(built.output.splitlines()[-1])["added"] == 10
    assert json.loads(routed.output)["skill"] == "docker-compose-debug"
    assert refused.exit_code == 1 and "built with onnx" in refused.output


def test_missing_onnxruntime_is_one_clear_error(monkeypatch):
    import_refused(monkeypatch, "onnxruntime")
    embedder = OnnxEmbedder(model=str(EXAMPLES))  # a folder without model files fails before the import
    with pytest.raises(EmbedderError, match="model.onnx, which is missing"):
        embedder.load()
    embedder = OnnxEmbedder()
    with pytest.raises(EmbedderError, match=r"^onnxruntime is not installed in .*; install the plugin's dependencies "
                                            r"into this Python: .* -m pip install -e \S+$"):
        embedder.load()
