"""Concurrency: two builds at once, and readers (threads, the routing worker, the hook) during rebuilds."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from semantic_skills.builder import build_index
from semantic_skills.embedders.litellm import LiteLLMEmbedder
from semantic_skills.hermes import hooks
from semantic_skills.hermes.runtime import PluginRuntime
from semantic_skills.index.lock import LOCK
from semantic_skills.router import SkillRouter
from semantic_skills.skills.discovery import SkillsRoot

from hermes_testkit import Gateway, wait_until
from reliability_kit import KEY_ENV, HashingEmbedder, litellm_settings, make_home
from support import EXAMPLES, REPO, FakeEmbeddingServer, write_skill

READERS = 8
HERE = Path(__file__).resolve().parent


def two_skill_sets(root: Path, count: int = 12) -> tuple[Path, Path]:
    """Two skills folders with different skills (and different sizes): ``alpha`` and ``beta``."""
    sets = []
    for label, extra in (("alpha", 0), ("beta", 5)):
        folder = root / label
        for i in range(count + extra):
            write_skill(folder, f"{label}/{label}-{i:02d}",
                        f"---\nname: {label}-{i:02d}\ndescription: {label} unique{label}{i} task number {i}\n---\n")
        sets.append(folder)
    return sets[0], sets[1]


REBUILDER = textwrap.dedent("""
    import sys
    sys.path[:0] = [{kit!r}, {tests!r}]
    from reliability_kit import HashingEmbedder
    from semantic_skills.builder import build_index
    from semantic_skills.settings import EmbedderSettings
    from semantic_skills.skills.discovery import SkillsRoot

    folders, index_dir, rounds = sys.argv[1:3], sys.argv[3], int(sys.argv[4])
    for n in range(rounds):
        build_index([SkillsRoot(folders[n % 2])], index_dir, HashingEmbedder())
    print("done", flush=True)
