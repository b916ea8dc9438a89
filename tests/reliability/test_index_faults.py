"""Index faults: missing, corrupt, out of step, foreign, disk full, killed mid-build.

The previous good index stays usable, or the CLI says in one line what to do;
the gateway hook lets every message through and logs the fault once; no skill
is ever injected from a corrupt index.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from semantic_skills.builder import build_index
from semantic_skills.cli import main
from semantic_skills.embedders.litellm import LiteLLMEmbedder
from semantic_skills.errors import SemanticSkillsError
from semantic_skills.files import atomic_write
from semantic_skills.hermes import hooks
from semantic_skills.hermes.runtime import PluginRuntime
from semantic_skills.index.manifest import MANIFEST
from semantic_skills.index.store import load_index
from semantic_skills.router import SkillRouter
from semantic_skills.skills.discovery import SkillsRoot
from semantic_skills.worker.protocol import FAILED, READY, WAITING_FOR_INDEX, Startup

from hermes_testkit import Gateway, wait_until
from reliability_kit import KEY_ENV, fill_disk, litellm_settings, make_home, small_disk
from support import EXAMPLES, REPO, FakeEmbeddingServer, Worker, edit_manifest, vectors_path

PDF = "convert this scanned PDF into markdown"
REMOTE_DOCKER = "docker compose services keep restarting or cannot reach each other"  # close for the fake vectors


def flip_exponents(index_dir: Path) -> None:
    """Finite garbage: every vector value gets a huge exponent, so the file still parses."""
    path = vectors_path(index_dir)
    raw = bytearray(path.read_bytes())
    _, vectors = load_index(index_dir)
    start = len(raw) - vectors.size * 4
    values = np.frombuffer(bytes(raw[start:]), dtype=np.float32).copy()
    values = np.where(np.arange(values.size) % 7 == 0, 3e30, values).astype(np.float32)
    raw[start:] = values.tobytes()
    path.write_bytes(bytes(raw))


def point_at_an_older_build(index_dir: Path) -> None:
    """The manifest names a vectors file that exists but holds another build's rows."""
    import faiss

    older = index_dir / "vectors-20200101T000000-0ld0ld00.faiss"
    flat = faiss.IndexFlatIP(384)
    flat.add(np.eye(384, dtype=np.float32)[:7])
    faiss.write_index(flat, str(older))
    edit_manifest(index_dir, lambda m: m["vectors"].update(file=older.name))


def another_dimension(index_dir: Path) -> None:
    """A sound index, as an embedder of 128-d vectors would have built it."""
    import faiss

    _, vectors = load_index(index_dir)
    flat = faiss.IndexFlatIP(128)
    flat.add(np.ascontiguousarray(vectors[:, :128] / np.linalg.norm(vectors[:, :128], axis=1, keepdims=True)))
    faiss.write_index(flat, str(vectors_path(index_dir)))
    digest = hashlib.sha256(vectors_path(index_dir).read_bytes()).hexdigest()
    edit_manifest(index_dir, lambda m: (m["embedder"].update(dimension=128), m["vectors"].update(sha256=digest)))


CORRUPTIONS = {
    "no index at all": lambda d: shutil.rmtree(d),
    "vectors truncated": lambda d: vectors_path(d).write_bytes(vectors_path(d).read_bytes()[:300]),
    "vectors zeroed": lambda d: vectors_path(d).write_bytes(bytes(vectors_path(d).stat().st_size)),
    "vectors full of finite garbage": flip_exponents,
    "vectors file deleted": lambda d: vectors_path(d).unlink(),
    "manifest not JSON": lambda d: (d / MANIFEST).write_bytes(b"\x00\xff{{{ not json"),
    "manifest cut short": lambda d: (d / MANIFEST).write_bytes((d / MANIFEST).read_bytes()[:500]),
    "manifest rows out of step with the vectors": lambda d: edit_manifest(
        d, lambda m: (m["skills"].pop(), m["vectors"].update(rows=m["vectors"]["rows"] - 1))),
    "manifest pointing at an older build's vectors": point_at_an_older_build,
    "index from another model": lambda d: edit_manifest(d, lambda m: m["embedder"].update(model="/models/other")),
    "index of another dimension": another_dimension,
}
WHAT_TO_DO = ("semantic-skills build", "rebuild")


