"""Does the ``onnx`` embedder rank and decide like the default ``sentence-transformers`` one?

    python benchmarks/embedder_agreement.py [--dev DIR] [--limit N]

For each dev set (``sgd``, ``metatool``) an index of its skills is built with
each embedder (in the work folder, reused across runs), and every query is
routed by both routers. Reported per dev set:

- agreement: same top-1 skill, same decision (the same skill or both none),
  mean overlap of the top-5 lists, cosine between the two query vectors, and
  the Pearson correlation of the two embedders' scores over every index row;
- for each embedder, eval-style accuracy against the labels: top-1 and top-5
  hit rate on queries with a gold skill (``gold`` or ``acceptable``), and
  decision accuracy (the injected skill is right, or nothing is injected when
  there is no gold skill).

Prints one JSON line per dev set.
"""

from __future__ import annotations

import argparse
import json
import os

import common


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dev", type=common.Path, default=common.DEFAULT_DEV)
    parser.add_argument("--limit", type=int, default=0, help="Queries per dev set (0: all).")
    parser.add_argument("--work-dir", type=common.Path, default=common.DEFAULT_WORK_DIR)
    return parser.parse_args()


def accuracy(rows: list[dict], key: str) -> dict:
    labelled = [r for r in rows if r["gold"]]
    unlabelled = [r for r in rows if not r["gold"]]
    decided_right = sum(1 for r in labelled if r[key]["skill"] in r["gold"])
    decided_right += sum(1 for r in unlabelled if r[key]["skill"] is None)
    return {
        "top1": round(sum(1 for r in labelled if r[key]["top5"][:1] and r[key]["top5"][0] in r["gold"])
                      / max(1, len(labelled)), 4),
        "top5": round(sum(1 for r in labelled if set(r[key]["top5"]) & r["gold"]) / max(1, len(labelled)), 4),
        "decision": round(decided_right / max(1, len(rows)), 4),
    }


def main() -> None:
    args = parse_args()
    common.require_dir(args.dev, "--dev")
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")  # as in the routing worker; a busy machine makes more threads slower
    import numpy as np

    from semantic_skills.embedders.onnx import OnnxEmbedder
    from semantic_skills.embedders.sentence_transformers import SentenceTransformerEmbedder
    from semantic_skills.index.store import load_index
    from semantic_skills.router import SkillRouter

    embedders = {"sentence-transformers": SentenceTransformerEmbedder(), "onnx": OnnxEmbedder()}
    for embedder in embedders.values():
        embedder.load()
    for dev_set in ("sgd", "metatool"):
        folder = args.dev / dev_set
        if not (folder / "queries.jsonl").is_file():
            continue
        routers, vectors = {}, {}
        for name, embedder in embedders.items():
            index_dir = args.work_dir / f"agreement-{dev_set}-{name}"
            common.build([folder / "skills"], index_dir, embedder)
            routers[name] = SkillRouter.open(index_dir, embedder=embedder)
            vectors[name] = load_index(index_dir)[1]
        records = [json.loads(line) for line in (folder / "queries.jsonl").read_text(encoding="utf-8").splitlines()
                   if line.strip()]
        if args.limit:
            records = records[: args.limit]
        load_before = common.load_now()
        rows, cosines, correlations = [], [], []
        for record in records:
            row = {"gold": set(record.get("gold") or []) | set(record.get("acceptable") or [])}
            for name, router in routers.items():
                decision = router.route(record["query"])
                row[name] = {"skill": decision.skill.name if decision.skill else None,
                             "top5": [c.name for c in decision.candidates[:5]]}
            torch_query = routers["sentence-transformers"].embed_query(record["query"])  # cached by route()
            onnx_query = routers["onnx"].embed_query(record["query"])
            cosines.append(float(torch_query @ onnx_query))
            correlations.append(float(np.corrcoef(vectors["sentence-transformers"] @ torch_query,
                                                  vectors["onnx"] @ onnx_query)[0, 1]))
            rows.append(row)
        pairs = [(r["sentence-transformers"], r["onnx"]) for r in rows]
        common.emit({
            "benchmark": "embedder_agreement",
            "dev_set": dev_set,
            "queries": len(rows),
            "skills": len(routers["onnx"].manifest.skills),
            "agreement": {
                "top1_same": round(sum(1 for a, b in pairs if a["top5"][:1] == b["top5"][:1]) / len(pairs), 4),
                "decision_same": round(sum(1 for a, b in pairs if a["skill"] == b["skill"]) / len(pairs), 4),
                "top5_overlap": round(sum(len(set(a["top5"]) & set(b["top5"])) / 5 for a, b in pairs)
                                      / len(pairs), 4),
                "query_cosine_mean": round(float(np.mean(cosines)), 5),
                "query_cosine_min": round(float(np.min(cosines)), 5),
                "score_pearson_mean": round(float(np.mean(correlations)), 5),
            },
            "accuracy": {name: accuracy(rows, name) for name in embedders},
            "load_before": load_before,
            "load_after": common.load_now(),
            "machine": common.machine(),
        })


if __name__ == "__main__":
    main()
