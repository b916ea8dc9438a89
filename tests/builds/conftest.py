"""Fixtures for the tests that drive each Hermes build (see buildkit.py) through its own command line.

Each build gets one Hermes home for the whole run: the example skills, the
plugin installed from a clean clone of this checkout with ``hermes plugins
install`` (the scan on, no question, no ``--force``), on a build without
PyTorch the onnx embedder set as after-install.md says, an index built and
``doctor`` run with Hermes' ``semantic-skills`` command, then two one-shot
chats and a driver script's gateway and agent turns against a fake model.
Each of these steps runs once in the whole run, whichever pytest-xdist worker
asks first (``buildkit.once``: whoever asks later, in the other worker or
after pytest set the build's fixtures up again, reads its result). Each
missing build is skipped with the command that makes it.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hermes"))  # hermes_testkit, fake_llm

from buildkit import (  # noqa: E402
    DOCKER,
    DRIVERS,
    LABELS,
    OFF_TOPIC,
    Build,
    Run,
    agent_loop,
    enabled_plugins,
    find_build,
    install_args,
    log_mark,
    log_since,
    missing_reason,
    once,
    quiet_machine,
    record_mark,
    record_since,
    steady_chats,
    use_fake_model,
)
from fake_llm import FakeChatServer  # noqa: E402
from hermes_testkit import EXAMPLE_SKILLS, PLUGIN, forbid_runtime_installs, snapshot_checkout  # noqa: E402


@pytest.fixture(scope="session", params=LABELS)
def build(request) -> Build:
    reason = missing_reason(request.param)
    if reason:
        pytest.skip(reason)
    return find_build(request.param)


@pytest.fixture(scope="session")
def checkout(tmp_path_factory) -> Path:
    """A git repository of this working tree as one commit, as ``hermes plugins install`` clones it."""
    return snapshot_checkout(tmp_path_factory.mktemp("checkout") / PLUGIN)


@pytest.fixture(scope="session")
def elsewhere(tmp_path_factory) -> Path:
    """A working directory that has nothing to do with this checkout."""
    return tmp_path_factory.mktemp("elsewhere")


@pytest.fixture(scope="session")
def shared(tmp_path_factory) -> Path:
    """A folder every pytest-xdist worker of this run sees (their base folders' parent), for what is done once."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@dataclass
class Installed:
    build: Build
    home: Path
    install: Run
    enabled: list[str]  # plugins.enabled right after the install (a later step may rewrite config.yaml)
    index: Run
    doctor: Run


@pytest.fixture(scope="session")
def installed(build, checkout, elsewhere, shared) -> Installed:
    home = shared / f"home-{build.label}"

    def install() -> dict:
        shutil.copytree(EXAMPLE_SKILLS, home / "skills")
        forbid_runtime_installs(home)
        done = build.run(home, *install_args(build, checkout), cwd=elsewhere,
                         PM_RECORD=str(shared / f"pm-{build.label}.jsonl"))
        assert done.returncode == 0, done.explain()
        enabled = enabled_plugins(home)
        return {"install": done, "enabled": enabled, "index": build.run(home, PLUGIN, "build", cwd=elsewhere),
                "doctor": build.run(home, PLUGIN, "doctor", cwd=elsewhere)}

    runs = once(shared, build.label, "installed", install)
    return Installed(build, home, Run(**runs["install"]), runs["enabled"], Run(**runs["index"]), Run(**runs["doctor"]))


@dataclass
class Chats:
    """Two one-shot ``hermes chat -q`` runs, on topic then off topic (the first chats the plugin joins), and what the
    model received."""

    on_topic: Run
    off_topic: Run
    requests: dict[str, list[dict]]  # message -> the agent-loop requests it sent (those offering tools)
    records: dict[str, list[dict]]  # message -> the decision-record entries its process added
    log: str  # what agent.log gained meanwhile


@pytest.fixture(scope="session")
def chats(installed, elsewhere, shared) -> Chats:
    """The home is set so that what the chats send does not depend on the machine's load (buildkit.steady_chats);
    each chat's decision-record entries are its own (the home's record also holds the other steps')."""
    home, build = installed.home, installed.build

    def chat() -> dict:
        runs, requests, records = {}, {}, {}
        mark, config = log_mark(home), (home / "config.yaml").read_text()
        try:
            with FakeChatServer() as llm:
                use_fake_model(home, llm.base_url)
                quiet_machine(home, elsewhere)
                steady_chats(home)
                for message in (DOCKER, OFF_TOPIC):
                    start, recorded = len(llm.requests), record_mark(home)
                    runs[message] = build.run(home, "chat", "-q", message, "-Q", cwd=elsewhere, timeout=600)
                    requests[message] = agent_loop(llm.requests[start:])
                    records[message] = record_since(home, recorded)
        finally:
            (home / "config.yaml").write_text(config)  # the later steps run on the home as installed
        return {"runs": runs, "requests": requests, "records": records, "log": log_since(home, mark)}

    done = once(shared, build.label, "chats", chat)
    return Chats(Run(**done["runs"][DOCKER]), Run(**done["runs"][OFF_TOPIC]), done["requests"], done["records"],
                 done["log"])


@pytest.fixture(scope="session")
def agent_report(installed, elsewhere, shared) -> dict:
    """What drivers/agent_turns.py saw: a gateway message and agent turns around a compression."""

    def drive() -> dict:
        sessions = shared / f"sessions-{installed.build.label}"
        done = installed.build.run_python(installed.home, str(DRIVERS / "agent_turns.py"), str(sessions),
                                          cwd=elsewhere, WHATSAPP_ALLOWED_USERS="*")
        assert done.returncode == 0, done.explain()
        return json.loads(done.stdout.strip().splitlines()[-1])

    return once(shared, installed.build.label, "agent_report", drive)


@pytest.fixture(scope="session")
def listing_report(installed, shared) -> dict:
    """What drivers/listing_cases.py saw: agent turns whose context file, memory entry or skill description holds
    the listing's tags and heading, and one whose session has no skills tool."""

    def drive() -> dict:
        project = shared / f"project-{installed.build.label}"
        done = installed.build.run_python(installed.home, str(DRIVERS / "listing_cases.py"), str(project),
                                          cwd=project.parent)
        assert done.returncode == 0, done.explain()
        return json.loads(done.stdout.strip().splitlines()[-1])

    return once(shared, installed.build.label, "listing_report", drive)
