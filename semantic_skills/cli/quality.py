"""``eval`` and ``calibrate``: routing quality on labelled messages, and the gate fitted to them."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..gates import DEFAULT_MIN_FULL_PRECISION, DEFAULT_MIN_PRECISION
from . import defaults
from .app import index_options, json_option, main
from .output import echo, echo_json
from .progress import TerminalBar

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
    candidates). 'full prec' is right full injections over all full
    injections; 'full' and 'named' are over messages with a skill: the right
    skill injected whole, or injected whole or named by a hint. 'false full'
    and 'false any' are over messages labelled with no skill. 'chars' is the
    mean number of characters injected per message (a full block with the
    default caps; a hint counted at its 300-character limit). With
    --leave-out, the same false rates when every message's right skills are
    missing from the index. Also route latency next to a bare query embedding.
    """
    from ..evaluation import BARE_EMBEDDING_EVERY, evaluation_report, full_block_chars

    router, routed = _route_labelled(queries_file, index_dir, backend, model, leave_out)
    report = evaluation_report(routed, full_block_chars(router.manifest.skills))
    gate = router.gate
    if as_json:
        report.update(index_dir=str(router.index_dir), skills=len(router.manifest.skills), **gate.as_router_settings())
        echo_json(report)
        return
    overall = report["overall"]
    echo(f"{overall['messages']} messages ({overall['positives']} with a skill, {overall['negatives']} without) "
         f"against {len(router.manifest.skills)} skills in {router.index_dir}")
    echo(f"{_gate_words(gate)}\n")
    _echo_metrics_table(report)
    latency = report["latency_ms"]
    echo(f"\nroute latency: median {latency['route_median']:.1f} ms, p95 {latency['route_p95']:.1f} ms; "
         f"bare query embedding (every {BARE_EMBEDDING_EVERY}th message): "
         f"median {latency['embed_median']:.1f} ms "
         f"(route / embedding = {latency['route_over_embed']:.2f}x)")


def _gate_words(gate) -> str:
    return (f"gate: nothing below similarity {gate.floor:.2f}; full when relative gap >= {gate.full_relative_gap:.2f} "
            f"and relative margin >= {gate.full_relative_margin:.2f}; else a hint when relative gap >= "
            f"{gate.min_relative_gap:.2f}")


METRIC_COLUMNS = (("top1", "top-1"), ("recall_at_5", "recall@5"), ("mrr", "MRR"), ("full_precision", "full prec"),
                  ("full_correct", "full"), ("named_correct", "named"), ("false_full", "false full"),
                  ("false_any", "false any"))


def _echo_metrics_table(report: dict) -> None:
    """One row of metrics overall and per source; with leave-out copies, their false-injection rates too."""
    left_out = report.get("leave_out")
    extra = f"{'lo full':>10}{'lo any':>10}" if left_out else ""
    echo(f"{'':24}" + "".join(f"{title:>11}" for _, title in METRIC_COLUMNS) + extra
         + f"{'chars':>8}{'messages':>9}")
    rows = [("all", report["overall"])]
    if len(report["by_source"]) > 1:
        rows += list(report["by_source"].items())
    for label, metrics in rows:
        cells = "".join(_fmt(metrics[key], 11) for key, _ in METRIC_COLUMNS)
        if left_out:
            source = left_out["overall"] if label == "all" else left_out["by_source"].get(label, {})
            cells += _fmt(source.get("false_full"), 10) + _fmt(source.get("false_any"), 10)
        chars = metrics.get("injected_chars")
        cells += f"{chars:>8.0f}" if chars is not None else f"{'-':>8}"
        echo(f"{label[:23]:24}{cells}{metrics['messages']:>9}")
    if left_out:
        overall = left_out["overall"]
        echo(f"\nleave-out: {overall['messages']} messages routed without their right skills, "
             f"{overall['full_injections']} got a skill whole anyway and {overall['injections']} anything")


@main.command()
@queries_file_option
@index_options
@click.option("--min-precision", default=DEFAULT_MIN_PRECISION, show_default=True, type=click.FloatRange(0.0, 1.0),
              help="Precision of any injection (whole or hint) the chosen gate must reach, counting its injections "
                   "into leave-out copies (each message with a skill routed again without its right skills) as "
                   "wrong.")
@click.option("--min-full-precision", default=DEFAULT_MIN_FULL_PRECISION, show_default=True,
              type=click.FloatRange(0.0, 1.0),
              help="Precision the chosen gate's full injections (the whole skill) must reach on the labelled messages.")
