"""Warm ``SkillRouter.route()`` latency against the bare ``SentenceTransformer.encode()`` of the same query.

    python benchmarks/route_latency.py [--corpora DIR] [--dev DIR] [--sizes 100,1000,10000] [--queries 300]

Indexes of 100, 1,000 and 10,000 skills are generated from the real SKILL.md
files of the corpora (unique names, see ``common.generate_skills``) into the
work folder (default ``$TMPDIR/semantic-skills-bench``, reused across runs),
plus one index of the ~870 real skills of the corpora and both dev sets (what
the independent probe uses).

For each index, every query is distinct (no router cache hit) and is timed
twice in a row, ``route(q)`` and a separate ``SentenceTransformer``'s
``encode(q)``, alternating which goes first. The ratio of the p50s is the
router's cost relative to the embedding alone. A second pass routes queries
seen before, timing the query-cache hit path. ``open_ms`` is ``SkillRouter.open``
(what the worker pays at start and on every index swap). Prints one JSON line
per index.
"""

from __future__ import annotations

import argparse
import os
import time

import common


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpora", type=common.Path, default=common.DEFAULT_CORPORA)
    parser.add_argument("--dev", type=common.Path, default=common.DEFAULT_DEV)
    parser.add_argument("--sizes", default="100,1000,10000", help="Generated index sizes, comma separated.")
    parser.add_argument("--queries", type=int, default=300, help="Distinct queries timed per index.")
    parser.add_argument("--no-real", action="store_true", help="Skip the ~870 real-skill index.")
    parser.add_argument("--threads", type=int, default=0,
                        help="Set OMP/OpenBLAS/MKL threads (0: library defaults, as in a plain Python process).")
    parser.add_argument("--work-dir", type=common.Path, default=common.DEFAULT_WORK_DIR)
    return parser.parse_args()


def index_bytes(index_dir) -> dict:
    files = {p.name: p.stat().st_size for p in common.Path(index_dir).iterdir() if p.is_file()}
    vectors = sum(size for name, size in files.items() if name.endswith(".faiss"))
    return {"manifest": files.get("manifest.json", 0), "vectors": vectors, "total": sum(files.values())}


def seconds(call, query: str) -> float:
    """Wall time of ``call(query)``."""
    start = time.perf_counter()
    call(query)
    return time.perf_counter() - start


def measure(router, bare, queries: list[str], repeat: int) -> dict:
    """Interleaved route/encode timings on ``queries``, then the cache-hit path on the first ``repeat``."""
    route_ms, encode_ms, paired = [], [], []
    for i, query in enumerate(queries):
        if i % 2 == 0:  # alternate which goes first, so neither always runs on a warmer cache
            route, encode = seconds(router.route, query), seconds(bare.encode, query)
        else:
            encode, route = seconds(bare.encode, query), seconds(router.route, query)
        route_ms.append(route * 1000)
        encode_ms.append(encode * 1000)
        paired.append(route / encode)
    cached_ms = []
    for query in queries[:repeat]:
        start = time.perf_counter()
        router.route(query)
        cached_ms.append((time.perf_counter() - start) * 1000)
    route, encode = common.stats(route_ms), common.stats(encode_ms)
    return {
        "route_ms": route,
        "encode_ms": encode,
        "ratio_p50": round(route["p50"] / encode["p50"], 3),
        "paired_ratio_median": round(common.percentile(paired, 50), 3),
        "overhead_ms_median": round(common.percentile([r - e for r, e in zip(route_ms, encode_ms)], 50), 3),
        "cached_route_ms": common.stats(cached_ms),
    }


def main() -> None:
    args = parse_args()
    common.require_dir(args.corpora, "--corpora")
    common.require_dir(args.dev, "--dev")
    if args.threads:
        for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[name] = str(args.threads)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    import torch
    from sentence_transformers import SentenceTransformer

    from semantic_skills.embedders.sentence_transformers import SentenceTransformerEmbedder
    from semantic_skills.router import SkillRouter

    embedder = SentenceTransformerEmbedder()
    embedder.load()
    bare = SentenceTransformer(embedder._model_location(), device="cpu")

    indexes = []
    for size in [int(s) for s in args.sizes.split(",") if s.strip()]:
        skills = common.generate_skills(args.corpora, size, args.work_dir / f"skills-{size}")
        indexes.append((f"generated-{size}", [skills], args.work_dir / f"index-{size}"))
    if not args.no_real:
        indexes.append(("real-corpora+dev", common.real_skill_roots(args.corpora, args.dev),
                        args.work_dir / "index-real"))

    queries = common.distinct_queries(args.dev)
    warmup, queries = queries[:30], queries[30:]
    for query in warmup:
        bare.encode(query)
        embedder.embed_query(query)
    offset = 0
    for label, roots, index_dir in indexes:
        common.build(roots, index_dir, embedder)
        start = time.perf_counter()
        router = SkillRouter.open(index_dir, embedder=embedder)
        open_ms = (time.perf_counter() - start) * 1000
        for query in warmup:
            router.route(query)
        batch = queries[offset: offset + args.queries]
        offset += args.queries
        load_before = common.load_now()
        result = measure(router, bare, batch, repeat=min(200, len(batch)))
        common.emit({
            "benchmark": "route_latency",
            "index": label,
            "skills": len(router.manifest.skills),
            **result,
            "open_ms": round(open_ms, 1),
            "index_bytes": index_bytes(index_dir),
            "torch_threads": torch.get_num_threads(),
            "load_before": load_before,
            "load_after": common.load_now(),
            "machine": common.machine(),
        })


if __name__ == "__main__":
    main()
