"""The router's work after the query embedding: scoring every skill, the eligibility mask, the top 5.

    python benchmarks/scoring.py [--sizes 100,1000,10000] [--rounds 400]

Compares, interleaved round-robin in one process on the same query vectors:

- ``numpy_matmul``: ``vectors @ query`` with numpy's default BLAS threads (what
  ``SkillRouter`` does today);
- ``numpy_matmul_1_thread``: the same product with BLAS limited to one thread;
- ``faiss_inner_products``: ``faiss.fvec_inner_products_ny``, every score, one thread;
- ``faiss_search_k5_1_thread`` / ``faiss_search_k5_default``: ``IndexFlatIP.search``
  for the top 5 only, with one OpenMP thread or FAISS's default.

Then the rest of a route: ``np.where`` with the eligibility mask, the top-5
``argpartition`` + ``lexsort``, and building the mask for a platform not seen
before: a list comprehension over the whole manifest (``SkillRouter._eligible``
today) against visiting only the skills with a ``platforms:`` list and the
excluded names (``mask_build_restricted_only_ms``; both give the same mask).
One-offs at index load: ``neighbour_knn_ms``, every skill's 10 nearest skills
by one FAISS self-search (a per-skill neighbour statistic), and
``lexical_index_build_ms``, the router's bm25s index of the manifest fields
and body terms, with its per-query ``lexical_scores_ms`` (when bm25s is
installed).

Uses the indexes ``route_latency.py`` left in the work folder when present,
random unit vectors otherwise. One JSON line per size.
"""

from __future__ import annotations

import argparse
import time

import common


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--rounds", type=int, default=400, help="Timed calls per method and size.")
    parser.add_argument("--work-dir", type=common.Path, default=common.DEFAULT_WORK_DIR)
    parser.add_argument("--dev", type=common.Path, default=common.DEFAULT_DEV, help="Queries for the lexical scores.")
    return parser.parse_args()


def vectors_for(size: int, work_dir):
    """(vectors, manifest or None) of the generated index of ``size`` skills, else random unit vectors."""
    import numpy as np

    from semantic_skills.errors import SemanticSkillsError
    from semantic_skills.index.store import load_index

    try:
        manifest, vectors = load_index(work_dir / f"index-{size}")
        return vectors, manifest
    except SemanticSkillsError:
        rng = np.random.default_rng(size)
        vectors = rng.standard_normal((size, 384)).astype(np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True), None


def queries_text(args) -> list[str]:
    return common.distinct_queries(args.dev) if args.dev.is_dir() else ["convert this pdf to markdown"]


def lexical_costs(records, queries: list[str], rounds: int) -> dict:
    """The router's BM25 index (name, folder, description, tags, category, body terms): build and per-query scores."""
    try:
        import bm25s  # noqa: F401
    except ImportError:
        return {}
    from semantic_skills.lexical import LexicalIndex

    start = time.perf_counter()
    index = LexicalIndex.for_skills(records)
    build_ms = (time.perf_counter() - start) * 1000
    score_ms = []
    for text in queries[:rounds]:
        start = time.perf_counter()
        index.scores(text)
        score_ms.append((time.perf_counter() - start) * 1000)
    return {"lexical_index_build_ms": round(build_ms, 1), "lexical_scores_ms": common.stats(score_ms)}