@pytest.fixture()
def index_copy(onnx_examples_index, tmp_path) -> Path:
    """A writable copy of the examples' index, built with ``onnx_embedder``."""
    dest = tmp_path / "index"
    shutil.copytree(onnx_examples_index, dest)
    return dest


@pytest.fixture()
def built_copy(examples_copy, tmp_path, onnx_embedder) -> tuple[Path, Path]:
    """A writable copy of the example skills and its own index (``onnx_embedder``): ``(skills_dir, index_dir)``."""
    index_dir = tmp_path / "built"
    build_index([SkillsRoot(examples_copy)], index_dir, onnx_embedder)
    return examples_copy, index_dir


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_a_faulty_index_never_yields_a_decision(index_copy, onnx_embedder, corruption):
    CORRUPTIONS[corruption](index_copy)
    with pytest.raises(SemanticSkillsError) as raised:
        SkillRouter.open(index_copy, embedder=onnx_embedder).route(PDF)
    assert "\n" not in str(raised.value) and any(hint in str(raised.value) for hint in WHAT_TO_DO)


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
@pytest.mark.parametrize("command", [["route", PDF], ["search", PDF], ["status"]])
def test_the_cli_says_in_one_line_what_to_do(index_copy, corruption, command):
    CORRUPTIONS[corruption](index_copy)
    result = CliRunner().invoke(main, [command[0], "--index-dir", str(index_copy), *command[1:]])
    if command == ["status"] and corruption.startswith("index "):  # a sound index, for another embedder
        assert result.exit_code == 0, result.output
        return
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("semantic-skills: error: "), result.stderr
    hints = ("the onnx embedder needs /models/other/model.onnx",) if "model" in corruption else WHAT_TO_DO
    assert any(hint in lines[0] for hint in hints), lines[0]
    assert "Traceback" not in result.output


# --------------------------------------------------------------------------- disk full, killed mid-build


def index_files(index_dir: Path) -> dict[str, bytes]:
    """Every file of an index folder and its bytes, less the lock (it holds the last build's process id)."""
    return {p.name: p.read_bytes() for p in index_dir.iterdir() if p.name != ".lock"}


@pytest.mark.parametrize("room_for", ["nothing", "the vectors only"])
def test_a_full_disk_during_a_build_is_one_line_and_the_previous_index_keeps_routing(examples_copy, tmp_path,
                                                                                    onnx_embedder, room_for):
    with small_disk(tmp_path / "disk") as disk:
        index_dir = disk / "index"
        build_index([SkillsRoot(examples_copy)], index_dir, onnx_embedder)
        before = index_files(index_dir)
        fill_disk(disk, leave=vectors_path(index_dir).stat().st_size + 4096 if room_for != "nothing" else 0)
        build = ["build", "--skills-dir", str(examples_copy), "--index-dir", str(index_dir), "--embedder", "onnx"]

        unchanged = CliRunner().invoke(main, build)  # nothing to write: a full disk is no obstacle
        shutil.rmtree(examples_copy / "media")
        result = CliRunner().invoke(main, build)

        assert unchanged.exit_code == 0, unchanged.output
        assert result.exit_code == 1 and len(result.stderr.strip().splitlines()) == 1, result.output
        failed = index_dir / ("vectors-" if room_for == "nothing" else MANIFEST)  # the file it could not write
        assert f"No space left on device ({failed}" in result.stderr
        assert result.stderr.rstrip().endswith("; free some space and run it again (the previous index is unchanged)")
        assert index_files(index_dir) == before  # no temp file, no new vectors, the same manifest
        router = SkillRouter.open(index_dir, embedder=onnx_embedder)
        assert router.route(PDF).skill.name == "pdf-to-markdown"
        assert "image-resize" in {r.name for r in router.manifest.skills}


