"""The litellm embedder against a fake OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from semantic_skills.builder import build_index
from semantic_skills.cli import main
from semantic_skills.embedders.litellm import LiteLLMEmbedder
from semantic_skills.errors import EmbedderError
from semantic_skills.index.manifest import read_manifest
from semantic_skills.index.store import load_index
from semantic_skills.router import SkillRouter
from semantic_skills.skills.discovery import SkillsRoot

from support import EXAMPLES, REPO, FakeEmbeddingServer, closed_port_url

KEY_ENV = "FAKE_EMBEDDINGS_KEY"
MODEL = "openai/fake-embed"
PDF_QUERY = "convert a scanned PDF to markdown"


@pytest.fixture()
def server(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-fake-test-key")
    with FakeEmbeddingServer() as fake:
        yield fake


@pytest.fixture()
def instant_backoff(monkeypatch):
    """Backoff sleeps (ours and the HTTP client's) return at once."""
    monkeypatch.setattr(time, "sleep", lambda seconds: None)


def embedder_for(url: str, batch_size: int = 4) -> LiteLLMEmbedder:
    return LiteLLMEmbedder(MODEL, api_base=url, api_key_env=KEY_ENV, batch_size=batch_size, query_timeout=10.0)


def build(skills_dir: Path, index_dir: Path, embedder: LiteLLMEmbedder, full: bool = False):
    return build_index([SkillsRoot(skills_dir)], index_dir, embedder, full=full)


def write_config(home: Path, url: str, batch_size: int) -> None:
    (home / "config.yaml").write_text(textwrap.dedent(f"""\
        plugins:
          entries:
            semantic-skills:
              settings:
                embedder:
                  backend: litellm
                  model: {MODEL}
                  api_base: {url}
                  api_key_env: {KEY_ENV}
                  batch_size: {batch_size}
                  timeout_ms: 10000
        """))


def example_batches(size: int) -> list[int]:
    """The request sizes of a build of examples/skills in batches of ``size`` texts (one per skill view), largest
    first (they are sent from both ends of the length order in turn)."""
    from semantic_skills.recipe import skill_views
    from semantic_skills.skills.discovery import discover_skills

    total = sum(len(skill_views(s)) for s in discover_skills([SkillsRoot(EXAMPLES / "skills")]).skills)
    return [size] * (total // size) + ([total % size] if total % size else [])


def cli(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


# --------------------------------------------------------------------------- building and routing


def test_a_build_through_the_class_batches_requests_and_routes(server, tmp_path):
    report = build(EXAMPLES / "skills", tmp_path / "index", embedder_for(server.url, batch_size=4))

    assert report.counts()["added"] == 10
    assert sorted(server.batch_sizes, reverse=True) == example_batches(4)
    assert {r["auth"] for r in server.requests} == {"Bearer sk-fake-test-key"}
    assert {r["model"] for r in server.requests} == {"fake-embed"}
    identity = read_manifest(tmp_path / "index").embedder
    assert (identity.backend, identity.model, identity.dimension) == ("litellm", MODEL, 256)

    router = SkillRouter.open(tmp_path / "index", embedder=embedder_for(server.url))
    assert router.route(PDF_QUERY).candidates[0].name == "pdf-to-markdown"
    assert server.batch_sizes[-1] == 1


def test_a_build_and_route_from_the_command_line_use_the_configured_server(server, tmp_path, _isolated_hermes_home):
    write_config(_isolated_hermes_home, server.url, batch_size=3)
    index_dir = str(tmp_path / "index")

    built = cli("build", "--skills-dir", str(EXAMPLES / "skills"), "--index-dir", index_dir, "--json")
    assert built.exit_code == 0, built.output
    assert json.loads(built.stdout.splitlines()[-1])["added"] == 10
    assert sorted(server.batch_sizes, reverse=True) == example_batches(3)

    routed = cli("route", "--index-dir", index_dir, "--json", PDF_QUERY)
    assert routed.exit_code == 0, routed.output
    assert json.loads(routed.stdout)["candidates"][0]["name"] == "pdf-to-markdown"

    status = cli("status", "--index-dir", index_dir, "--json")
    assert json.loads(status.stdout)["embedder"]["backend"] == "litellm"


def test_a_server_error_is_retried_until_it_succeeds(server, instant_backoff):
    server.failures = [500] * LiteLLMEmbedder.RETRIES
    vectors = embedder_for(server.url).embed_documents(["deploy the service", "bake bread"])
    assert vectors.shape == (2, 256)
    assert server.failures == [] and len(server.requests) == LiteLLMEmbedder.RETRIES + 1
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)


def test_a_server_that_keeps_failing_gives_a_one_line_error(server, instant_backoff):
    server.failures = [503] * 100
    with pytest.raises(EmbedderError) as raised:
        embedder_for(server.url).embed_documents(["anything"])
    message = str(raised.value)
    assert "\n" not in message and server.url in message
    assert 1 < len(server.requests) < 100


def test_an_authentication_error_is_not_retried(server, instant_backoff):
    server.failures = [401]
    with pytest.raises(EmbedderError, match="refused the request") as raised:
        embedder_for(server.url).embed_documents(["anything"])
    assert "\n" not in str(raised.value)
    assert len(server.requests) == 1


@pytest.mark.parametrize("call", ["embed_documents", "embed_query"])
def test_a_refused_connection_gives_a_one_line_error(instant_backoff, monkeypatch, call):
    monkeypatch.setenv(KEY_ENV, "sk-fake-test-key")
    url = closed_port_url()
    embedder = embedder_for(url)
    with pytest.raises(EmbedderError) as raised:
        getattr(embedder, call)(["anything"] if call == "embed_documents" else "anything")
    message = str(raised.value)
    assert "\n" not in message
    assert f"cannot get embeddings from {MODEL} at {url}" in message


def test_a_refused_connection_from_the_command_line_is_one_line_on_stderr(instant_backoff, tmp_path,
                                                                         _isolated_hermes_home, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-fake-test-key")
    write_config(_isolated_hermes_home, closed_port_url(), batch_size=8)
    result = CliRunner().invoke(main, ["build", "--skills-dir", str(EXAMPLES / "skills"),
                                       "--index-dir", str(tmp_path / "i")])
    assert result.exit_code == 1
    assert result.stderr.startswith("semantic-skills: error: cannot get embeddings")
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_missing_api_key_variable_is_named(server, monkeypatch):
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(EmbedderError, match=f"{KEY_ENV} .*is not set"):
        embedder_for(server.url).embed_query("anything")
    assert server.requests == []


# --------------------------------------------------------------------------- dimensions


def test_vectors_changing_dimension_between_batches_are_reported(server):
    embedder = embedder_for(server.url, batch_size=2)
    embedder.embed_documents(["one", "two"])
    server.dimension = 128
    with pytest.raises(EmbedderError, match="returned 128-d vectors, expected 256-d"):
        embedder.embed_documents(["three"])


def test_vectors_of_different_lengths_in_one_answer_are_reported(server):
    server.ragged = True
    with pytest.raises(EmbedderError, match="vectors of different lengths"):
        embedder_for(server.url).embed_documents(["one", "two"])


def test_a_model_that_changed_dimension_is_re_embedded_in_full(server, examples_copy, tmp_path):
    index_dir = tmp_path / "index"
    build(examples_copy, index_dir, embedder_for(server.url))
    server.dimension = 128
    edited = examples_copy / "git" / "commit-messages" / "SKILL.md"
    edited.write_text(edited.read_text() + "\nMention the ticket.\n")

    report = build(examples_copy, index_dir, embedder_for(server.url))

    assert report.counts()["updated"] == 10 and report.counts()["unchanged"] == 0
    assert any("128-d" in w for _, w in report.warnings)
    build(examples_copy, tmp_path / "fresh", embedder_for(server.url), full=True)
    (manifest, rebuilt), (_, fresh) = load_index(index_dir), load_index(tmp_path / "fresh")
    assert manifest.embedder.dimension == 128
    np.testing.assert_allclose(rebuilt, fresh, atol=1e-6)


# --------------------------------------------------------------------------- no network on import


def test_loading_litellm_through_the_embedder_reaches_no_network():
    """litellm fetches its model price list from GitHub on import unless told not to."""
    script = textwrap.dedent("""\
        import json, os, socket
        attempts = []
        def refuse(*args, **kwargs):
            attempts.append(repr(args[:2]))
            raise OSError("network access attempted")
        socket.getaddrinfo = refuse
        socket.create_connection = refuse
        socket.socket.connect = lambda self, address: refuse(address)
        from semantic_skills.embedders.litellm import LiteLLMEmbedder
        LiteLLMEmbedder("openai/text-embedding-3-small").load()
        print(json.dumps({"flag": os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP"), "attempts": attempts}))
        """)
    env = {k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}
    result = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True,
                            timeout=180)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == {"flag": "True", "attempts": []}
