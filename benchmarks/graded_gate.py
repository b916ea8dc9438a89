"""The graded-injection lab: route each set once, then re-judge every decision with other gates.

    pip install chatterbot-corpus
    python benchmarks/off_topic_queries.py > off-topic.jsonl
    python benchmarks/graded_gate.py --off-topic off-topic.jsonl [--dev DIR] [--corpora DIR] [--work-dir DIR]

Builds (once, in the work folder) an index of metatool, sgd and the corpora set
with the bundled model, embeds every message once (MiniLM has no query prompt,
so one batch of documents gives the query vectors), and ranks each message, its
leave-out copy (without its right skills) and every off-topic message with the
router's own ``rank()``, keeping the shortlist. It then prints, as markdown,
the tables of docs/quality.md "What was tried in round 3": which features
decide "sure", the near-duplicate rule, what separates off-topic messages,
which hint scores keep them out, naming the runner-up, and calibration
objectives. Its grid search mirrors ``calibrate`` so that the rules can vary;
the shipped gate's own figures come from ``semantic-skills eval``. Takes a few
minutes, most of it the first build.
"""

from __future__ import annotations

import argparse
import math
import pickle
from dataclasses import dataclass

import numpy as np

import common

SETS = ("metatool", "sgd", "corpora")
TARGET_FULL_PRECISION = {"metatool": 0.92, "sgd": 0.92, "corpora": 0.97}
GAPS = np.round(np.arange(0.0, 1.001, 0.01), 2)
MARGINS = np.round(np.arange(0.0, 0.501, 0.05), 2)
FLOORS = np.round(np.arange(0.30, 0.801, 0.02), 2)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--off-topic", type=common.Path, required=True, help="off_topic_queries.py's output")
    parser.add_argument("--corpora", type=common.Path, default=common.DEFAULT_CORPORA)
    parser.add_argument("--dev", type=common.Path, default=common.DEFAULT_DEV)
    parser.add_argument("--work-dir", type=common.Path, default=common.DEFAULT_WORK_DIR / "graded-gate")
    return parser.parse_args()


# --------------------------------------------------------------------------- routing once


def routed_set(name: str, skills, queries, off_topic, work_dir) -> dict:
    """Every message of a set ranked once: per-message arrays (see :func:`_arrays`), cached in the work folder."""
    cache = work_dir / f"routed-{name}.pkl"
    if cache.is_file():
        return pickle.loads(cache.read_bytes())
    from semantic_skills.builder import build_index
    from semantic_skills.embedders.sentence_transformers import SentenceTransformerEmbedder
    from semantic_skills.evaluation import read_labelled
    from semantic_skills.index.store import load_index
    from semantic_skills.ranking import IndexState
    from semantic_skills.skills.discovery import SkillsRoot

    embedder = SentenceTransformerEmbedder()
    index_dir = work_dir / f"index-{name}"
    build_index([SkillsRoot(skills)], index_dir, embedder)
    manifest, vectors = load_index(index_dir)
    state = IndexState.of(manifest, vectors, None, frozenset())
    labelled, off = read_labelled(queries), read_labelled(off_topic)
    jobs = [("pos" if q.positive else "neg", q, ()) for q in labelled]
    jobs += [("lo", q, q.right) for q in labelled if q.positive] + [("off", q, ()) for q in off]
    texts = sorted({q.query for _, q, _ in jobs})
    table = dict(zip(texts, embedder.embed_documents(texts)))
    data = _arrays(state, jobs, table)
    cache.write_bytes(pickle.dumps(data))
    return data


