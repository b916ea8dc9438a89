"""One problem, one fix: on one machine, a command that stops on a missing package (``build``), ``doctor`` and the
line Hermes logs at start name the same install, whichever of them the user reads first."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from hermes_testkit import EXAMPLE_SKILLS, PLUGIN, python_without

# Two states of a machine before the set-up is done, what hides them here, and the end of the one fix.
STATES = {
    # nothing installed yet: the plugin's dependencies, which need no PyTorch
    "nothing installed": (("torch", "numpy", "faiss", "semantic_skills", "__editable__"), f"/{PLUGIN} hermes-agent"),
    # PyTorch there, so the default embedder is the bundled MiniLM on it: the dependencies with the torch extra
    "PyTorch installed": (("numpy", "faiss", "semantic_skills", "__editable__"), f"/{PLUGIN}[torch]' hermes-agent"),
}


@pytest.mark.parametrize("state", STATES)
def test_build_doctor_and_hermes_log_name_the_same_fix(tmp_path, plugin_checkout, state):
    hidden, fix_ends = STATES[state]
    bin_dir = python_without(tmp_path, hidden)
    home = tmp_path / "home"
    shutil.copytree(EXAMPLE_SKILLS, home / "skills")
    (home / "plugins").mkdir()
    (home / "plugins" / PLUGIN).symlink_to(plugin_checkout, target_is_directory=True)
    (home / "config.yaml").write_text(f"plugins:\n  enabled: [{PLUGIN}]\n")
    env = {"HERMES_HOME": str(home), "PATH": f"{bin_dir}:/usr/bin:/bin", "HF_HUB_OFFLINE": "1"}  # no nvidia-smi

    def hermes(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(bin_dir / "hermes"), PLUGIN, *args], env=env, cwd=tmp_path, text=True,
                              capture_output=True, stdin=subprocess.DEVNULL, timeout=300)

    build, doctor = hermes("build"), hermes("doctor", "--json")

    assert build.returncode == doctor.returncode == 1, build.stderr + doctor.stderr
    fix = next(c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "dependencies")["fix"]
    assert " -m pip install -e " in fix and fix.endswith(fix_ends), fix
    then = f" (then check with: HERMES_HOME={home} hermes {PLUGIN} doctor)"
    error, = build.stderr.strip().splitlines()
    assert error.startswith("semantic-skills: error: the Python that runs the plugin") and error.endswith(
        f"; fix: {fix}{then}"), error
    logged = [line for line in (home / "logs" / "agent.log").read_text().splitlines()
              if "semantic-skills: not routing" in line]
    assert logged and all(line.endswith(f"; fix: {fix}{then}") for line in logged), logged
