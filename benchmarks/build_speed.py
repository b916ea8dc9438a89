"""Index builds as a user runs them: ``python -m semantic_skills build`` in a fresh process, wall time.

    python benchmarks/build_speed.py [--corpora DIR] [--embedder sentence-transformers|onnx] [--runs 5]

- ``startup``: the interpreter alone, ``import semantic_skills.cli`` (what the
  ``semantic-skills`` console script imports) and ``semantic-skills --version``;
- ``full_build``: ``build --full`` of every SKILL.md in the corpora, with
  skills per second of wall time (process start and model load included) and
  per CPU-second of the build process (less sensitive to other load);
- ``noop_rebuild``: a build of 1,000 generated skills with nothing changed,
  and which heavy modules that process imported (it must load no model);
- ``one_change_rebuild``: the same after one SKILL.md among the 1,000 was
  edited (model load included), checked to report exactly ``updated: 1``.

Prints one JSON line per measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common

HEAVY_MODULES = ("torch", "sentence_transformers", "transformers", "onnxruntime", "litellm", "faiss", "numpy")
REPORT_HEAVY = (
    "import atexit, sys\n"
    "atexit.register(lambda: sys.stderr.write('HEAVY ' + ','.join(m for m in {heavy!r} if m in sys.modules) + '\\n'))\n"
    "sys.argv = ['semantic-skills'] + {args!r}\n"
    "from semantic_skills.cli import main\n"
    "main()\n"
)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpora", type=Path, default=common.DEFAULT_CORPORA)
    parser.add_argument("--embedder", default="sentence-transformers", choices=["sentence-transformers", "onnx"])
    parser.add_argument("--runs", type=int, default=5, help="Repetitions of the quick measurements.")
    parser.add_argument("--work-dir", type=Path, default=common.DEFAULT_WORK_DIR)
    return parser.parse_args()


def env() -> dict[str, str]:
    environment = dict(os.environ, HF_HUB_OFFLINE="1")
    environment.pop("SEMANTIC_SKILLS_INDEX_DIR", None)
    environment["PYTHONPATH"] = str(common.REPO) + (os.pathsep + environment["PYTHONPATH"]
                                                    if environment.get("PYTHONPATH") else "")
    return environment


def timed(command: list[str]) -> tuple[float, float, subprocess.CompletedProcess]:
    """(wall seconds, CPU seconds of the child, result) of one subprocess run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, env=env(), capture_output=True, text=True, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"build_speed: {' '.join(command)} failed: {done.stderr.strip()[-500:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done


def build(skills: Path, index_dir: Path, embedder: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "semantic_skills", "build", "--skills-dir", str(skills), "--index-dir",
            str(index_dir), "--embedder", embedder, "--json", *extra]


def counts(done: subprocess.CompletedProcess) -> dict:
    report = json.loads(done.stdout.strip().splitlines()[-1])
    return {key: report[key] for key in ("added", "updated", "removed", "unchanged", "skipped")}


def walls(command: list[str], runs: int) -> dict:
    seconds = [timed(command)[0] * 1000 for _ in range(runs)]
    return {"min_ms": round(min(seconds), 1), "median_ms": round(common.percentile(seconds, 50), 1)}


def main() -> None:
    args = parse_args()
    common.require_dir(args.corpora, "--corpora")
    base = {"embedder": args.embedder, "machine": common.machine()}

    load_before = common.load_now()
    startup = {
        "python_only": walls([sys.executable, "-c", "pass"], args.runs),
        "import_semantic_skills_cli": walls([sys.executable, "-c", "import semantic_skills.cli"], args.runs),
        "version": walls([sys.executable, "-m", "semantic_skills", "--version"], args.runs),
    }
    common.emit({"benchmark": "build_startup", **startup, "load_before": load_before,
                  "load_after": common.load_now(), **base})

    with tempfile.TemporaryDirectory(prefix="build-bench-") as tmp:
        load_before = common.load_now()
        wall, cpu, done = timed(build(args.corpora, Path(tmp) / "full", args.embedder, "--full"))
        report = json.loads(done.stdout.strip().splitlines()[-1])
        skills = report["added"] + report["updated"] + report["unchanged"]
        common.emit({"benchmark": "full_build", "skill_files": len(common.corpus_files(args.corpora)),
                     "skills": skills, "wall_s": round(wall, 2), "build_s": report["seconds"],
                     "skills_per_s_wall": round(skills / wall, 1), "skills_per_cpu_s": round(skills / cpu, 1),
                     "load_before": load_before, "load_after": common.load_now(), **base})

    skills_dir = common.generate_skills(args.corpora, 1000, args.work_dir / "build-skills-1000")
    index_dir = args.work_dir / f"build-index-1000-{args.embedder}"
    timed(build(skills_dir, index_dir, args.embedder))  # bring it up to date

    load_before = common.load_now()
    noop = [timed(build(skills_dir, index_dir, args.embedder)) for _ in range(args.runs)]
    heavy = subprocess.run(
        [sys.executable, "-c", REPORT_HEAVY.format(heavy=HEAVY_MODULES, args=build(skills_dir, index_dir,
                                                                                    args.embedder)[3:])],
        env=env(), capture_output=True, text=True)
    imported = [line[6:] for line in heavy.stderr.splitlines() if line.startswith("HEAVY ")]
    common.emit({"benchmark": "noop_rebuild", "skills": 1000,
                 "wall_ms": common.stats([w * 1000 for w, _, _ in noop]), "counts": counts(noop[-1][2]),
                 "heavy_modules_imported": imported[-1].split(",") if imported and imported[-1] else [],
                 "load_before": load_before, "load_after": common.load_now(), **base})

    load_before = common.load_now()
    edited = sorted(skills_dir.rglob("SKILL.md"))[0]
    changed = []
    for run in range(max(1, args.runs // 2)):
        edited.write_text(edited.read_text(encoding="utf-8") + f"\nEdit {time.time()}.\n", encoding="utf-8")
        wall, cpu, done = timed(build(skills_dir, index_dir, args.embedder))
        changed.append((wall, counts(done)))
    common.emit({"benchmark": "one_change_rebuild", "skills": 1000,
                 "wall_s": common.stats([w for w, _ in changed]), "counts": [c for _, c in changed],
                 "load_before": load_before, "load_after": common.load_now(), **base})


if __name__ == "__main__":
    main()
