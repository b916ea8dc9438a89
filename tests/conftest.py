"""Shared fixtures. Area-specific fixtures live in their own test modules."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support import EXAMPLES


@pytest.fixture(autouse=True)
def _isolated_hermes_home(tmp_path_factory, monkeypatch):
    """Every test gets an empty HERMES_HOME and no index-dir override."""
    home = tmp_path_factory.mktemp("hermes_home")
    monkeypatch.setenv("HERMES_HOME", str(home))
    monkeypatch.delenv("SEMANTIC_SKILLS_INDEX_DIR", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    return home


@pytest.fixture(scope="session")
def bundled_embedder():
    """The real default embedder, loaded once for the whole session."""
    from semantic_skills.embedders.sentence_transformers import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder()
    embedder.load()
    return embedder


@pytest.fixture(scope="session")
def examples_index(tmp_path_factory, bundled_embedder) -> Path:
    """An index of examples/skills built once per session (treat it as read-only)."""
    from semantic_skills.builder import build_index
    from semantic_skills.skills.discovery import SkillsRoot

    index_dir = tmp_path_factory.mktemp("examples_index")
    build_index([SkillsRoot(EXAMPLES / "skills")], index_dir, bundled_embedder)
    return index_dir


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