def _arrays(state, jobs, table) -> dict:
    from semantic_skills.gates import is_small_talk
    from semantic_skills.lexical import tokenize
    from semantic_skills.ranking import rank

    names = [r.name for r in state.manifest.skills]
    tokens = [set(tokenize(f"{r.name} {r.folder} {r.description} {' '.join(r.tags)}")) | set(r.terms.split())
              for r in state.manifest.skills]
    frequency: dict[str, int] = {}
    for skill_tokens in tokens:
        for word in skill_tokens:
            frequency[word] = frequency.get(word, 0) + 1
    centre = state.main.mean(axis=0) / np.linalg.norm(state.main.mean(axis=0))
    rows = []
    for kind, query, exclude in jobs:
        ranking = rank(state, query.query, exclude, lambda text: table[text])
        features = ranking.gate_features()
        top = [names[i] for i in ranking.skills[:2]]
        words = set(tokenize(query.query))
        rows.append(dict(
            kind=kind, ok=not is_small_talk(query.query) and features["similarity"] >= 0.30,
            sim=features["similarity"], gap=features["relative_gap"], main=features["main_cosine"],
            view=features["view_cosine"], lex=features["lexical"], separation=features["separation"],
            margin=features["runner_up_margin"], scores=ranking.scores, top_cosine=ranking.top_cosine,
            r1=top[0] in query.right, r2=len(top) > 1 and top[1] in query.right,
            words=len(query.query.split()), in_vocabulary=sum(w in frequency for w in words),
            shared_idf=sum(math.log(1 + len(tokens) / frequency[w]) for w in words & tokens[ranking.skills[0]]),
            top10=float(ranking.similarity[:10].mean()), centroid=float(table[query.query] @ centre)))
    arrays = {key: np.array([row[key] for row in rows]) for key in rows[0] if key not in ("scores", "top_cosine")}
    arrays["shortlists"] = [(row["scores"], row["top_cosine"], row["separation"]) for row in rows]
    arrays["neighbour_cosine"] = state.neighbour_cosine
    return arrays


def near_duplicate_margin(data: dict, k: float) -> np.ndarray:
    """The relative margin over the best candidate that is not a near duplicate (``1 - cos < k x separation``)."""
    key = f"margin_nd_{k}"
    if key not in data:
        out = []
        for scores, top_cosine, separation in data["shortlists"]:
            different = np.flatnonzero(1.0 - top_cosine[1:] > k * separation)
            other = float(scores[1 + different[0]]) if len(different) else 0.0
            out.append((float(scores[0]) - other) / max(separation, 0.05))
        data[key] = np.array(out)
    return data[key]


# --------------------------------------------------------------------------- judging


@dataclass(frozen=True)
class Rule:
    """A gate in array form: floor, hint gap, full gap and margin, the margin's near-duplicate share ``k``,
    and the runner-up margin below which a hint names two (None: the full margin)."""

    floor: float = 0.38
    hint_gap: float = 0.27
    full_gap: float = 0.31
    full_margin: float = 0.20
    k: float = 0.5
    pair: float | None = None


def judge(data: dict, rule: Rule) -> dict:
    """What ``rule`` does: eval's rates, off-topic any injection, and the precisions the fits hold
    (``objective``: named right over every injection, leave-out copies included; ``plain``: the same
    without them; ``full_objective``: right full injections over full ones, leave-out copies included)."""
    kind = data["kind"]
    pos, neg, lo, off = (kind == k for k in ("pos", "neg", "lo", "off"))
    labelled = pos | neg
    above = data["ok"] & (data["sim"] >= rule.floor)
    full = above & (data["gap"] >= rule.full_gap) & (near_duplicate_margin(data, rule.k) >= rule.full_margin)
    hint = above & ~full & (data["gap"] >= rule.hint_gap)
    pair = hint & (data["margin"] < (rule.full_margin if rule.pair is None else rule.pair))
    named = (full & data["r1"]) | (hint & (data["r1"] | (pair & data["r2"])))
    any_ = full | hint
    full_right, named_right = (full & pos & data["r1"]).sum(), (named & pos).sum()

    def share(mask, among):
        return mask[among].sum() / max(among.sum(), 1)

    return dict(full_precision=full_right / max((full & labelled).sum(), 1), full_correct=share(full & data["r1"], pos),
                named=share(named, pos), false_full=share(full, neg), false_any=share(any_, neg),
                lo_full=share(full, lo), lo_any=share(any_, lo), off=share(any_, off),
                objective=named_right / max((any_ & (labelled | lo)).sum(), 1),
                plain=named_right / max((any_ & labelled).sum(), 1),
                full_objective=full_right / max((full & (labelled | lo)).sum(), 1),
                hints=int((hint & labelled).sum()), pairs=int((pair & labelled).sum()))