""")


def rebuilder(alpha: Path, beta: Path, index_dir: Path, rounds: int) -> subprocess.Popen:
    """Another process that rebuilds ``index_dir`` ``rounds`` times, alternating the two skill sets."""
    script = REBUILDER.format(kit=str(HERE), tests=str(HERE.parent))
    return subprocess.Popen([sys.executable, "-c", script, str(alpha), str(beta), str(index_dir), str(rounds)],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_readers_in_many_threads_never_see_a_torn_index_while_another_process_rebuilds(tmp_path):
    alpha, beta = two_skill_sets(tmp_path)
    index_dir = tmp_path / "index"
    embedder = HashingEmbedder()
    build_index([SkillsRoot(alpha)], index_dir, embedder)
    router = SkillRouter.open(index_dir, embedder=embedder)
    errors: list[BaseException] = []
    checks, reloads = [], []
    stop = threading.Event()

    def read() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            label, i = ("alpha", n % 12) if n % 2 else ("beta", n % 17)
            try:
                if router.reload_if_changed(min_interval=0):
                    reloads.append(router.manifest.built_at)
                decision = router.route(f"{label} unique{label}{i} task number {i}")
                names = {c.name.split("-")[0] for c in decision.candidates}
                assert len(names) <= 1, f"one answer mixes two builds: {decision.candidates}"
                if decision.candidates and decision.candidates[0].score > 0.9:
                    assert decision.candidates[0].name == f"{label}-{i:02d}", decision.candidates[:2]
                router.search("task number", k=40)
                checks.append(n)
            except BaseException as exc:  # noqa: BLE001 - every failure is reported below
                errors.append(exc)
                return

    threads = [threading.Thread(target=read, daemon=True) for _ in range(READERS)]
    for thread in threads:
        thread.start()
    builds = rebuilder(alpha, beta, index_dir, rounds=40)
    try:
        out, err = builds.communicate(timeout=600)
    finally:
        stop.set()
        for thread in threads:
            thread.join(60)
    assert builds.returncode == 0 and out.strip() == "done", err[-2000:]
    assert errors == []
    assert len(reloads) >= 3 and len(checks) >= 100  # the readers really raced the builds


def test_a_second_build_while_one_runs_exits_at_once_with_a_clear_message(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-test")
    with FakeEmbeddingServer() as server:
        server.delay = 0.5  # holds the first build (one text a request) until the second has been refused
        home = make_home(tmp_path, litellm_settings(server.url, batch_size=1), skills=EXAMPLES / "skills")
        env = dict(os.environ, HERMES_HOME=str(home), PYTHONPATH=str(REPO))
        index_dir = home / "skills_index"

        def build(*extra: str) -> subprocess.Popen:
            return subprocess.Popen([sys.executable, "-m", "semantic_skills", "build", *extra], cwd=REPO, env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    stdin=subprocess.DEVNULL)

        first = build()
        assert wait_until(lambda: (index_dir / LOCK).exists() and (index_dir / LOCK).read_text().strip()
                          == str(first.pid), timeout=120, interval=0.05)
        second = build()
        _, second_err = second.communicate(timeout=300)
        assert first.poll() is None  # refused while the first build ran
        server.delay = 0.0  # which now finishes at full speed
        first_out, first_err = first.communicate(timeout=600)
        third = build("--json")
        third_out, third_err = third.communicate(timeout=300)

    assert second.returncode == 1
    assert second_err.strip() == (f"semantic-skills: error: another build (pid {first.pid}) is updating {index_dir}; "
                                  "wait for it to finish, then run this build again")
    assert first.returncode == 0 and "Indexed 10 skills" in first_out, first_err
    assert third.returncode == 0 and '"unchanged": 10' in third_out, third_err


@pytest.fixture()
def remote_setup(tmp_path, monkeypatch):
    """Two skill sets indexed through the fake server and a plugin runtime serving that index.

    Budgets are generous: these tests are about torn state under load, not latency.
    """
    monkeypatch.setenv(KEY_ENV, "sk-test")
    with FakeEmbeddingServer() as server:
        alpha, beta = two_skill_sets(tmp_path)
        index_dir = tmp_path / "index"
        embedder = LiteLLMEmbedder("openai/fake-embed", api_base=server.url, api_key_env=KEY_ENV)
        build_index([SkillsRoot(alpha)], index_dir, embedder)
        home = make_home(tmp_path / "h", {"index_dir": str(index_dir), "route_timeout_ms": 10000,
                                          **litellm_settings(server.url, timeout_ms=10000)}, skills=None)
        monkeypatch.setenv("HERMES_HOME", str(home))
        monkeypatch.setenv("WHATSAPP_ALLOWED_USERS", "*")
        rt = PluginRuntime(home)
        rt.client.start()
        try:
            assert rt.client.wait_ready(120), rt.client.status.detail
            yield rt, server, alpha, beta, index_dir, embedder
        finally:
            rt.close()


def test_the_hook_serves_many_threads_while_the_index_is_rebuilt_again_and_again(remote_setup, tmp_path, caplog):
    rt, server, alpha, beta, index_dir, embedder = remote_setup
    gateway = Gateway(tmp_path / "sessions")
    known = {f"alpha-{i:02d}" for i in range(12)} | {f"beta-{i:02d}" for i in range(17)}
    errors: list[BaseException] = []
    injected: list[str] = []
    stop = threading.Event()

    def chat(worker: int) -> None:
        n = 0
        while not stop.is_set():
            n += 1
            label, i = ("alpha", n % 12) if (n + worker) % 2 else ("beta", n % 17)
            text = f"{label} unique{label}{i} task number {i} ({worker}-{n})"
            user = gateway.new_user()
            try:
                rewrite = hooks.pre_gateway_dispatch(rt, event=gateway.event(text, user), gateway=gateway.runner,
                                                     session_store=gateway.runner.session_store)
                seen = rewrite["text"] if rewrite else text
                context = hooks.pre_llm_call(rt, session_id=f"s-{worker}-{n}", user_message=seen,
                                             platform="whatsapp", sender_id=user)
                block = (rewrite or {}).get("text") or (context or {}).get("context") or ""
                if rewrite:
                    assert rewrite["text"].endswith(text)
                if block:
                    name = block.split('name="', 1)[1].split('"', 1)[0]
                    assert name in known, name
                    injected.append(name)
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)
                return

    with caplog.at_level(logging.INFO, logger="semantic_skills"):
        threads = [threading.Thread(target=chat, args=(w,), daemon=True) for w in range(6)]
        for thread in threads:
            thread.start()
        try:
            for n in range(8):  # rebuilds, each published while the threads chat
                build_index([SkillsRoot(beta if n % 2 == 0 else alpha)], index_dir, embedder)
                time.sleep(1.2)  # the worker looks for a new index about once a second
        finally:
            stop.set()
            for thread in threads:
                thread.join(60)

    assert errors == []
    assert {name.split("-")[0] for name in injected} == {"alpha", "beta"}  # both builds were served
    assert any("reloaded the rebuilt index" in r.getMessage() for r in caplog.records)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]