def main() -> None:
    args = parse_args()
    import faiss
    import numpy as np
    from threadpoolctl import threadpool_limits

    from semantic_skills.skills.eligibility import platforms_allow

    default_omp = faiss.omp_get_max_threads()
    rng = np.random.default_rng(0)
    for size in [int(s) for s in args.sizes.split(",") if s.strip()]:
        vectors, manifest = vectors_for(size, args.work_dir)
        n, dim = vectors.shape
        flat = faiss.IndexFlatIP(dim)
        flat.add(vectors)
        scores_out = np.empty(n, dtype=np.float32)
        queries = rng.standard_normal((args.rounds, dim)).astype(np.float32)
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)

        def numpy_matmul(q):
            return vectors @ q

        def faiss_inner_products(q):
            faiss.fvec_inner_products_ny(faiss.swig_ptr(scores_out), faiss.swig_ptr(q), faiss.swig_ptr(vectors),
                                         dim, n)
            return scores_out

        def faiss_search(q):
            return flat.search(q[None, :], 5)

        setups = {
            "numpy_matmul": (numpy_matmul, lambda: None, lambda: None),
            "numpy_matmul_1_thread": (numpy_matmul, None, None),
            "faiss_inner_products": (faiss_inner_products, lambda: None, lambda: None),
            "faiss_search_k5_1_thread": (faiss_search, lambda: faiss.omp_set_num_threads(1),
                                         lambda: faiss.omp_set_num_threads(default_omp)),
            "faiss_search_k5_default": (faiss_search, lambda: None, lambda: None),
        }
        timings = {name: [] for name in setups}
        check = np.allclose(numpy_matmul(queries[0]), faiss_inner_products(queries[0]).copy(), atol=1e-5)
        load_before = common.load_now()
        for q in queries:
            for name, (call, enter, leave) in setups.items():
                limiter = threadpool_limits(1) if enter is None else None
                if enter is not None:
                    enter()
                start = time.perf_counter()
                call(q)
                elapsed = time.perf_counter() - start
                if limiter is not None:
                    limiter.restore_original_limits()
                else:
                    leave()
                timings[name].append(elapsed * 1000)

        mask = np.ones(n, dtype=bool)
        where_ms, topk_ms = [], []
        for q in queries:
            scores = vectors @ q
            start = time.perf_counter()
            masked = np.where(mask, scores, -np.inf)
            middle = time.perf_counter()
            top = np.argpartition(-masked, 4)[:5]
            top = top[np.lexsort((top, -masked[top]))]
            end = time.perf_counter()
            where_ms.append((middle - start) * 1000)
            topk_ms.append((end - middle) * 1000)

        mask_ms, restricted_mask_ms, lexical = [], [], {}
        if manifest is not None:
            records = manifest.skills
            restricted = [i for i, r in enumerate(records) if r.platforms]  # once per loaded index
            rows_by_name: dict[str, list[int]] = {}
            for i, r in enumerate(records):
                rows_by_name.setdefault(r.name, []).append(i)
                if r.folder != r.name:
                    rows_by_name.setdefault(r.folder, []).append(i)
            for round_number in range(20):
                exclude = frozenset(r.name for r in records[round_number::500])  # a new set each round
                start = time.perf_counter()
                full = np.array([platforms_allow(r.platforms) and r.name not in exclude
                                 and r.folder not in exclude for r in records], dtype=bool)
                middle = time.perf_counter()
                proposed = np.ones(len(records), dtype=bool)
                for i in restricted:
                    proposed[i] = platforms_allow(records[i].platforms)
                for name in exclude:
                    proposed[rows_by_name.get(name, [])] = False
                end = time.perf_counter()
                assert (full == proposed).all()
                mask_ms.append((middle - start) * 1000)
                restricted_mask_ms.append((end - middle) * 1000)
            lexical = lexical_costs(records, queries_text(args), args.rounds)

        start = time.perf_counter()
        knn = faiss.IndexFlatIP(dim)
        knn.add(vectors)
        knn.search(vectors, min(11, n))
        neighbour_knn_ms = (time.perf_counter() - start) * 1000

        common.emit({
            "benchmark": "scoring",
            "skills": n,
            "source": "generated index" if manifest is not None else "random vectors",
            "full_scores_agree": bool(check),
            **{f"{name}_ms": common.stats(values) for name, values in timings.items()},
            "mask_where_ms": common.stats(where_ms),
            "top5_ms": common.stats(topk_ms),
            "mask_build_uncached_ms": common.stats(mask_ms),
            "mask_build_restricted_only_ms": common.stats(restricted_mask_ms),
            **lexical,
            "neighbour_knn_ms": round(neighbour_knn_ms, 1),
            "faiss_default_threads": default_omp,
            "load_before": load_before,
            "load_after": common.load_now(),
            "machine": common.machine(),
        })


if __name__ == "__main__":
    main()