def fit(data: dict, full_target: float = 0.92, hint_target: float = 0.70, k: float = 0.5, pair: float | None = None,
        full_objective: bool = False, hint_objective: bool = True, margins=MARGINS) -> Rule:
    """``calibrate``'s two steps on one set, with the rule's variations as options (ties: the first, loosest)."""
    full_key = "full_objective" if full_objective else "full_precision"
    best = None
    for gap in GAPS:
        for margin in margins:
            m = judge(data, Rule(0.30, math.inf, gap, margin, k, pair))
            if m[full_key] >= full_target and (best is None or m["full_correct"] > best[0]):
                best = (m["full_correct"], gap, margin)
    full_gap, full_margin = best[1:] if best else (9.0, 9.0)
    hint_key = "objective" if hint_objective else "plain"
    best = None
    for floor in FLOORS:
        for gap in GAPS:
            rule = Rule(floor, gap, full_gap, full_margin, k, pair)
            m = judge(data, rule)
            if m[hint_key] >= hint_target and (best is None or m["named"] > best[0]):
                best = (m["named"], rule)
    return best[1] if best else Rule(0.80, 1.0, full_gap, full_margin, k, pair)


# --------------------------------------------------------------------------- tables


def table(title: str, header: list[str], rows: list[list[str]]) -> None:
    print(f"\n{title}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")


def cells(m: dict, keys=("full_precision", "full_correct", "named", "lo_full", "off")) -> str:
    return " / ".join(f"{m[key]:.3f}" for key in keys)


SURE = {
    "relative gap": lambda d: d["gap"],
    "relative gap, similarity >= 0.40": lambda d: np.where(d["sim"] >= 0.40, d["gap"], -np.inf),
    "relative gap, similarity >= 0.45": lambda d: np.where(d["sim"] >= 0.45, d["gap"], -np.inf),
    "relative gap + 0.5 x similarity": lambda d: d["gap"] + 0.5 * d["sim"],
    "relative gap + similarity": lambda d: d["gap"] + d["sim"],
    "relative gap x similarity": lambda d: d["gap"] * d["sim"],
    "relative gap + 0.1 x lexical": lambda d: d["gap"] + 0.1 * d["lex"],
    "margin over the runner-up / separation": lambda d: d["margin"],
    "relative gap + that margin": lambda d: d["gap"] + d["margin"],
    "min(relative gap, 2 x that margin)": lambda d: np.minimum(d["gap"], 2 * d["margin"]),
}


def sure_frontier(data: dict, score: np.ndarray, target: float) -> str:
    """Full correct and leave-out full at the loosest threshold on ``score`` whose full precision >= target
    (a score of minus infinity: never full)."""
    kind = data["kind"]
    order = [i for i in np.argsort(-score, kind="stable")
             if data["ok"][i] and np.isfinite(score[i]) and kind[i] in ("pos", "neg", "lo")]
    right = full = left_out = 0
    best = (0.0, 0.0)
    for i in order:
        if kind[i] == "lo":
            left_out += 1
            continue
        full += 1
        right += kind[i] == "pos" and data["r1"][i]
        if right / full >= target:
            best = (right / (kind == "pos").sum(), left_out / (kind == "lo").sum())
    return f"{best[0]:.3f} / {best[1]:.3f}"


def print_sure(datas: dict) -> None:
    table("Full correct / leave-out false full at the full-precision target, each rule fitted on each set",
          ["full when", *SETS], [[name, *(sure_frontier(datas[n], rule(datas[n]), TARGET_FULL_PRECISION[n])
                                         for n in SETS)] for name, rule in SURE.items()])


def print_near_duplicates(datas: dict) -> None:
    rows = []
    for label, options in (("relative gap alone", dict(margins=(0.0,))), ("k = 0", dict(k=0.0)),
                           *((f"k = {k}", dict(k=k)) for k in (0.5, 0.6, 0.7, 0.75, 0.9, 1.0))):
        rule = fit(datas["metatool"], pair=0.30, **options)
        rows.append([f"{label}: gap {rule.full_gap:.2f}, margin {rule.full_margin:.2f}, hint {rule.floor:.2f} / "
                     f"{rule.hint_gap:.2f}", *(cells(judge(datas[n], rule), KEYS4) for n in SETS)])
    table("The near-duplicate rule, fitted on metatool, hints naming the runner-up within 0.30 (full precision / "
          "full correct / named / leave-out full)",
          ["full gate", *SETS], rows)


