"""``eval`` and ``calibrate``: routing quality on labelled messages, and the gate fitted to them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from . import defaults
from .app import TerminalBar, index_options, json_option, main

queries_file_option = click.option(
    "--queries", "queries_file", required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help='Labelled JSONL: {"query": ..., "gold": [skill names] or [] for none, "acceptable": [...], '
         '"source": ...} per line.',
)


def _route_labelled(queries_file: Path, index_dir, backend, model, leave_out: bool):
    from ..evaluation import read_labelled, route_all

    labelled = read_labelled(queries_file)
    router = defaults.open_router(index_dir, backend, model)
    router.embed_query("warm-up")  # the first embedding is slow; keep it out of the latency figures
    bar = TerminalBar(len(labelled), label="Routing") if sys.stderr.isatty() else None
    try:
        return router, route_all(router, labelled, progress=bar.advance if bar else None, leave_out=leave_out)
    finally:
        if bar:
            bar.close()


def _fmt(value, width: int = 9) -> str:
    return f"{value:>{width}.3f}" if value is not None else f"{'-':>{width}}"


@main.command("eval")
@queries_file_option
@index_options
@click.option("--leave-out", is_flag=True,
              help="Also route each message that has a skill with its gold and acceptable skills excluded; "
                   "any injection then is a false one (reported as 'leave-out').")
@json_option
def evaluate(queries_file, index_dir, backend, model, leave_out, as_json):
    """Measure routing quality on labelled messages.

    Top-1, recall@5 and MRR are over messages with a skill (from the
    candidates); correct and wrong injection too; false injection is over
    messages labelled with no skill; precision is right injections over all
    injections. With --leave-out, the false-injection rate when every message's
    right skills are missing from the index. Also route latency next to a
    bare query embedding.
    """
    from ..evaluation import BARE_EMBEDDING_EVERY, evaluation_report

    router, routed = _route_labelled(queries_file, index_dir, backend, model, leave_out)
    report = evaluation_report(routed)
    gate = router.gate
    if as_json:
        report.update(index_dir=str(router.index_dir), skills=len(router.manifest.skills),
                      floor=gate.floor, min_relative_gap=gate.min_relative_gap)
        click.echo(json.dumps(report, ensure_ascii=False))
        return
    overall = report["overall"]
    click.echo(f"{overall['messages']} messages ({overall['positives']} with a skill, {overall['negatives']} without) "
               f"against {len(router.manifest.skills)} skills in {router.index_dir}")
    click.echo(f"gate: similarity >= {gate.floor:.2f} and relative gap >= {gate.min_relative_gap:.2f}\n")
    _echo_metrics_table(report)
    latency = report["latency_ms"]
    click.echo(f"\nroute latency: median {latency['route_median']:.1f} ms, p95 {latency['route_p95']:.1f} ms; "
               f"bare query embedding (every {BARE_EMBEDDING_EVERY}th message): "
               f"median {latency['embed_median']:.1f} ms "
               f"(route / embedding = {latency['route_over_embed']:.2f}x)")


def _echo_metrics_table(report: dict) -> None:
    """One row of metrics overall and per source; with leave-out copies, their false-injection rate too."""
    columns = ("top1", "recall_at_5", "mrr", "correct_injection", "wrong_injection", "false_injection")
    left_out = report.get("leave_out")
    extra = f"{'leave-out':>10}" if left_out else ""
    click.echo(f"{'':32}{'top-1':>9}{'recall@5':>9}{'MRR':>9}{'correct':>9}{'wrong':>9}{'false':>9}{'precision':>10}"
               f"{extra}{'messages':>9}")
    rows = [("all", report["overall"])]
    if len(report["by_source"]) > 1:
        rows += list(report["by_source"].items())
    for label, metrics in rows:
        cells = "".join(_fmt(metrics[c]) for c in columns) + _fmt(metrics["precision"], 10)
        if left_out:
            source = left_out["overall"] if label == "all" else left_out["by_source"].get(label, {})
            cells += _fmt(source.get("false_injection"), 10)
        click.echo(f"{label[:31]:32}{cells}{metrics['messages']:>9}")
    if left_out:
        click.echo(f"\nleave-out: {left_out['overall']['messages']} messages routed without their right skills, "
                   f"{left_out['overall']['injections']} injected anyway")


@main.command()
@queries_file_option
@index_options
@click.option("--min-precision", default=0.65, show_default=True, type=click.FloatRange(0.0, 1.0),
              help="Precision the chosen gate must reach, counting its injections into leave-out copies "
                   "(each message with a skill routed again without its right skills) as wrong.")
@click.option("--write", is_flag=True, help="Save the chosen gate in the index manifest (router section).")
@json_option
def calibrate(queries_file, index_dir, backend, model, min_precision, write, as_json):
    """Fit the decision gate to labelled messages and show the precision / correct-injection trade-off.

    Picks the similarity floor (never below 0.30) and relative-gap threshold
    with the most correct injections at --min-precision, where precision also
    counts injections into leave-out copies of the messages (routed without
    their right skills: they should get nothing). Nothing is saved without
    --write; the defaults need no calibration with the bundled model.
    """
    from ..calibration import calibrate as fit_gate
    from ..calibration import save_gate

    router, routed = _route_labelled(queries_file, index_dir, backend, model, leave_out=True)
    fitted = fit_gate(routed, min_precision)
    saved = save_gate(router.index_dir, fitted, str(queries_file), len(routed)) if write else None
    chosen = fitted.chosen
    if as_json:
        click.echo(json.dumps({
            "floor": chosen.gate.floor, "min_relative_gap": chosen.gate.min_relative_gap,
            "precision": chosen.precision, "leave_out_false_injection": chosen.leave_out_false_injection,
            "objective_precision": chosen.objective_precision, "correct_injection": chosen.correct_injection,
            "meets_target": fitted.meets_target, "written": saved is not None,
            "table": [{"floor": p.gate.floor, "min_relative_gap": p.gate.min_relative_gap,
                       "correct_injection": p.correct_injection, "wrong_injection": p.wrong_injection,
                       "false_injection": p.false_injection, "precision": p.precision,
                       "leave_out_false_injection": p.leave_out_false_injection,
                       "objective_precision": p.objective_precision}
                      for p in fitted.points],
        }, ensure_ascii=False))
        return
    _echo_trade_off(fitted)
    verdict = ("" if fitted.meets_target
               else f" (no setting reaches precision {min_precision:.2f}; this is the most precise)")
    click.echo(f"chosen: similarity >= {chosen.gate.floor:.2f} "
               f"and relative gap >= {chosen.gate.min_relative_gap:.2f}: "
               f"objective precision {_fmt(chosen.objective_precision, 0)}, precision {_fmt(chosen.precision, 0)}, "
               f"leave-out false injection {_fmt(chosen.leave_out_false_injection, 0)}, "
               f"correct injection {_fmt(chosen.correct_injection, 0)}{verdict}")
    click.echo(f"saved to {router.index_dir / 'manifest.json'}" if saved is not None
               else "not saved (use --write to save it)")


def _echo_trade_off(fitted) -> None:
    """The fitted gate's neighbourhood: every fifth gap at its floor, every other floor at its gap."""
    chosen = fitted.chosen
    header = f"{'correct':>9}{'wrong':>9}{'false':>9}{'precision':>10}{'leave-out':>10}{'objective':>10}"

    def row(label: float, p) -> str:
        return (f"{label:>8.2f}{_fmt(p.correct_injection)}{_fmt(p.wrong_injection)}{_fmt(p.false_injection)}"
                f"{_fmt(p.precision, 10)}{_fmt(p.leave_out_false_injection, 10)}{_fmt(p.objective_precision, 10)}")

    click.echo(f"At floor {chosen.gate.floor:.2f}, by relative-gap threshold:")
    click.echo(f"{'gap >=':>8}{header}")
    for p in fitted.floor_table()[::5]:
        click.echo(row(p.gate.min_relative_gap, p))
    click.echo(f"\nAt relative gap {chosen.gate.min_relative_gap:.2f}, by similarity floor:")
    click.echo(f"{'floor':>8}{header}")
    for p in fitted.gap_table()[::2]:
        click.echo(row(p.gate.floor, p))
    click.echo("\n'leave-out': false injections when each message's right skills are excluded; 'objective': "
               "precision counting those too, which --min-precision applies to")
