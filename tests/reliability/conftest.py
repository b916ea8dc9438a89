"""Fixtures for the reliability catalogue.

``plugin`` is one Hermes home for the whole session: the example skills, a
2 MB skill, a hub skill whose body tries to break out of its block, and
skills Hermes would never offer (quarantined, disabled, for another platform
or OS), an index built with the onnx embedder (no test on this home is about
the default model, and its worker is ready without importing PyTorch), and the
plugin loaded through a fresh Hermes plugin manager with its routing worker
warm (see ``reliability_kit.plugin_loaded_apart``). Hermes' global state (its
plugin manager, the plugin's runtimes, the ``search_skills`` tool) is this
home's only while a test that asks for ``plugin_env`` runs, so the tests in
``tests/hermes`` are not disturbed whichever runs first in a process.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from reliability_kit import (
    KEY_ENV,
    WORKER_READY_SECONDS,
    HermesGlobals,
    make_home,
    plugin_loaded_apart,
    write_forbidden_skills,
    write_hub_skill,
    write_oversized_skill,
)
from support import FakeEmbeddingServer


@dataclass
class LoadedPlugin:
    home: Path
    runtime: object
    hermes_globals: HermesGlobals

    @property
    def index_dir(self) -> Path:
        return self.home / "skills_index"


@pytest.fixture(scope="session")
def plugin(tmp_path_factory, onnx_embedder):
    """The session's Hermes home with the plugin loaded and its worker warm (see the module docstring)."""
    from semantic_skills.builder import build_index
    from semantic_skills.skills.discovery import SkillsRoot

    home = make_home(tmp_path_factory.mktemp("reliability"), {"route_timeout_ms": 10000})
    write_forbidden_skills(home / "skills")
    write_oversized_skill(home / "skills")
    write_hub_skill(home / "skills")
    build_index([SkillsRoot(home / "skills")], home / "skills_index", onnx_embedder)
    with plugin_loaded_apart(home) as (runtime, hermes_globals):
        assert runtime.client.wait_ready(WORKER_READY_SECONDS), runtime.client.status.detail
        yield LoadedPlugin(home, runtime, hermes_globals)


@pytest.fixture()
def plugin_env(plugin, monkeypatch):
    """Run the test inside the session plugin's Hermes home, with its Hermes globals in place."""
    monkeypatch.setenv("HERMES_HOME", str(plugin.home))
    with plugin.hermes_globals.active():
        yield plugin


@pytest.fixture()
def gateway(plugin_env, tmp_path, monkeypatch):
    """A real GatewayRunner (see hermes_testkit.Gateway) whose WhatsApp senders are all authorized."""
    from hermes_testkit import Gateway

    for name in ("WHATSAPP_ALLOWED_USERS", "GATEWAY_ALLOWED_USERS", "WHATSAPP_ALLOW_ALL_USERS",
                 "GATEWAY_ALLOW_ALL_USERS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("WHATSAPP_ALLOWED_USERS", "*")
    return Gateway(tmp_path / "sessions")


@pytest.fixture()
def embedding_server(monkeypatch):
    """A fake OpenAI-compatible embeddings server; its key is in ``KEY_ENV``."""
    monkeypatch.setenv(KEY_ENV, "sk-reliability-test-key")
    with FakeEmbeddingServer() as server:
        yield server