KEYS4 = ("full_precision", "full_correct", "named", "lo_full")
FEATURES = ("sim", "gap", "main", "view", "lex", "margin", "centroid", "top10", "words", "in_vocabulary",
            "shared_idf")


def auc(right: np.ndarray, other: np.ndarray) -> float:
    """Area under the ROC curve: the chance that a right decision's value beats another's (ties count half)."""
    values = np.concatenate([right, other])
    order = values.argsort(kind="stable")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(1, len(values) + 1)
    for value in np.unique(values):  # average ranks of ties
        tied = values == value
        ranks[tied] = ranks[tied].mean()
    return (ranks[: len(right)].sum() - len(right) * (len(right) + 1) / 2) / (len(right) * len(other))


def print_separation(datas: dict) -> None:
    rows = []
    for feature in FEATURES:
        row = [feature]
        for n in SETS:
            d = datas[n]
            right = d[feature][d["ok"] & (d["kind"] == "pos") & d["r1"]]
            off, lo = (d[feature][d["ok"] & (d["kind"] == k)] for k in ("off", "lo"))
            row.append(f"{auc(right, off):.2f} / {auc(right, lo):.2f}")
        rows.append(row)
    table("Area under the ROC curve: right decisions against off-topic messages / leave-out copies (above 0.30)",
          ["feature", *SETS], rows)


HINT_SCORES = {
    "similarity": lambda d: d["sim"],
    "relative gap": lambda d: d["gap"],
    "similarity + 0.25 x relative gap": lambda d: d["sim"] + 0.25 * d["gap"],
    "similarity + relative gap": lambda d: d["sim"] + d["gap"],
    "similarity x relative gap": lambda d: d["sim"] * d["gap"],
    "min(similarity / 0.45, relative gap / 0.25)": lambda d: np.minimum(d["sim"] / 0.45, d["gap"] / 0.25),
    "main cosine": lambda d: d["main"],
    "similarity + 0.02 x IDF-weighted shared words": lambda d: d["sim"] + 0.02 * d["shared_idf"],
    "similarity + 0.1 x log(words)": lambda d: d["sim"] + 0.1 * np.log(np.maximum(d["words"], 1)),
    "similarity + 0.1 x log(1 + words in the vocabulary)": lambda d: d["sim"] + 0.1 * np.log1p(d["in_vocabulary"]),
}


def off_topic_threshold(data: dict, score: np.ndarray, full: np.ndarray, budget: float = 0.01) -> float:
    """The loosest threshold on ``score`` keeping any injection (``full`` or ``score`` above it) on the
    off-topic messages within ``budget``."""
    off = (data["kind"] == "off") & data["ok"]
    allowed = int(budget * (data["kind"] == "off").sum() + 1e-9) - int((off & full).sum())
    values = np.sort(score[off & ~full])[::-1]
    if allowed < 0:
        return math.inf
    return values[allowed] + 1e-12 if len(values) > allowed else -math.inf


def named_at(data: dict, score: np.ndarray, threshold: float, full: np.ndarray, pair: bool) -> float:
    pos = (data["kind"] == "pos") & data["ok"]
    hint = pos & ~full & (score >= threshold)
    named = (pos & full & data["r1"]) | (hint & (data["r1"] | (pair & (data["margin"] < 0.3) & data["r2"])))
    return named.sum() / (data["kind"] == "pos").sum()


def print_hint_scores(datas: dict) -> None:
    rows = []
    for name, rule in HINT_SCORES.items():
        row = [name]
        for n in SETS:
            d = datas[n]
            full, score = d["gap"] >= 0.45, rule(d)
            threshold = off_topic_threshold(d, score, full)
            alone, two = (named_at(d, score, threshold, full, pair) for pair in (False, True))
            row.append(f"{alone:.3f}, {two:.3f} (threshold {threshold:.3f})")
        rows.append(row)
    table("Named correct at off-topic <= 0.01 (full at relative gap >= 0.45; then naming the runner-up within 0.30)",
          ["hint score", *SETS], rows)


