"""Route latency against a bare query embedding, load time and index size, for large indexes.

    python benchmarks/route_overhead.py [--skills 1000 10000] [--messages benchmarks/corpora-queries.jsonl]

An index of N skills is written to a temporary folder: the records are the
real SKILL.md files of ../shared/data/corpora (or examples/skills), repeated
under new names until there are N, and every skill gets the most vector rows
the document recipe allows (1 main + ``MAX_SENTENCE_VIEWS``), filled with
random unit vectors: the router's cost depends on the sizes, not the values,
and embedding 50,000 texts would take an hour. Each message is routed once
(a query-cache miss, so ``route`` embeds it), routed again (a cache hit: only
the work beyond the embedding) and embedded once more with the bare embedder.
``route_over_embed`` compares the medians of the first and the last; on a
busy machine ``overhead_median_ms`` (the second) is the steadier number.
Prints one JSON line per size.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from semantic_skills.documents import MAX_SENTENCE_VIEWS  # noqa: E402
from semantic_skills.embedders import SentenceTransformerEmbedder  # noqa: E402
from semantic_skills.index import Manifest, SkillRecord, write_index  # noqa: E402
from semantic_skills.router import SkillRouter  # noqa: E402
from semantic_skills.settings import SkillsRoot  # noqa: E402
from semantic_skills.skills import discover_skills  # noqa: E402


def synthetic_index(folder: Path, skills_dir: Path, count: int, embedder) -> None:
    real = discover_skills([SkillsRoot(skills_dir)]).skills
    rows = 1 + MAX_SENTENCE_VIEWS
    records = []
    for n in range(count):
        skill = real[n % len(real)]
        copy = replace(skill, name=f"{skill.name}-{n // len(real)}", path=f"{skill.path}#{n}")
        records.append(SkillRecord.from_skill(copy, n * rows, rows))
    vectors = np.random.default_rng(0).standard_normal((count * rows, embedder.identity.dimension), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    manifest = Manifest(embedder.identity, "synthetic", records, "", len(vectors))
    write_index(folder, manifest, vectors)


def measure(count: int, skills_dir: Path, messages: list[str], embedder) -> dict:
    with tempfile.TemporaryDirectory(prefix="route-overhead-") as tmp:
        folder = Path(tmp)
        synthetic_index(folder, skills_dir, count, embedder)
        vectors_bytes = sum(p.stat().st_size for p in folder.glob("vectors-*.faiss"))
        manifest_bytes = (folder / "manifest.json").stat().st_size
        started = time.perf_counter()
        router = SkillRouter.open(folder, embedder=embedder)
        load_s = time.perf_counter() - started
        route_ms, overhead_ms, embed_ms = [], [], []
        for message in messages:
            t0 = time.perf_counter()
            router.route(message)
            t1 = time.perf_counter()
            router.route(message)
            t2 = time.perf_counter()
            embedder.embed_query(message)
            t3 = time.perf_counter()
            route_ms.append((t1 - t0) * 1000)
            overhead_ms.append((t2 - t1) * 1000)
            embed_ms.append((t3 - t2) * 1000)
    return {
        "skills": count,
        "vector_rows": count * (1 + MAX_SENTENCE_VIEWS),
        "vectors_mb": round(vectors_bytes / 1e6, 1),
        "manifest_mb": round(manifest_bytes / 1e6, 1),
        "load_s": round(load_s, 2),
        "messages": len(messages),
        "route_median_ms": round(statistics.median(route_ms), 2),
        "embed_median_ms": round(statistics.median(embed_ms), 2),
        "route_over_embed": round(statistics.median(route_ms) / statistics.median(embed_ms), 3),
        "overhead_median_ms": round(statistics.median(overhead_ms), 2),
        "overhead_p95_ms": round(float(np.percentile(overhead_ms, 95)), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skills", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--messages", type=Path, default=REPO / "benchmarks" / "corpora-queries.jsonl")
    corpora = REPO.parent / "shared" / "data" / "corpora"
    parser.add_argument("--skills-dir", type=Path, default=corpora if corpora.is_dir() else REPO / "examples" / "skills")
    args = parser.parse_args()
    messages = [json.loads(line)["query"] for line in args.messages.read_text(encoding="utf-8").splitlines() if line.strip()]
    embedder = SentenceTransformerEmbedder()
    embedder.load()
    for message in messages[:20]:
        embedder.embed_query(message)  # warm up
    for count in args.skills:
        print(json.dumps(measure(count, args.skills_dir, messages, embedder)), flush=True)


if __name__ == "__main__":
    main()
