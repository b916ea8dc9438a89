"""The routing worker's protocol over a real pipe: the real server process, and the client that drives it."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from semantic_skills.builder import build_index
from semantic_skills.gates import Gate
from semantic_skills.injection import cap_body, skill_body
from semantic_skills.limits import MAX_BODY_CHARS
from semantic_skills.router import SkillRouter
from semantic_skills.settings import EmbedderSettings
from semantic_skills.skills.discovery import SkillsRoot
from semantic_skills.skills.parsing import parse_skill
from semantic_skills.worker.client import RouterClient
from semantic_skills.worker.priority import BACKGROUND_NICENESS, lower_this_threads_priority
from semantic_skills.worker.protocol import ERROR, FAILED, INDEX_MISSING, OK, READY, WAITING_FOR_INDEX, Startup

from support import EXAMPLES, REPO, WORKER_READY_SECONDS, Worker, thread_nice_values, wait_until, write_skill

PDF = "convert this scanned PDF into clean markdown"
CLOSE_CALL = "I accidentally pushed our AWS key to GitHub, what do I do?"  # secret-scan, release-notes close behind
PDF_SKILL = EXAMPLES / "skills" / "documents" / "pdf-to-markdown" / "SKILL.md"


@pytest.fixture(scope="module")
def big_skill(tmp_path_factory) -> Path:
    """The example skills plus one whose body is longer than a worker's answer carries; its SKILL.md."""
    skills = tmp_path_factory.mktemp("big-skills")
    shutil.copytree(EXAMPLES / "skills", skills, dirs_exist_ok=True)
    lines = "".join(f"Step {i}: rotate the nginx access logs nightly and keep fourteen days.\n" for i in range(5000))
    return write_skill(skills, "ops/log-rotation", "---\nname: log-rotation\ndescription: Rotate nginx access "
                                                   "logs with logrotate\n---\n" + lines)


@pytest.fixture(scope="module")
def big_index(tmp_path_factory, big_skill, onnx_embedder) -> Path:
    """``big_skill``'s skills indexed with the onnx embedder: no test here is about the model."""
    index_dir = tmp_path_factory.mktemp("big-index")
    build_index([SkillsRoot(big_skill.parents[2])], index_dir, onnx_embedder)
    return index_dir


@pytest.fixture(scope="module")
def worker(big_index):
    served = Worker(Startup(str(big_index)))
    served.wait_for_state(READY)
    yield served
    served.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a thread's own nice value is Linux's")
def test_once_ready_the_loader_steps_back_and_the_request_thread_keeps_its_priority(worker):
    pid, started_at = worker.process.pid, os.getpriority(os.PRIO_PROCESS, 0)
    wait_until(lambda: started_at + BACKGROUND_NICENESS in thread_nice_values(pid).values(), timeout=10, interval=0.05)

    nice = thread_nice_values(pid)
    assert started_at + BACKGROUND_NICENESS in nice.values()  # the loader, which swaps rebuilt indexes in
    assert nice[pid] == started_at  # the thread that answers requests
    assert worker.ask("route", text=PDF, exclude=[])["skill"] == "pdf-to-markdown"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a thread's own nice value is Linux's")
def test_lowering_a_threads_priority_leaves_the_callers_alone():
    def nice_of_this_thread() -> int:
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    seen = {}

    def background():
        lower_this_threads_priority()
        seen["background"] = nice_of_this_thread()

    before = nice_of_this_thread()
    thread = threading.Thread(target=background)
    thread.start()
    thread.join()

    assert seen["background"] == before + BACKGROUND_NICENESS
    assert nice_of_this_thread() == before


def test_a_route_answer_carries_the_skill_its_score_and_its_whole_body(worker):
    answer = worker.ask("route", text=PDF, exclude=[])

    assert answer["ok"] is True and answer["skill"] == "pdf-to-markdown" and answer["mode"] == "full"
    assert answer["body"] == skill_body(PDF_SKILL.read_text(encoding="utf-8")) and answer["omitted"] == 0
    description = parse_skill(PDF_SKILL.read_bytes(), PDF_SKILL, EXAMPLES / "skills").description
    version = hashlib.sha256(PDF_SKILL.read_bytes()).hexdigest()[:32]  # the file as the worker reads it
    assert answer["named"] == [{"name": "pdf-to-markdown", "description": description, "version": version}]
    assert answer["version"] == version
    assert 0.30 <= answer["score"] <= 1.05 and "similarity" in answer["reason"]


def test_a_hint_answer_names_the_skills_with_their_descriptions_and_carries_no_body(worker):
    answer = worker.ask("route", text=CLOSE_CALL, exclude=[])

    assert answer["ok"] is True and answer["mode"] == "hint" and "plausible" in answer["reason"]
    assert answer["skill"] == answer["named"][0]["name"] and 1 <= len(answer["named"]) <= 2
    assert all(set(n) == {"name", "description", "version"} and n["description"] and len(n["version"]) == 32
               for n in answer["named"])
    assert answer["version"] == answer["named"][0]["version"]
    assert "body" not in answer and "omitted" not in answer


