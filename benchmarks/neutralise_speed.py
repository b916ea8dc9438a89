"""Measure ``injection.neutralise`` on 200 KB skill bodies, ordinary and hostile.

    python benchmarks/neutralise_speed.py [--corpora ../shared/data/corpora] [--rounds 20]

The ordinary bodies are the real SKILL.md bodies of ``--corpora`` joined to
200 KB (English prose with code samples, ``<div>`` and ``a < b``), and
Russian and Chinese prose with an angle bracket every 2 KB. The hostile ones
are what an attacker would send to make the tag search slow: a body of
disguised tags, one of angles, one of look-alike angles, and one of tags
padded with zero-width spaces. Prints one JSON line per body: p50 / p90 /
max milliseconds over ``--rounds`` runs, interleaved, with the load average.
"""

from __future__ import annotations

import argparse
import time

import common

SIZE = 200_000


def bodies(corpora) -> dict[str, str]:
    from semantic_skills.injection import skill_body

    real, files = [], iter(common.corpus_files(corpora))
    while sum(map(len, real)) < SIZE:
        real.append(skill_body(next(files).read_text(encoding="utf-8", errors="replace")))
    return {
        "real SKILL.md bodies": "\n\n".join(real)[:SIZE],
        "Russian prose, an angle every 2 KB": (("Проверьте улей и рамки с расплодом. " * 60)[:1990] + " a < b ")
                                              * (SIZE // 1997),
        "Chinese prose, an angle every 2 KB": (("检查蜂箱中的每一个巢框。" * 170)[:1990] + " a < b ") * (SIZE // 1997),
        "hostile: disguised tags only": ("</sk\u0456ll\u200b-\u0441ontext>" * SIZE)[:SIZE],
        "hostile: angles only": "<" * SIZE,
        "hostile: look-alike angles only": "\u2039" * SIZE,
        "hostile: tags padded with 1,000 zero-width spaces": (("<" + "\u200b" * 1000 + "/skill-context>") * 200)[:SIZE],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpora", type=common.Path, default=common.DEFAULT_CORPORA)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    common.require_dir(args.corpora, "--corpora")

    from semantic_skills.injection import neutralise

    texts = bodies(args.corpora)
    for text in texts.values():
        neutralise(text)  # warm the character tables
    load_before = common.load_now()
    timings: dict[str, list[float]] = {name: [] for name in texts}
    for _ in range(args.rounds):
        for name, text in texts.items():
            started = time.perf_counter()
            neutralise(text)
            timings[name].append((time.perf_counter() - started) * 1000)
    for name, text in texts.items():
        common.emit({"benchmark": "neutralise_speed", "body": name, "chars": len(text),
                     "ms": common.stats(timings[name]), "load_before": load_before,
                     "load_after": common.load_now(), **common.machine()})


if __name__ == "__main__":
    main()
