"""The gateway hook end to end on Hermes' real ``GatewayRunner``, with a loop-lag probe on the same loop.

    python benchmarks/hook_latency.py [--corpora DIR] [--dev DIR] [--messages 300]
                                      [--generated N] [--embedder sentence-transformers|onnx] [--record on|off]

The index holds the ~870 real skills of the corpora and both dev sets (or
``--generated N`` skills made from the corpora) plus a writable folder with
one skill; config.yaml is Hermes' default configuration plus the plugin's
settings. One asyncio loop runs a probe task (sleep 2 ms, record the
overshoot: how long something else held the loop) and feeds distinct dev
queries from 50 senders through ``GatewayRunner._handle_message``, built as
``tests/hermes/hermes_testkit.Gateway`` builds it; the agent turn, on a thread
as in Hermes, only fires ``pre_llm_call``. Phases:

1. ``idle``: the probe alone for 3 s (the machine's own noise on the loop),
   after one message per sender through Hermes alone (Hermes' first message
   pays one-off imports, ``hermes_first_message_ms``, and a sender's first
   message creates its session: both are Hermes' costs, kept out of the rest);
2. ``startup``: Hermes' plugin discovery calls ``register()`` on the loop (as
   ``GatewayRunner.start`` does, before adapters connect; discovery also
   loads Hermes' bundled plugins), then a message every 250 ms until the
   routing worker is ready: what the first messages experience, on the loop
   and at the agent (the plugin's import and ``register()`` are timed apart);
3. ``round_trip``: from a thread, worker ``ping`` and ``route`` requests
   alternately (the pipe's cost against a whole routing answer);
4. ``hermes_only``: messages 20 ms apart with the plugin's hooks switched off
   (what Hermes itself does to the loop), then ``steady``: the same with them on;
5. ``swap``: the writable skill edited and one added, ``semantic-skills build``
   run as a subprocess while a message arrives every 50 ms, until the build
   has exited and the worker swapped the new index in 2 s ago.

``hook_ms`` times the plugin's registered ``pre_gateway_dispatch`` callback
(routing through the worker, dedupe, formatting): the time it holds the loop.
The probe's ``loop_lag_*`` is everything that held the loop, Hermes' own
session-store and status-file writes included; ``plugin_share_of_longest_lag``
is the fraction of the longest stall during which a stack sampler found the
loop thread inside the plugin's code.
``late`` counts messages whose answer missed the hook's budget (their skill
goes through ``pre_llm_call``). ``record_on_loop_ms`` times the
``record.decision`` calls made on the loop (part of ``hook_ms``; ``--record
off`` turns the decision record off), and ``decision_record`` counts what the
record holds at the end. ``config_reread_ms`` is what the first hook
call after an edit of config.yaml spends reading it again. RSS of the Hermes-side process (before the
plugin loads and at the end) and of the worker after warm-up are included.
Prints one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import common

PROBE_INTERVAL = 0.002


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpora", type=Path, default=common.DEFAULT_CORPORA)
    parser.add_argument("--dev", type=Path, default=common.DEFAULT_DEV)
    parser.add_argument("--generated", type=int, default=0,
                        help="Index this many skills generated from the corpora instead of the real ones.")
    parser.add_argument("--messages", type=int, default=300, help="Messages in each of hermes_only and steady.")
    parser.add_argument("--embedder", default="sentence-transformers", choices=["sentence-transformers", "onnx"])
    parser.add_argument("--record", default="on", choices=["on", "off"],
                        help="The decision record (the record_decisions setting); on by default, as for users.")
    parser.add_argument("--work-dir", type=Path, default=common.DEFAULT_WORK_DIR)
    return parser.parse_args()


def child_env(home: Path) -> dict[str, str]:
    env = dict(os.environ, HERMES_HOME=str(home), HF_HUB_OFFLINE="1")
    env["PYTHONPATH"] = str(common.REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def build_command(roots: list[Path], index_dir: Path, embedder: str) -> list[str]:
    folders = [arg for root in roots for arg in ("--skills-dir", str(root))]
    return [sys.executable, "-m", "semantic_skills", "build", *folders, "--index-dir", str(index_dir),
            "--embedder", embedder, "--json"]


def write_skill(folder: Path, name: str, body: str) -> Path:
    path = folder / name / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nname: {name}\ndescription: {body}\n---\n{body}\n", encoding="utf-8")
    return path


def hermes_default_config() -> dict:
    """The config.yaml Hermes writes for a new user (about 15 KB of YAML), as a fresh copy."""
    import copy

    from hermes_cli.config import DEFAULT_CONFIG

    return copy.deepcopy(DEFAULT_CONFIG)


def prepare(args) -> tuple[Path, list[Path], Path]:
    """A Hermes home with the plugin linked in and enabled, and an up-to-date index: (home, roots, index)."""
    import subprocess

    import yaml

    writable = args.work_dir / "hook-writable-skills"
    shutil.rmtree(writable, ignore_errors=True)
    write_skill(writable, "benchmark-edited", "A skill the swap phase edits while messages flow.")
    if args.generated:
        label = f"generated-{args.generated}"
        roots = [common.generate_skills(args.corpora, args.generated, args.work_dir / f"skills-{args.generated}")]
    else:
        label = "real"
        roots = common.real_skill_roots(args.corpora, args.dev)
    roots.append(writable)
    index_dir = args.work_dir / f"hook-index-{label}-{args.embedder}"
    home = Path(tempfile.mkdtemp(prefix="hook-bench-home-"))
    (home / "plugins").mkdir()
    (home / "plugins" / "semantic-skills").symlink_to(common.REPO, target_is_directory=True)
    settings = {"index_dir": str(index_dir), "embedder": {"backend": args.embedder},
                "record_decisions": args.record == "on"}
    config = hermes_default_config()
    # Enabled only when the start-up phase begins: importing Hermes' gateway already discovers plugins.
    config["plugins"] = {"enabled": [], "entries": {"semantic-skills": {"settings": settings}}}
    (home / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    done = subprocess.run(build_command(roots, index_dir, args.embedder), env=child_env(home), capture_output=True,
                          text=True)
    if done.returncode != 0:
        sys.exit(f"hook_latency: the index build failed: {done.stderr.strip()}")
    return home, roots, index_dir


class Recorder:
    """Wraps the plugin's gateway hook and the worker's events to time them."""

    def __init__(self, runtime, hooks: dict):
        from semantic_skills.hermes import record

        self.runtime = runtime
        self.calls: list[tuple[float, float, bool, str]] = []  # (start, ms, rewritten, the turn's state)
        self.records: list[tuple[float, float]] = []  # record.decision on the loop: (start, ms)
        self.events: list[tuple[float, dict]] = []
        self.agent: list[tuple[float, float, bool]] = []  # (start, ms, got context)
        self.lock = threading.Lock()
        callbacks = hooks["pre_gateway_dispatch"]
        ours = [i for i, cb in enumerate(callbacks) if cb.__name__ == "semantic_skills_pre_gateway_dispatch"]
        original = callbacks[ours[0]]

        def timed(**kwargs):
            start = time.perf_counter()
            result = original(**kwargs)
            elapsed = (time.perf_counter() - start) * 1000
            self.calls.append((start, elapsed, bool(result), self._last_state()))
            return result

        timed.__name__ = original.__name__
        callbacks[ours[0]] = timed
        on_event = runtime.client._on_event

        def recorded(message):
            self.events.append((time.perf_counter(), message))
            on_event(message)

        runtime.client._on_event = recorded
        loop_thread, decision = threading.get_ident(), record.decision

        def timed_decision(*args, **kwargs):
            start = time.perf_counter()
            decision(*args, **kwargs)
            if threading.get_ident() == loop_thread:
                self.records.append((start, (time.perf_counter() - start) * 1000))

        record.decision = timed_decision

    def _last_state(self) -> str:
        ledger = self.runtime.turns
        with ledger._lock:
            return next(reversed(ledger._turns.values())).state.value if ledger._turns else ""

    def first_event(self, predicate, after: float) -> float | None:
        for at, message in list(self.events):
            if at >= after and predicate(message):
                return at
        return None


class PluginTime(threading.Thread):
    """Samples the loop thread's stack every millisecond: is it inside the plugin's code?

    Tells, for the longest stall the probe saw, how much of it was the plugin
    (its callbacks, waiting for the worker included) and how much Hermes or
    anything else. Resolution is a few ms: the sampler needs the GIL, which a
    busy loop thread hands over every 5 ms.
    """

    PLUGIN_DIR = str(common.REPO / "semantic_skills")

    def __init__(self, loop_thread: int):
        super().__init__(name="plugin-time-sampler", daemon=True)
        self.loop_thread = loop_thread
        self.samples: list[tuple[float, bool]] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            frame = sys._current_frames().get(self.loop_thread)
            inside = False
            while frame is not None and not inside:
                inside = frame.f_code.co_filename.startswith(self.PLUGIN_DIR)
                frame = frame.f_back
            self.samples.append((time.perf_counter(), inside))
            time.sleep(0.001)

    def share(self, start: float, end: float) -> float | None:
        """The fraction of samples between ``start`` and ``end`` that found the loop inside the plugin."""
        inside = [flag for at, flag in self.samples if start <= at <= end]
        return round(sum(inside) / len(inside), 2) if inside else None


def lag_summary(samples, start, end, plugin_time: PluginTime) -> dict:
    inside = [(at, lag) for at, lag in samples if start <= at < end]
    lags = [lag for _, lag in inside]
    worst_at, worst = max(inside, key=lambda sample: sample[1], default=(start, 0.0))
    return {"loop_lag_max_ms": round(worst, 2), "loop_lag_p99_ms": round(common.percentile(lags, 99), 2),
            "probe_samples": len(lags),
            "plugin_share_of_longest_lag": plugin_time.share(worst_at, worst_at + worst / 1000 + PROBE_INTERVAL)}


def calls_in(recorder: Recorder, start: float, end: float) -> list[tuple[float, float, bool, str]]:
    return [c for c in recorder.calls if start <= c[0] < end]


def hook_summary(recorder: Recorder, start: float, end: float) -> dict:
    calls = calls_in(recorder, start, end)
    return {"messages": len(calls), "hook_ms": common.stats([c[1] for c in calls]),
            "rewritten": sum(1 for c in calls if c[2]), "late": sum(1 for c in calls if c[3] == "pending"),
            "deferred": sum(1 for c in calls if c[3] == "deferred"),
            "record_on_loop_ms": common.stats([ms for at, ms in recorder.records if start <= at < end])}


def record_summary(runtime) -> dict:
    """How many decisions the record holds at the end, and its size (both generations)."""
    from semantic_skills.decision_log import previous_generation, read_record

    runtime.decisions.flush()
    path = runtime.decisions.path
    files = [f for f in (previous_generation(path), path) if f.exists()]
    return {"on": runtime.refresh().record_decisions,
            "decisions": len(read_record(path, runtime.refresh().record_max_bytes).entries),
            "bytes": sum(f.stat().st_size for f in files)}


async def run(args, home: Path, roots: list[Path], index_dir: Path) -> dict:
    import yaml

    sys.path[:0] = [str(common.REPO / "tests"), str(common.REPO / "tests" / "hermes")]
    from hermes_cli.plugins import get_plugin_manager, invoke_hook

    from hermes_testkit import Gateway

    queries = common.distinct_queries(args.dev)
    gateway = Gateway(Path(tempfile.mkdtemp(prefix="hook-bench-sessions-")))
    users = [gateway.new_user() for _ in range(50)]
    samples: list[tuple[float, float]] = []
    stop = asyncio.Event()

    async def probe():
        while not stop.is_set():
            start = time.perf_counter()
            await asyncio.sleep(PROBE_INTERVAL)
            samples.append((start, (time.perf_counter() - start - PROBE_INTERVAL) * 1000))

    recorder: Recorder | None = None
    plugin_on = False

    def agent_turn(event, source, session_id):
        if not plugin_on:
            return "ok"
        start = time.perf_counter()
        results = invoke_hook("pre_llm_call", session_id=session_id, task_id="t", turn_id="t",
                              user_message=event.text, conversation_history=[], is_first_turn=True,
                              model="fake-model", platform=source.platform.value, sender_id=source.user_id or "")
        got = any(isinstance(r, dict) and r.get("context") for r in results)
        recorder.agent.append((start, (time.perf_counter() - start) * 1000, got))
        return "ok"

    gateway.agent_run = agent_turn
    pending: set[asyncio.Task] = set()
    sent = 0

    def send() -> None:
        nonlocal sent
        event = gateway.event(queries[sent % len(queries)], users[sent % len(users)])
        sent += 1
        task = asyncio.ensure_future(gateway.runner._handle_message(event))
        pending.add(task)
        task.add_done_callback(pending.discard)

    async def drain() -> None:
        while pending:
            await asyncio.sleep(0.05)

    # Hermes' first message pays one-off imports, and a sender's first message creates its session
    # (database and file writes on the loop, 100-300 ms here): both happen before measuring.
    start = time.perf_counter()
    send()
    await drain()
    hermes_first_message_ms = (time.perf_counter() - start) * 1000
    for _ in users[1:]:
        send()
        await drain()

    plugin_time = PluginTime(threading.get_ident())
    plugin_time.start()
    probe_task = asyncio.ensure_future(probe())
    idle_start = time.perf_counter()
    await asyncio.sleep(3)
    rss_before = common.rss_mb()

    # startup: register() on the loop, then messages until the worker is ready
    config_path = home / "config.yaml"
    config = yaml.safe_load(config_path.read_text())
    config["plugins"]["enabled"] = ["semantic-skills"]
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    startup_start = time.perf_counter()
    import semantic_skills.hermes as plugin

    import_ms = (time.perf_counter() - startup_start) * 1000
    register_ms = []
    register = plugin.register

    def timed_register(ctx):
        start = time.perf_counter()
        register(ctx)
        register_ms.append((time.perf_counter() - start) * 1000)

    plugin.register = timed_register
    manager = get_plugin_manager()
    manager.discover_and_load(force=True)
    plugin.register = register
    plugin_on = True
    discovered_at = time.perf_counter()
    discovery_ms = (discovered_at - startup_start) * 1000
    from semantic_skills.hermes.runtime import current_runtime

    runtime = current_runtime()
    if runtime is None or runtime.client.ready:
        sys.exit("hook_latency: the plugin was not loaded fresh by the start-up phase")
    recorder = Recorder(runtime, manager._hooks)
    while not runtime.client.ready and time.perf_counter() - startup_start < 600:
        send()
        await asyncio.sleep(0.25)
    ready_at = time.perf_counter()
    await drain()  # the first messages' agent turns wait for the worker
    startup_end = time.perf_counter()
    startup_agent = [a for a in recorder.agent if startup_start <= a[0] < ready_at]

    # round trip through the pipe: ping against route, alternately, off the loop
    def round_trips(texts):
        ping_ms, route_ms = [], []
        for text in texts:
            start = time.perf_counter()
            runtime.client.submit("ping").result(5)
            middle = time.perf_counter()
            runtime.client.route(text, (), timeout=5)
            ping_ms.append((middle - start) * 1000)
            route_ms.append((time.perf_counter() - middle) * 1000)
        return ping_ms, route_ms

    ping_ms, route_ms = await asyncio.to_thread(round_trips, queries[-200:])

    # Hermes alone, then with the plugin
    ours = manager._hooks["pre_gateway_dispatch"]
    saved = list(ours)
    ours[:] = [cb for cb in ours if not cb.__name__.startswith("semantic_skills_")]
    async def message_flow() -> tuple[float, float]:
        """Send ``args.messages`` messages 20 ms apart and wait for all; the flow's start and end."""
        start = time.perf_counter()
        for _ in range(args.messages):
            send()
            await asyncio.sleep(0.02)
        await drain()
        return start, time.perf_counter()

    plugin_on = False
    hermes_start, hermes_end = await message_flow()
    ours[:] = saved
    plugin_on = True
    steady_start, steady_end = await message_flow()
    worker_rss = common.rss_mb(runtime.client._process.pid)

    # a changed config.yaml is read again by the next hook call, on the loop
    config_reread_ms = []
    for number in range(5):
        config_path.write_text(config_path.read_text() + f"# edit {number}\n")
        start = time.perf_counter()
        runtime.refresh()
        config_reread_ms.append((time.perf_counter() - start) * 1000)

    # swap: rebuild with one skill edited and one added while messages flow
    writable = roots[-1]
    edited = writable / "benchmark-edited" / "SKILL.md"
    edited.write_text(edited.read_text(encoding="utf-8") + "\nEdited by the swap phase.\n", encoding="utf-8")
    write_skill(writable, "benchmark-added", "A skill the swap phase adds while messages flow.")
    swap_start = time.perf_counter()
    build = await asyncio.create_subprocess_exec(*build_command(roots, index_dir, args.embedder), env=child_env(home),
                                                 stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    build_wait = asyncio.ensure_future(build.wait())
    build_seconds = reloaded_at = None
    while time.perf_counter() - swap_start < 600:
        send()
        await asyncio.sleep(0.05)
        if build_seconds is None and build_wait.done():
            build_seconds = time.perf_counter() - swap_start
        if reloaded_at is None:
            reloaded_at = recorder.first_event(
                lambda m: m.get("event") == "log" and "reloaded the rebuilt index" in str(m.get("message")),
                swap_start)
        elif build_seconds is not None and time.perf_counter() - reloaded_at > 2.0:
            break
    await drain()
    swap_end = time.perf_counter()
    stop.set()
    await probe_task
    plugin_time.stopped.set()
    rss_after = common.rss_mb()
    decisions = record_summary(runtime)
    runtime.close()

    ready_event = recorder.first_event(lambda m: m.get("state") == "ready", startup_start)
    return {
        "hermes_first_message_ms": round(hermes_first_message_ms, 1),
        "idle": lag_summary(samples, idle_start, startup_start, plugin_time),
        "startup": {
            "plugin_import_ms": round(import_ms, 1),
            "register_ms": round(register_ms[0], 1) if register_ms else None,
            "plugin_discovery_ms": round(discovery_ms, 1),
            "loop_lag_max_ms_after_discovery":
                lag_summary(samples, discovered_at, startup_end, plugin_time)["loop_lag_max_ms"],
            "ready_s": round((ready_event or ready_at) - startup_start, 2),
            **hook_summary(recorder, startup_start, ready_at),
            "agent_turns": len(startup_agent),
            "agent_got_skill": sum(1 for a in startup_agent if a[2]),
            "agent_pre_llm_call_ms": common.stats([a[1] for a in startup_agent]),
            **lag_summary(samples, startup_start, startup_end, plugin_time),
        },
        "round_trip": {"ping_ms": common.stats(ping_ms), "route_ms": common.stats(route_ms)},
        "hermes_only": {"messages": args.messages, **lag_summary(samples, hermes_start, hermes_end, plugin_time)},
        "steady": {**hook_summary(recorder, steady_start, steady_end),
                   **lag_summary(samples, steady_start, steady_end, plugin_time)},
        "config_reread_ms": common.stats(config_reread_ms),
        "swap": {
            "build_s": round(build_seconds, 2) if build_seconds else None,
            "reloaded_after_s": round(reloaded_at - swap_start, 2) if reloaded_at else None,
            **hook_summary(recorder, swap_start, swap_end),
            **lag_summary(samples, swap_start, swap_end, plugin_time),
        },
        "rss_mb": {"hermes_process_before_plugin": rss_before, "hermes_process_end": rss_after,
                   "worker_after_warmup": worker_rss},
        "decision_record": decisions,
    }


def main() -> None:
    args = parse_args()
    common.require_dir(args.corpora, "--corpora")
    common.require_dir(args.dev, "--dev")
    home, roots, index_dir = prepare(args)
    os.environ.update(HERMES_HOME=str(home), HF_HUB_OFFLINE="1", WHATSAPP_ALLOWED_USERS="*")
    os.environ.pop("SEMANTIC_SKILLS_INDEX_DIR", None)
    load_before = common.load_now()
    result = asyncio.run(run(args, home, roots, index_dir))
    common.emit({"benchmark": "hook_latency", "index": f"generated-{args.generated}" if args.generated else "real",
                 "embedder": args.embedder, **result,
                 "load_before": load_before, "load_after": common.load_now(), "machine": common.machine()})
    sys.stdout.flush()
    os._exit(0)  # skip waiting for Hermes' and the plugin's background threads


if __name__ == "__main__":
    main()
