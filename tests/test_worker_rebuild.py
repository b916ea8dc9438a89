"""Re-indexing inside the routing worker, and the per-message offer settings it takes from the host."""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from pathlib import Path

import pytest

from semantic_skills.builder import build_index
from semantic_skills.index.lock import build_lock
from semantic_skills.index.store import load_index
from semantic_skills.router import SkillRouter
from semantic_skills.skills.discovery import SkillsRoot
from semantic_skills.worker.priority import BACKGROUND_NICENESS
from semantic_skills.worker.protocol import READY, Startup
from semantic_skills.worker.rebuild import Rebuilder

from support import EXAMPLES, Worker, thread_nice_values, wait_until, write_skill

BONSAI = "how do I repot a juniper bonsai whose roots circle the pot"
BONSAI_SKILL = """\
    ---
    name: bonsai-repotting
    description: Repot a bonsai tree safely - timing, root pruning, soil mix and aftercare.
    metadata:
      hermes:
        requires_toolsets: [gardening]
    ---
    Repot junipers in early spring. Comb out circling roots and prune at most a third.
    """
KANBAN = "triage the cards in the kanban backlog column and assign owners"
KANBAN_SKILL = """\
    ---
    name: kanban-triage
    description: Triage kanban backlog cards - assign owners, set priority, move them to the right column.
    environments: [kanban]
    ---
    Read each card in the backlog column, set an owner and a priority, then move it on.
    """


@pytest.fixture()
def home(tmp_path, onnx_embedder) -> tuple[Path, Path, Path]:
    """Local and external skills, and an index of both built the way the CLI builds one, with the onnx embedder
    (the worker re-indexes with the embedder that built the index)."""
    local, shared, index = tmp_path / "skills", tmp_path / "shared", tmp_path / "index"
    shutil.copytree(EXAMPLES / "skills", local)
    write_skill(shared, "boards/kanban-triage", KANBAN_SKILL)
    build_index([SkillsRoot(local), SkillsRoot(shared, external=True)], index, onnx_embedder)
    return local, shared, index


def ready_events(worker: Worker) -> list[dict]:
    return [e for e in worker.events if e.get("state") == READY]


def test_a_rebuild_request_brings_in_new_and_deleted_skills_from_the_index_roots(home):
    local, _shared, index = home
    worker = Worker(Startup(str(index)))
    try:
        first = worker.wait_for_state(READY)
        assert worker.ask("route", text=BONSAI, exclude=[])["skill"] is None  # the control

        write_skill(local, "gardening/bonsai-repotting", BONSAI_SKILL)
        assert worker.ask("rebuild")["ok"] is True
        assert wait_until(lambda: ready_events(worker)[-1]["skills"] == first["skills"] + 1, timeout=120)
        assert worker.ask("route", text=BONSAI, exclude=[])["skill"] == "bonsai-repotting"
        if sys.platform.startswith("linux"):  # the loader and the rebuild thread yield to routing
            nice, started_at = thread_nice_values(worker.process.pid), os.getpriority(os.PRIO_PROCESS, 0)
            assert nice[worker.process.pid] == started_at  # the thread that answers requests keeps its priority
            assert list(nice.values()).count(started_at + BACKGROUND_NICENESS) >= 2  # the loader, the rebuild
        gated = {g["name"]: g for g in ready_events(worker)[-1]["gated"]}
        assert gated["bonsai-repotting"]["conditions"] == {"hermes": {"requires_toolsets": ["gardening"]}}

        shutil.rmtree(local / "gardening")
        assert worker.ask("rebuild")["ok"] is True
        assert wait_until(lambda: ready_events(worker)[-1]["skills"] == first["skills"], timeout=120)
    finally:
        worker.close()
    manifest, _ = load_index(index)
    assert manifest.root_kinds == {str(home[1]): "external"}  # the roots kept their kinds


def test_inactive_environments_travel_with_each_request(home):
    worker = Worker(Startup(str(home[2])))
    try:
        worker.wait_for_state(READY)
        offered = worker.ask("route", text=KANBAN, exclude=[])
        hidden = worker.ask("route", text=KANBAN, exclude=[], inactive_environments=["kanban"])
        listed = worker.ask("search", text=KANBAN, limit=10, exclude=[], inactive_environments=["kanban", "s6"])
    finally:
        worker.close()

    assert offered["skill"] == "kanban-triage" and hidden["skill"] != "kanban-triage"
    assert "kanban-triage" not in {r["name"] for r in listed["results"]}


def test_a_rebuild_waits_for_another_build_to_finish(home, onnx_embedder):
    local, _shared, index = home
    router = SkillRouter.open(index, embedder=onnx_embedder)
    logged = []
    rebuilder = Rebuilder(index, lambda: router, lambda level, message: logged.append(message),
                          delay=0.05, locked_retry=0.1)
    write_skill(local, "gardening/bonsai-repotting", BONSAI_SKILL)
    released = threading.Event()

    def hold_the_lock():
        with build_lock(index):
            released.wait(5)

    holder = threading.Thread(target=hold_the_lock)
    holder.start()
    time.sleep(0.2)
    rebuilder.request()
    time.sleep(0.5)
    assert "bonsai-repotting" not in {r.name for r in load_index(index)[0].skills}  # still waiting its turn
    released.set()
    holder.join()

    assert wait_until(lambda: "bonsai-repotting" in {r.name for r in load_index(index)[0].skills}, timeout=60)
    assert wait_until(lambda: any("1 added" in m for m in logged), timeout=10)