def print_lengths_and_floors(datas: dict) -> None:
    rows = []
    for kind in ("pos", "off"):
        row = [kind]
        for n in SETS:
            words = datas[n]["words"][datas[n]["kind"] == kind]
            row.append(f"{(words <= 5).mean():.2f} / {(words <= 8).mean():.2f}")
        rows.append(row)
    table("Share of messages with at most 5 / 8 words", ["messages", *SETS], rows)
    rows = [["floor keeping off-topic at 0.01 (full at gap >= 0.45)",
             *(f"{off_topic_threshold(datas[n], datas[n]['sim'], datas[n]['gap'] >= 0.45):.3f}" for n in SETS)],
            ["median cosine to the nearest skill", *(f"{np.median(datas[n]['neighbour_cosine'][:, 0]):.3f}"
                                                     for n in SETS)],
            ["median mean cosine to the 9 nearest", *(f"{np.median(datas[n]['neighbour_cosine'][:, :9].mean(1)):.3f}"
                                                      for n in SETS)]]
    table("A floor that adapts to the library?", ["", *SETS], rows)


def print_pairs(datas: dict) -> None:
    rows = []
    for label, pair in (("never", -math.inf), ("0.05", 0.05), ("0.10", 0.10), ("the full margin", None),
                        ("0.30", 0.30), ("always", math.inf)):
        rule = fit(datas["metatool"], pair=pair)
        row = [f"{label} (hint {rule.floor:.2f} / {rule.hint_gap:.2f})"]
        for n in SETS:
            m = judge(datas[n], rule)
            row.append(f"{m['named']:.3f} / {m['off']:.3f} ({m['pairs']} of {m['hints']})")
        rows.append(row)
    table("Naming the runner-up below a margin, fitted on metatool (named / off-topic, hints naming two)",
          ["pair below", *SETS], rows)


def print_objectives(datas: dict) -> None:
    rows = []
    for full, hint in (((0.92, False), (0.65, True)), ((0.92, False), (0.70, True)), ((0.92, False), (0.75, True)),
                       ((0.93, False), (0.70, True)), ((0.92, False), (0.85, False)), ((0.80, True), (0.70, True)),
                       ((0.75, True), (0.70, True))):
        rule = fit(datas["metatool"], full[0], hint[0], full_objective=full[1], hint_objective=hint[1])
        label = (f"full {'objective' if full[1] else 'precision'} {full[0]:.2f}, hint "
                 f"{'objective' if hint[1] else 'plain precision'} {hint[0]:.2f}: {rule.floor:.2f}, "
                 f"{rule.hint_gap:.2f}, {rule.full_gap:.2f}, {rule.full_margin:.2f}")
        rows.append([label, *(cells(judge(datas[n], rule)) for n in SETS)])
    table("Calibration objectives fitted on metatool (full precision / full correct / named / leave-out full / "
          "off-topic any)", ["objectives", *SETS], rows)
    rows = [[f"{floor:.2f}", *(cells(judge(datas[n], Rule(floor=floor))) for n in SETS)]
            for floor in (0.36, 0.38, 0.40, 0.42)]
    table("The shipped gate by floor", ["floor", *SETS], rows)


def main() -> None:
    args = parse_args()
    args.work_dir.mkdir(parents=True, exist_ok=True)
    sources = {"metatool": (args.dev / "metatool" / "skills", args.dev / "metatool" / "queries.jsonl"),
               "sgd": (args.dev / "sgd" / "skills", args.dev / "sgd" / "queries.jsonl"),
               "corpora": (args.corpora, common.REPO / "benchmarks" / "corpora-queries.jsonl")}
    datas = {n: routed_set(n, *sources[n], args.off_topic, args.work_dir) for n in SETS}
    print_sure(datas)
    print_near_duplicates(datas)
    print_separation(datas)
    print_hint_scores(datas)
    print_lengths_and_floors(datas)
    print_pairs(datas)
    print_objectives(datas)


if __name__ == "__main__":
    main()