def test_an_answer_that_injects_nothing_has_no_mode(worker):
    answer = worker.ask("route", text="What's a good recipe for banana bread?", exclude=[])

    assert answer["ok"] is True and answer["skill"] is None and answer["mode"] is None and "named" not in answer


def test_the_floor_travels_with_each_request(worker):
    high = worker.ask("route", text=PDF, exclude=[], floor=0.99)
    default = worker.ask("route", text=PDF, exclude=[], floor=None)

    assert high["ok"] is True and high["skill"] is None and "below the floor 0.99" in high["reason"]
    assert default["skill"] == "pdf-to-markdown"


THRESHOLDS = ("threshold", "min_relative_gap", "full_relative_gap", "full_relative_margin")


def test_every_route_answer_says_what_the_gate_judged_also_when_nothing_is_injected(worker):
    refused = worker.ask("route", text=PDF, exclude=[], floor=0.99)
    injected = worker.ask("route", text=PDF, exclude=[])
    small_talk = worker.ask("route", text="thanks!", exclude=[])

    assert refused["skill"] is None and refused["top"] == "pdf-to-markdown"
    assert 0.30 <= refused["similarity"] < 0.99 and refused["relative_gap"] > 0 and refused["relative_margin"] > 0
    default = Gate()
    assert {k: refused[k] for k in THRESHOLDS} == {**default.as_router_settings(), "threshold": 0.99}
    assert {k: injected[k] for k in ("top", "similarity", "relative_gap", "relative_margin")} == {
        k: refused[k] for k in ("top", "similarity", "relative_gap", "relative_margin")}
    assert {k: injected[k] for k in THRESHOLDS} == default.as_router_settings()
    assert small_talk["skill"] is None and small_talk["similarity"] is None and small_talk["relative_gap"] is None
    assert small_talk["relative_margin"] is None and small_talk["threshold"] == default.floor


def test_exclusions_travel_with_each_request(worker):
    answer = worker.ask("search", text=PDF, limit=10, exclude=["pdf-to-markdown"])

    assert answer["ok"] is True and "pdf-to-markdown" not in {r["name"] for r in answer["results"]}


def test_a_long_body_is_clipped_on_the_wire_and_the_host_caps_it_as_if_whole(worker, big_skill):
    whole = skill_body(big_skill.read_text(encoding="utf-8"))
    assert len(whole) > MAX_BODY_CHARS

    best = worker.ask("search", text="rotate the nginx access logs with logrotate", limit=1, exclude=[])["best"]

    assert best["name"] == "log-rotation"
    assert best["body"] == whole[:MAX_BODY_CHARS] and best["omitted"] == len(whole) - MAX_BODY_CHARS
    assert cap_body("log-rotation", best["body"], 16000, best["omitted"]) == cap_body("log-rotation", whole, 16000)


def test_a_bad_line_is_skipped_and_a_bad_request_answered_with_an_error(worker):
    worker.send_line(b"not json\n")
    unknown = worker.ask("translate", text=PDF)
    bad_limit = worker.ask("search", text=PDF, limit="many")

    assert unknown == {"id": unknown["id"], "ok": False, "status": ERROR, "error": "unknown op 'translate'"}
    assert bad_limit["ok"] is False and bad_limit["status"] == ERROR and "ValueError" in bad_limit["error"]
    assert worker.ask("ping")["state"] == READY


def test_without_an_index_the_worker_waits_and_says_so(tmp_path):
    waiting = Worker(Startup(str(tmp_path / "no-index-yet")))
    try:
        event = waiting.wait_for_state(WAITING_FOR_INDEX, timeout=60)
        answer = waiting.ask("route", text=PDF, exclude=[])
    finally:
        code = waiting.close()

    assert "build one with: semantic-skills build" in event["detail"]
    assert answer["ok"] is False and answer["status"] == INDEX_MISSING
    assert code == 0  # stdin closed: the worker ends on its own


def test_an_index_without_skills_loads_no_model_answers_nothing_and_routes_once_skills_come(tmp_path,
                                                                                           onnx_embedder):
    skills, index = tmp_path / "no-skills", tmp_path / "index"
    skills.mkdir()
    build_index([SkillsRoot(skills)], index, onnx_embedder)
    assert SkillRouter.from_settings(index, EmbedderSettings()).embedder._session is None  # an empty library: no model
    served = Worker(Startup(str(index)))
    try:
        served.wait_for_state(READY)
        route = served.ask("route", text=PDF, exclude=[])
        search = served.ask("search", text=PDF, limit=3, exclude=[])
        shutil.copytree(EXAMPLES / "skills" / "documents", skills / "documents")
        build_index([SkillsRoot(skills)], index, onnx_embedder)
        assert wait_until(lambda: any(e.get("state") == READY and e.get("skills") for e in served.events),
                          timeout=WORKER_READY_SECONDS)  # the rebuilt index is swapped in, its model loaded
        routed = served.ask("route", text=PDF, exclude=[])
    finally:
        served.close()

    assert route["ok"] is True and route["skill"] is None and route["reason"] == "the index holds no skills"
    assert (search["ok"], search["results"], search["best"]) == (True, [], None)
    assert routed["ok"] is True and routed["skill"] == "pdf-to-markdown"