def test_a_worker_rebuild_on_a_full_disk_is_logged_and_the_current_index_keeps_serving(examples_copy, tmp_path,
                                                                                      onnx_embedder):
    with small_disk(tmp_path / "disk") as disk:
        index_dir = disk / "index"
        build_index([SkillsRoot(examples_copy)], index_dir, onnx_embedder)
        before = index_files(index_dir)
        worker = Worker(Startup(str(index_dir)))
        try:
            skills = worker.wait_for_state(READY)["skills"]
            shutil.rmtree(examples_copy / "media")
            filler = fill_disk(disk)
            assert worker.ask("rebuild")["ok"] is True
            assert wait_until(lambda: worker_logs(worker, "could not re-index"), timeout=120)
            [failed] = worker_logs(worker, "could not re-index")
            assert "No space left on device" in failed and failed.endswith("free some space (the current index "
                                                                          "keeps serving)")
            assert worker.ask("route", text=PDF, exclude=[])["skill"] == "pdf-to-markdown"
            assert index_files(index_dir) == before

            filler.unlink()  # space again: the next skill change re-indexes
            assert worker.ask("rebuild")["ok"] is True
            assert wait_until(lambda: worker_logs(worker, "re-indexed"), timeout=120)
            assert wait_until(lambda: ready_skills(worker) == skills - 1, timeout=30)
        finally:
            worker.close()


def ready_skills(worker: Worker) -> int:
    return [e for e in worker.events if e.get("state") == READY][-1]["skills"]


def worker_logs(worker: Worker, start: str) -> list[str]:
    return [e["message"] for e in worker.events if e.get("event") == "log" and e["message"].startswith(start)]


def test_an_atomic_write_on_a_full_disk_leaves_the_old_file_and_no_temp_file(tmp_path):
    with small_disk(tmp_path / "disk") as disk:
        state = disk / "state.json"
        atomic_write(state, b'{"old": true}')
        fill_disk(disk)
        with pytest.raises(OSError) as raised:
            atomic_write(state, b'{"new": true}' * 1000)
        assert raised.value.errno == errno.ENOSPC
        assert sorted(p.name for p in disk.iterdir()) == ["filler", "state.json"]
        assert state.read_bytes() == b'{"old": true}'


CRASHING_BUILD = textwrap.dedent("""
    import os, sys
    from semantic_skills.cli import main

    step = sys.argv[1]
    real_replace = os.replace

    def replace(source, target):
        if step == "writing the vectors" and str(target).endswith(".faiss"):
            os.truncate(source, 17)  # half a FAISS file
            os._exit(137)
        if step == "vectors written, manifest not yet" and str(target).endswith("manifest.json"):
            os._exit(137)
        real_replace(source, target)
        if step == "manifest published, old files not yet removed" and str(target).endswith("manifest.json"):
            os._exit(137)

    os.replace = replace
    main(sys.argv[2:])
""")
STEPS = ["writing the vectors", "vectors written, manifest not yet", "manifest published, old files not yet removed"]


@pytest.mark.parametrize("step", STEPS)
def test_a_build_killed_at_any_step_of_publishing_leaves_a_usable_index(built_copy, step, onnx_embedder):
    examples_copy, index_copy = built_copy
    before = (index_copy / MANIFEST).read_bytes()
    shutil.rmtree(examples_copy / "media")
    args = ["build", "--skills-dir", str(examples_copy), "--index-dir", str(index_copy), "--embedder", "onnx"]
    killed = subprocess.run([sys.executable, "-c", CRASHING_BUILD, step, *args], cwd=REPO, capture_output=True,
                            text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert killed.returncode == 137, killed.stderr[-2000:]

    published = (index_copy / MANIFEST).read_bytes() != before
    assert published == (step == STEPS[-1])
    router = SkillRouter.open(index_copy, embedder=onnx_embedder)
    assert router.route(PDF).skill.name == "pdf-to-markdown"
    assert ("image-resize" in {r.name for r in router.manifest.skills}) == (not published)

    again = CliRunner().invoke(main, args + ["--json"])  # the lock died with the process; leftovers go
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout.strip().splitlines()[-1])["removed"] == (0 if published else 1)
    assert sorted(p.name for p in index_copy.iterdir() if not p.name.startswith("vectors-")) == [".lock", MANIFEST]
    assert len([p for p in index_copy.iterdir() if p.name.startswith("vectors-")]) <= 2


# --------------------------------------------------------------------------- the hook over a faulty index