@click.option("--write", is_flag=True, help="Save the chosen gate in the index manifest (router section).")
@json_option
def calibrate(queries_file, index_dir, backend, model, min_precision, min_full_precision, write, as_json):
    """Fit the three-way gate to labelled messages and show the trade-offs.

    First the full gate (relative gap and relative margin) with the most
    right full injections at --min-full-precision; then, with it, the
    similarity floor (never below 0.30) and the hint's relative gap that name
    the right skill most often at --min-precision, where precision also counts
    injections into leave-out copies of the messages (routed without their
    right skills: they should get nothing). Nothing is saved without --write;
    the defaults need no calibration with the bundled model.
    """
    from ..calibration import calibrate as fit_gate
    from ..calibration import save_gate

    router, routed = _route_labelled(queries_file, index_dir, backend, model, leave_out=True)
    fitted = fit_gate(routed, min_precision, min_full_precision)
    saved = save_gate(router.index_dir, fitted, str(queries_file), len(routed)) if write else None
    chosen = fitted.chosen
    if as_json:
        echo_json({
            **_point_dict(chosen), "meets_target": fitted.meets_target, "written": saved is not None,
            "full_table": [_full_point_dict(p) for p in fitted.full_points],
            "table": [_point_dict(p) for p in fitted.points],
        })
        return
    _echo_trade_off(fitted)
    verdict = ("" if fitted.meets_target
               else f" (no setting reaches precision {min_precision:.2f} and full precision "
                    f"{min_full_precision:.2f}; the most precise one is shown)")
    echo(f"chosen: {_gate_words(chosen.gate)}: full precision {_fmt(chosen.full_precision, 0)}, "
         f"full {_fmt(chosen.full_correct, 0)}, named {_fmt(chosen.named_correct, 0)}, objective precision "
         f"{_fmt(chosen.objective_precision, 0)}, leave-out full {_fmt(chosen.leave_out_full, 0)} "
         f"and any {_fmt(chosen.leave_out_any, 0)}{verdict}")
    echo(f"saved to {router.index_dir / 'manifest.json'}" if saved is not None
         else "not saved (use --write to save it)")


def _point_dict(point) -> dict:
    return {**point.gate.as_router_settings(), "full_precision": point.full_precision,
            "full_correct": point.full_correct, "named_correct": point.named_correct, "false_full": point.false_full,
            "false_any": point.false_any, "leave_out_full": point.leave_out_full,
            "leave_out_any": point.leave_out_any, "objective_precision": point.objective_precision}


def _full_point_dict(point) -> dict:
    return {"full_relative_gap": point.gate.full_relative_gap, "full_relative_margin": point.gate.full_relative_margin,
            "full_precision": point.full_precision, "full_correct": point.full_correct, "false_full": point.false_full,
            "leave_out_full": point.leave_out_full}


def _echo_trade_off(fitted) -> None:
    """The fitted gate's neighbourhood: the full gate by relative gap, then the hint gate by gap and by floor."""
    chosen = fitted.chosen
    echo(f"Full injections alone (floor 0.30, relative margin >= {chosen.gate.full_relative_margin:.2f}), "
         "by relative gap:")
    echo(f"{'gap >=':>8}{'full prec':>10}{'full':>9}{'false full':>11}{'lo full':>9}")
    for p in fitted.full_table()[::10]:
        echo(f"{p.gate.full_relative_gap:>8.2f}{_fmt(p.full_precision, 10)}{_fmt(p.full_correct)}"
             f"{_fmt(p.false_full, 11)}{_fmt(p.leave_out_full)}")
    header = (f"{'full prec':>10}{'full':>9}{'named':>9}{'false any':>10}{'lo full':>9}{'lo any':>9}"
              f"{'objective':>10}")

    def row(label: float, p) -> str:
        return (f"{label:>8.2f}{_fmt(p.full_precision, 10)}{_fmt(p.full_correct)}{_fmt(p.named_correct)}"
                f"{_fmt(p.false_any, 10)}{_fmt(p.leave_out_full)}{_fmt(p.leave_out_any)}"
                f"{_fmt(p.objective_precision, 10)}")

    echo(f"\nWith the chosen full gate, at floor {chosen.gate.floor:.2f}, by the hint's relative gap:")
    echo(f"{'gap >=':>8}{header}")
    for p in fitted.floor_table()[::10]:
        echo(row(p.gate.min_relative_gap, p))
    echo(f"\nAt hint relative gap {chosen.gate.min_relative_gap:.2f}, by similarity floor:")
    echo(f"{'floor':>8}{header}")
    for p in fitted.gap_table()[::2]:
        echo(row(p.gate.floor, p))
    echo("\n'full': right skill injected whole; 'named': whole or in a hint; 'lo': leave-out copies (each "
         "message without its right skills); 'objective': precision of any injection counting those, which "
         "--min-precision applies to\n")
