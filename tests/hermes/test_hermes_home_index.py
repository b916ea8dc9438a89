"""A Hermes home owns its index and runs its own code, with the real ``hermes`` command line (0.19).

Two homes that link one plugin folder into their ``plugins/`` (a common way
to develop or share a plugin across profiles) never read each other's index;
an index an earlier release kept in the plugin folder is moved into the home
whose skills it holds, and left alone by any other; and a second home on a
Python where ``pip install -e`` installed the first home's plugin folder runs
its own folder's code, is told when it does not, and is not silently planned
out of the packages it needs.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fake_llm import last_user_content
from hermes_testkit import (
    EXAMPLE_SKILLS,
    NO_RUNTIME_INSTALLS,
    ONNX,
    PLUGIN,
    REPO,
    build_index,
    git,
    install_as_a_user,
    run_hermes,
    subprocess_env,
)
from support import write_skill

DOCKER = "My postgres container keeps restarting and the web service can't connect to it"
SECRET = "ACME-INTERNAL-7f3c2a"  # in a skill body only home A may ever see
PRIVATE_SKILL = f"""---
name: acme-compose-runbook
description: Debug Acme's docker compose services - a postgres container restarting, a web service not connecting.
---
# Acme compose runbook ({SECRET})

Our postgres container runs on db-7.acme.internal; its password rotates nightly ({SECRET}).
Restart order: postgres first, then wait for its healthcheck, then the web service.
"""
EARLIER = "where earlier releases kept it"


@pytest.fixture()
def shared_plugin(tmp_path, plugin_checkout) -> Path:
    """One plugin folder (a copy of this checkout) for homes to link into their ``plugins/``."""
    folder = tmp_path / "shared" / PLUGIN
    shutil.copytree(plugin_checkout, folder, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    return folder


def new_home(path: Path, plugin: Path, skills: Path = EXAMPLE_SKILLS, llm=None, link: bool = True) -> Path:
    """A Hermes home at ``path``: ``plugin`` linked (or copied) as its plugin folder, enabled, with the onnx
    embedder; a copy of ``skills``; the fake model ``llm`` when given."""
    (path / "plugins").mkdir(parents=True)
    if link:
        (path / "plugins" / PLUGIN).symlink_to(plugin, target_is_directory=True)
    else:
        shutil.copytree(plugin, path / "plugins" / PLUGIN, symlinks=True)
    shutil.copytree(skills, path / "skills")
    config = {"plugins": {"enabled": [PLUGIN], "entries": {PLUGIN: {"settings": {"embedder": ONNX}}}},
              **NO_RUNTIME_INSTALLS}
    if llm is not None:
        config["model"] = {"default": "fake-model", "provider": "custom", "base_url": llm.base_url,
                           "api_key": "sk-test"}
    (path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def private_home(path: Path, plugin: Path, **kwargs) -> Path:
    """A home whose only skill is private to it."""
    skills = path.parent / f"{path.name}-skills"
    write_skill(skills, "ops/acme-compose-runbook", PRIVATE_SKILL)
    return new_home(path, plugin, skills, **kwargs)


def state_index(home: Path) -> Path:
    return home / PLUGIN / "skills_index"


def manifest(index_dir: Path) -> dict:
    return json.loads((index_dir / "manifest.json").read_text())


def status(home: Path) -> tuple[dict, str]:
    """``hermes semantic-skills status --json`` on ``home``: the status, and what it said on stderr."""
    done = run_hermes(home, PLUGIN, "status", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def chat(home: Path, llm, text: str) -> str:
    """One ``hermes chat -q`` turn on ``home``: the user message the model received."""
    start = len(llm.chat_requests())
    done = run_hermes(home, "chat", "-q", text, "-Q", timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return last_user_content(llm.chat_requests()[start])


def agent_log(home: Path) -> str:
    log = home / "logs" / "agent.log"
    return log.read_text() if log.exists() else ""


# --------------------------------------------------------------------------- two homes, one linked plugin folder


def test_two_homes_linking_one_plugin_folder_never_read_each_others_index(tmp_path, shared_plugin, llm,
                                                                          onnx_embedder, monkeypatch):
    a = private_home(tmp_path / "a", shared_plugin)
    b = new_home(tmp_path / "b", shared_plugin, llm=llm)
    build_index(b)
    build_index(a)  # the last build: it once went into the shared folder, for every home that links it

    delivered = chat(b, llm, DOCKER)
    b_status, _ = status(b)
    a_status, _ = status(a)

    assert SECRET not in delivered and "acme-compose-runbook" not in delivered, delivered
    assert delivered.startswith(DOCKER + '\n\n<skill-context name="docker-compose-debug"')  # B's own index routes
    assert (b_status["index_dir"], b_status["roots"]) == (str(state_index(b)), [str(b / "skills")])
    assert (a_status["index_dir"], a_status["roots"]) == (str(state_index(a)), [str((a / "skills").resolve())])
    assert not (shared_plugin / "skills_index").exists()  # the shared code folder holds no home's state
    from semantic_skills.hermes.doctor.routing_checks import index_check
    from semantic_skills.hermes.doctor.setup_checks import paths_check, read_setup

    monkeypatch.setenv("HERMES_HOME", str(b))
    setup = read_setup()
    paths, index = paths_check(setup), index_check(setup)
    assert paths.facts["index_folder"] == str(state_index(b)) and paths.facts["state_folder"] == str(b / PLUGIN)
    assert index.status == "ok" and index.facts["roots"] == [str(b / "skills")], index


def test_an_index_an_earlier_release_left_in_the_homes_own_plugin_folder_moves_into_the_home(tmp_path,
                                                                                           shared_plugin, llm,
                                                                                           onnx_embedder):
    home = new_home(tmp_path / "home", shared_plugin, llm=llm, link=False)
    legacy = home / "plugins" / PLUGIN / "skills_index"
    build_index(home, "--index-dir", str(legacy))  # where an earlier release built it by default
    built = (legacy / "manifest.json").read_bytes()

    delivered = chat(home, llm, DOCKER)  # the first start of this release

    assert (state_index(home) / "manifest.json").read_bytes() == built  # the same index, not a rebuild
    assert not legacy.exists()
    assert delivered.startswith(DOCKER + '\n\n<skill-context name="docker-compose-debug"')  # served from there
    moved = [line for line in agent_log(home).splitlines() if "moved this home's index" in line]
    assert len(moved) == 1 and moved[0].endswith(f"moved this home's index from {legacy}, {EARLIER}, to "
                                                 f"{state_index(home)}"), agent_log(home)


def test_an_index_in_a_linked_plugin_folder_moves_only_into_the_home_whose_skills_it_holds(tmp_path, shared_plugin,
                                                                                          onnx_embedder):
    a = private_home(tmp_path / "a", shared_plugin)
    b = new_home(tmp_path / "b", shared_plugin)
    legacy = shared_plugin / "skills_index"
    build_index(a, "--index-dir", str(legacy))  # an earlier release's default, for A, in the folder both link
    built = (legacy / "manifest.json").read_bytes()

    b_build = run_hermes(b, PLUGIN, "build")
    b_status, b_said = status(b)
    left_alone = (legacy / "manifest.json").read_bytes()
    a_status, a_said = status(a)

    assert b_build.returncode == 0, b_build.stdout + b_build.stderr
    assert b_build.stderr.splitlines()[0] == (
        f"the index in {b / 'plugins' / PLUGIN / 'skills_index'}, {EARLIER}, is not used (it was built from "
        f"{(a / 'skills').resolve()}, which this home does not scan); this home's own goes in {state_index(b)}: "
        f"HERMES_HOME={b} hermes {PLUGIN} build")
    assert left_alone == built  # B neither read nor rebuilt it
    assert manifest(state_index(b))["roots"] == [str(b / "skills")] and b_said == ""
    assert b_status["index_dir"] == str(state_index(b)) and SECRET not in json.dumps(manifest(state_index(b)))
    assert a_said.strip() == (f"moved this home's index from {a / 'plugins' / PLUGIN / 'skills_index'}, {EARLIER}, "
                              f"to {state_index(a)}")
    assert (state_index(a) / "manifest.json").read_bytes() == built and not legacy.exists()
    assert a_status["index_dir"] == str(state_index(a)) and a_status["skills"] == 1

    plan = json.loads(run_hermes(b, PLUGIN, "uninstall", "--json").stdout.strip().splitlines()[-1])
    link = b / "plugins" / PLUGIN
    code = next(step for step in plan if step["removes"].startswith("the link to its code"))
    assert code["command"] == f"rm {link}" and str(shared_plugin) in code["removes"]  # Hermes cannot rm a link
    state = next(step for step in plan if step["command"] == f"rm -rf {b / PLUGIN}")
    assert state["removes"].startswith("its index, ") and state["frees_bytes"] > 0


# --------------------------------------------------------------------------- one Python, the plugin in two homes


def test_a_second_home_runs_its_own_plugin_folder_where_pip_installed_the_first_ones(tmp_path, plugin_checkout):
    source = tmp_path / "source"
    git(tmp_path, "clone", "-q", str(plugin_checkout), str(source))
    first = install_as_a_user(tmp_path / "user", source.as_uri())  # its pip step: `pip install -e` of its folder
    version_file = source / "semantic_skills" / "__init__.py"
    version_file.write_text(version_file.read_text().replace('__version__ = "0.1.0"', '__version__ = "0.1.0+second"'))
    git(source, "commit", "-qam", "the release the second home installs")
    second = tmp_path / "second"
    installed = run_hermes(second, "plugins", "install", source.as_uri(), "--enable", hermes=first.hermes)
    assert installed.returncode == 0, installed.stdout + installed.stderr

    version = run_hermes(second, PLUGIN, "--version", hermes=first.hermes)
    plan = json.loads(run_hermes(second, PLUGIN, "uninstall", "--json", hermes=first.hermes).stdout.splitlines()[-1])
    text_plan = run_hermes(second, PLUGIN, "uninstall", hermes=first.hermes).stdout
    under_hermes = doctor_checks(run_hermes(second, PLUGIN, "doctor", "--json", hermes=first.hermes).stdout)
    env = {**subprocess_env(second), "PATH": f"{first.bin}:/usr/bin:/bin"}
    env.pop("PYTHONPATH")
    outside = subprocess.run([str(first.python), "-m", "semantic_skills", "doctor", "--json"], env=env,
                             capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL, cwd=tmp_path)

    assert version.stdout.strip() == "semantic-skills, version 0.1.0+second", version.stdout + version.stderr
    pip = next(step for step in plan if " -m pip uninstall " in step["command"])
    assert pip["shared_with"] == [str(first.home)]  # the home whose folder pip installed, and which needs it
    assert f"# {pip['command']}    # " in text_plan
    assert f"NOT YET: the plugin in {first.home} runs on these" in text_plan
    assert under_hermes["code"]["status"] == "ok", under_hermes["code"]
    assert under_hermes["code"]["facts"]["pip_installed_from"] == str(first.plugin)
    code = doctor_checks(outside.stdout)["code"]
    assert code["status"] == "warn", code
    assert code["detail"].startswith(f"the plugin's code running here is {first.plugin}, the plugin folder of the "
                                     f"Hermes home {first.home}, not this home's plugin folder "
                                     f"{second / 'plugins' / PLUGIN}")
    assert code["fix"] == f"HERMES_HOME={second} hermes {PLUGIN} doctor"


def doctor_checks(stdout: str) -> dict[str, dict]:
    return {check["name"]: check for check in json.loads(stdout.strip().splitlines()[-1])["checks"]}


LOADS_ANOTHER_HOME = """
import logging, sys
import semantic_skills  # this process has the package already: another home's, or pip's
logging.basicConfig(stream=sys.stdout, level=logging.WARNING, format="%(levelname)s %(message)s")
from hermes_cli.plugins import get_plugin_manager
get_plugin_manager().discover_and_load(force=True)
print("CODE", semantic_skills.__file__)
"""


def test_a_home_whose_process_runs_another_folders_code_is_told_in_one_line(tmp_path, shared_plugin):
    """As in a gateway serving several profiles: the process imported the package before it loaded this home's
    plugin folder, and Python imports a package once."""
    home = new_home(tmp_path / "home", shared_plugin, link=False)
    env = subprocess_env(home)
    env.pop("PYTHONPATH")

    done = subprocess.run([sys.executable, "-c", LOADS_ANOTHER_HOME], env=env, capture_output=True, text=True,
                          timeout=300, cwd=tmp_path, stdin=subprocess.DEVNULL)

    assert done.returncode == 0, done.stdout + done.stderr
    assert f"CODE {REPO / 'semantic_skills' / '__init__.py'}" in done.stdout
    said = [line for line in done.stdout.splitlines() if "code running here" in line]
    assert said == [f"WARNING semantic-skills: the plugin's code running here is {REPO}, not this home's plugin "
                    f"folder {home / 'plugins' / PLUGIN}: this process had imported that one already (a gateway "
                    "serving several profiles imports the plugin once, for the first of them), so this home runs "
                    f"that release; keep every home this process serves on one release (HERMES_HOME={home} hermes "
                    f"plugins update {PLUGIN}, and the same in each), or serve this home from a process of its own"]