@pytest.fixture()
def remote_index(tmp_path, monkeypatch):
    """A fake-server index (its routing worker starts in a second): ``(server, index_dir)``."""
    monkeypatch.setenv(KEY_ENV, "sk-test")
    with FakeEmbeddingServer(dimension=384) as server:
        index_dir = tmp_path / "remote-index"
        build_index([SkillsRoot(EXAMPLES / "skills")], index_dir,
                    LiteLLMEmbedder("openai/fake-embed", api_base=server.url, api_key_env=KEY_ENV))
        yield server, index_dir


def runtime_for(index_dir: Path, server, tmp_path: Path, monkeypatch) -> PluginRuntime:
    home = make_home(tmp_path, {"index_dir": str(index_dir), "route_timeout_ms": 10000,
                                **litellm_settings(server.url)}, skills=None)
    monkeypatch.setenv("HERMES_HOME", str(home))
    monkeypatch.setenv("WHATSAPP_ALLOWED_USERS", "*")
    return PluginRuntime(home)


def messages_through_the_hooks(rt: PluginRuntime, gateway: Gateway, count: int) -> list:
    outcomes = []
    for n in range(count):
        user = gateway.new_user()
        text = f"{REMOTE_DOCKER} ({n})"
        rewrite = hooks.pre_gateway_dispatch(rt, event=gateway.event(text, user), gateway=gateway.runner,
                                             session_store=gateway.runner.session_store)
        context = hooks.pre_llm_call(rt, session_id=f"s{n}", user_message=text, platform="whatsapp", sender_id=user)
        outcomes.append((rewrite, context))
    return outcomes


@pytest.mark.parametrize("corruption", ["no index at all", "vectors truncated", "manifest not JSON",
                                        "vectors full of finite garbage", "index from another model"])
def test_the_hook_over_a_faulty_index_lets_every_message_through_and_logs_once(remote_index, tmp_path, monkeypatch,
                                                                              caplog, corruption):
    server, index_dir = remote_index
    CORRUPTIONS[corruption](index_dir)
    rt = runtime_for(index_dir, server, tmp_path, monkeypatch)
    gateway = Gateway(tmp_path / "sessions")
    with caplog.at_level(logging.DEBUG):
        rt.client.start()
        try:
            status = rt.client.status
            assert wait_until(lambda: status.state in (FAILED, WAITING_FOR_INDEX), timeout=120), status.state
            outcomes = messages_through_the_hooks(rt, gateway, 40)
        finally:
            rt.close()

    assert outcomes == [(None, None)] * 40
    ours = [r for r in caplog.records if r.name == "semantic_skills" and r.levelno >= logging.WARNING]
    assert len(ours) == 1, [r.getMessage() for r in ours]
    assert any(hint in ours[0].getMessage() for hint in WHAT_TO_DO)
    assert not [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]


def test_a_faulty_rebuild_published_under_a_running_gateway_keeps_the_previous_index(remote_index, tmp_path,
                                                                                     monkeypatch, caplog):
    server, index_dir = remote_index
    rt = runtime_for(index_dir, server, tmp_path, monkeypatch)
    gateway = Gateway(tmp_path / "sessions")
    with caplog.at_level(logging.INFO, logger="semantic_skills"):
        rt.client.start()
        try:
            assert rt.client.wait_ready(120), rt.client.status.detail
            staging = tmp_path / "staging"
            shutil.copytree(index_dir, staging)
            flip_exponents(staging)
            rebuilt = "vectors-29990101T000000-9a9a9a9a.faiss"
            vectors_path(staging).rename(staging / rebuilt)
            edit_manifest(staging, lambda m: m["vectors"].update(file=rebuilt))
            for name in (rebuilt, MANIFEST):  # published the way a build publishes: vectors, then manifest
                os.replace(staging / name, index_dir / name)
            assert wait_until(lambda: any("kept the previous index" in r.getMessage() for r in caplog.records), 30)
            outcomes = messages_through_the_hooks(rt, gateway, 20)
            wait_until(lambda: False, timeout=2.5)  # a few more reload checks
            state = rt.client.status.state
        finally:
            rt.close()

    assert state == READY
    assert all((rewrite or {}).get("text", "").startswith('<skill-context name="docker-compose-debug"')
               for rewrite, _context in outcomes)
    kept = [r for r in caplog.records if "kept the previous index" in r.getMessage()]
    assert len(kept) == 1 and not [r for r in caplog.records if r.exc_info]