def test_bad_start_up_settings_are_one_line_and_a_non_zero_exit():
    done = subprocess.run([sys.executable, "-m", "semantic_skills.worker", '{"embedder": {}}'], cwd=REPO,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)

    assert done.returncode != 0 and done.stderr.strip().splitlines() == [
        "usage: python -m semantic_skills.worker STARTUP (the start-up settings as JSON): "
        "the start-up settings need an index_dir"]


def test_a_relative_index_folder_is_the_one_in_the_hosts_working_directory(onnx_examples_index, tmp_path,
                                                                           monkeypatch):
    """The worker runs in the package's folder: the index folder it is given must not be read from there."""
    monkeypatch.chdir(tmp_path)
    client = RouterClient(Path(os.path.relpath(onnx_examples_index, tmp_path)), restart_delays=(60,))
    client.start()
    try:
        assert client.wait_ready(WORKER_READY_SECONDS), client.status.detail
        assert client.route(PDF, (), 60).data["skill"] == "pdf-to-markdown"
    finally:
        client.close()


REMOTE = EmbedderSettings(backend="litellm", model="openai/text-embedding-3-small")


def test_the_client_restarts_its_worker_only_when_the_start_up_settings_change(onnx_examples_index):
    """Default embedder settings serve the index with the embedder that built it (onnx); a remote embedder does
    not fit it, and is refused before any request is sent."""
    client = RouterClient(onnx_examples_index, restart_delays=(60,))
    client.start()
    try:
        assert client.wait_ready(WORKER_READY_SECONDS), client.status.detail
        first = client._process.pid
        client.configure(onnx_examples_index, EmbedderSettings())
        assert client.ready and client._process.pid == first

        client.configure(onnx_examples_index, REMOTE)
        wait_until(lambda: client.status.state == FAILED, timeout=WORKER_READY_SECONDS, interval=0.05)
        mismatch = (client.status.state, client.status.detail, client._process.pid if client._process else None)

        client.configure(onnx_examples_index, EmbedderSettings())
        assert client.wait_ready(WORKER_READY_SECONDS), client.status.detail
        answer = client.route(PDF, (), timeout=30)
    finally:
        client.close()

    assert mismatch[0] == FAILED and f"the configured embedder is litellm {REMOTE.model}" in mismatch[1]
    assert mismatch[2] not in (None, first)  # a new worker, not a restart delay
    assert answer.status == OK and answer.data["skill"] == "pdf-to-markdown"


HOST_OF_A_CHILD = """
import subprocess, sys
from semantic_skills.worker.launch import isolated_command
child = subprocess.run(isolated_command(sys.executable, sys.argv[1]), capture_output=True, text=True)
print(child.stdout.strip() or child.stderr.strip().splitlines()[-1])
"""


@pytest.mark.parametrize("probe, seen", [("environment_probe", "found in the host's environment"),
                                         ("cwd_probe", "No module named cwd_probe")])
def test_a_child_searches_the_folders_its_host_imports_from_but_never_the_hosts_working_folder(tmp_path, probe, seen):
    """Hermes' package manager runs Hermes with its environment's packages on PYTHONPATH, which the child's -E
    drops: the child searches the host's import folders after its own, but not the folder the host runs in."""
    environment, working = tmp_path / "environment", tmp_path / "working"
    environment.mkdir()
    working.mkdir()
    (environment / "environment_probe.py").write_text("print(\"found in the host's environment\")\n")
    (working / "cwd_probe.py").write_text("print('planted in the working folder')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(environment), str(REPO)])}

    host = subprocess.run([sys.executable, "-c", HOST_OF_A_CHILD, probe], cwd=working, env=env, capture_output=True,
                          text=True, timeout=120)
    assert host.returncode == 0, host.stderr
    assert host.stdout.strip().endswith(seen)


def test_a_child_writes_no_bytecode_into_the_plugin_folder_it_runs_from(tmp_path):
    """Hermes' plugin doctor loads a copy of the plugin and deletes it: a worker importing from the copy must not
    write into it meanwhile (the deletion then failed with 'Directory not empty')."""
    copy = tmp_path / "plugin"
    shutil.copytree(REPO / "semantic_skills", copy / "semantic_skills", ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}  # the host writes none itself

    host = subprocess.run([sys.executable, "-c", HOST_OF_A_CHILD, "semantic_skills.worker"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)

    assert "usage: python -m semantic_skills.worker" in host.stdout  # the child imported the worker and ran it
    assert sorted(str(p.relative_to(copy)) for p in copy.rglob("__pycache__")) == []
