"""The ``semantic-skills`` command line."""

from __future__ import annotations

import errno
import json
import os
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import click

from . import __version__
from .errors import NoSkillsFound, SemanticSkillsError
from .settings import (
    EMBEDDER_BACKENDS,
    EmbedderSettings,
    Settings,
    SkillsRoot,
    default_index_dir,
    disabled_skill_names,
    hermes_skills_roots,
    load_settings,
)

EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples"


class _Command(click.Command):
    """Turns every error into one line on stderr and a non-zero exit."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except SemanticSkillsError as exc:
            _fail(str(exc))
        except OSError as exc:
            where = f" ({exc.filename})" if exc.filename else ""
            hint = ""
            if exc.errno == errno.ENOSPC:
                hint = "; free some space and run it again (the previous index is unchanged)"
            _fail(f"{exc.strerror or exc}{where}{hint}")
        except (click.ClickException, click.exceptions.Exit, click.Abort, SystemExit):
            raise
        except KeyboardInterrupt:
            _fail("interrupted", code=130)
        except Exception as exc:  # noqa: BLE001 - the CLI promises one line, never a traceback
            if os.environ.get("SEMANTIC_SKILLS_DEBUG"):
                raise
            _fail(f"unexpected {type(exc).__name__}: {exc} (set SEMANTIC_SKILLS_DEBUG=1 for a traceback)")


class _Group(click.Group):
    command_class = _Command


def _fail(message: str, code: int = 1):
    click.echo(f"semantic-skills: error: {message}", err=True)
    sys.exit(code)


def _settings() -> Settings:
    return load_settings()


def _embedder_settings(settings: Settings, backend: str | None, model: str | None) -> EmbedderSettings:
    chosen = settings.embedder
    if backend and backend != chosen.backend:
        chosen = EmbedderSettings(backend=backend)
    if model:
        chosen = replace(chosen, model=model)
    return chosen


def _index_dir(settings: Settings, index_dir: Path | None) -> Path:
    return Path(index_dir) if index_dir else default_index_dir(settings)


def _open_router(index_dir: Path | None, backend: str | None, model: str | None):
    from .router import SkillRouter

    settings = _settings()
    flags_given = bool(backend or model)
    configured = settings.embedder != EmbedderSettings()
    embedder = _embedder_settings(settings, backend, model) if (flags_given or configured) else None
    router = SkillRouter.open(_index_dir(settings, index_dir), embedder=embedder, threshold=settings.threshold)
    router.warm()  # a model whose vectors differ in dimension from the index is refused here, in one line
    return router


index_dir_option = click.option(
    "--index-dir", type=click.Path(file_okay=False, path_type=Path),
    help="Index folder (default: $SEMANTIC_SKILLS_INDEX_DIR, the index_dir setting, or the plugin's skills_index/).",
)
embedder_option = click.option(
    "--embedder", "backend", type=click.Choice(EMBEDDER_BACKENDS),
    help="Embedder backend (default: the embedder setting, else sentence-transformers).",
)
model_option = click.option(
    "--model", help="Model for the embedder: a local path or name, or a litellm model such as openai/text-embedding-3-small.",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")


@click.group(cls=_Group)
@click.version_option(__version__, prog_name="semantic-skills")
def main():
    """Build and query a semantic index of SKILL.md files."""


# --------------------------------------------------------------------------- build


class _Bar:
    """A click progress bar on a terminal; silent elsewhere."""

    def __init__(self, total: int, label: str = "Embedding"):
        self._bar = click.progressbar(length=total, label=label, file=sys.stderr)
        self._bar.__enter__()

    def advance(self, count: int) -> None:
        self._bar.update(count)

    def close(self) -> None:
        self._bar.__exit__(None, None, None)


def _print_build_report(report, as_json: bool) -> None:
    counts = report.counts()
    if not as_json:
        action = "Indexed" if report.wrote else "Index already up to date:"
        click.echo(f"{action} {report.skills} skills in {report.index_dir} ({report.embedder}) in {report.seconds:.1f} s")
        click.echo("  " + ", ".join(f"{k} {v}" for k, v in counts.items()))
        for skipped in report.skipped:
            click.echo(f"  skipped {skipped.path}: {skipped.reason}")
        for dup in report.duplicates:
            click.echo(f"  duplicate name {dup.name!r}: kept {dup.kept}, ignored {dup.dropped}")
        for path, warning in report.warnings:
            click.echo(f"  warning {path}: {warning}")
        return
    payload = dict(counts)
    payload.update(
        index_dir=str(report.index_dir),
        embedder=report.embedder,
        wrote=report.wrote,
        seconds=round(report.seconds, 3),
        added_skills=report.added,
        updated_skills=report.updated,
        removed_skills=report.removed,
        skipped_files=[{"path": s.path, "reason": s.reason} for s in report.skipped],
        duplicates=[{"name": d.name, "kept": d.kept, "dropped": d.dropped} for d in report.duplicates],
        warnings=[{"path": p, "warning": w} for p, w in report.warnings],
    )
    click.echo(json.dumps(payload, ensure_ascii=False))


@main.command()
@click.option("--skills-dir", "skills_dirs", multiple=True, type=click.Path(exists=True, file_okay=False),
              help="Index the SKILL.md files under DIR instead of the Hermes skills folders. Repeatable; earlier folders win name clashes.")
@index_dir_option
@embedder_option
@model_option
@click.option("--full", is_flag=True, help="Re-embed every skill, not only changed ones.")
@json_option
def build(skills_dirs, index_dir, backend, model, full, as_json):
    """Index SKILL.md files (default: $HERMES_HOME/skills and skills.external_dirs).

    Only changed skills are re-embedded; when nothing changed no model is loaded.
    With --json the last line is a JSON object with the counts.
    """
    from .builder import build_index

    settings = _settings()
    roots = [SkillsRoot(Path(d).resolve()) for d in skills_dirs] if skills_dirs else hermes_skills_roots()
    progress = _Bar if (sys.stderr.isatty() and not as_json) else None
    try:
        report = build_index(roots, _index_dir(settings, index_dir), _embedder_settings(settings, backend, model),
                             full=full, progress=progress)
    except NoSkillsFound as exc:
        raise NoSkillsFound(f"{exc}; pass --skills-dir DIR or add folders to skills.external_dirs in "
                            "$HERMES_HOME/config.yaml") from None
    _print_build_report(report, as_json)


# --------------------------------------------------------------------------- search / route


@main.command()
@click.argument("query")
@click.option("-k", "k", default=5, show_default=True, type=click.IntRange(1, 100), help="How many skills to list.")
@click.option("--platform", help="Also leave out the skills skills.platform_disabled turns off on this chat platform.")
@index_dir_option
@embedder_option
@model_option
@json_option
def search(query, k, platform, index_dir, backend, model, as_json):
    """List the skills that best match QUERY, best first (skills.disabled left out)."""
    router = _open_router(index_dir, backend, model)
    results = router.search(query, k=k, exclude=disabled_skill_names(platform))
    if as_json:
        click.echo(json.dumps([c.as_dict() for c in results], ensure_ascii=False))
        return
    for rank, c in enumerate(results, 1):
        click.echo(f"{rank:>2}. {c.score:.3f}  {c.name}  {c.description[:100]}")


def _decision_line(query, decision) -> str:
    payload = {"query": query}
    payload.update(decision.as_dict())
    return json.dumps(payload, ensure_ascii=False)


@main.command()
@click.argument("message", required=False)
@click.option("--queries", type=click.File("r", encoding="utf-8"),
              help='A JSONL file with one {"query": ...} per line; prints one JSON decision per line, in order.')
@click.option("--platform", help="Route as the hook would for this chat platform (its skills.platform_disabled).")
@index_dir_option
@embedder_option
@model_option
@json_option
def route(message, queries, platform, index_dir, backend, model, as_json):
    """Decide which skill, if any, would be injected for MESSAGE (skills.disabled left out)."""
    if (message is None) == (queries is None):
        raise click.UsageError("give either MESSAGE or --queries FILE")
    router = _open_router(index_dir, backend, model)
    exclude = disabled_skill_names(platform)
    if queries is None:
        decision = router.route(message, exclude=exclude)
        if as_json:
            click.echo(_decision_line(message, decision))
        elif decision.skill:
            click.echo(f"inject {decision.skill.name} (score {decision.score:.3f}): {decision.reason}")
        else:
            click.echo(f"inject nothing: {decision.reason}")
        return
    for number, line in enumerate(queries, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            query = record["query"] if isinstance(record, dict) else None
            if not isinstance(query, str):
                raise ValueError('no string "query" field')
        except (ValueError, KeyError) as exc:
            click.echo(json.dumps({"query": None, "skill": None, "score": 0.0, "reason": f"line {number}: invalid input ({exc})",
                                   "candidates": []}))
            continue
        click.echo(_decision_line(query, router.route(query, exclude=exclude)))


# --------------------------------------------------------------------------- eval / calibrate


queries_file_option = click.option(
    "--queries", "queries_file", required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help='Labelled JSONL: {"query": ..., "gold": [skill names] or [] for none, "acceptable": [...], "source": ...} per line.',
)


def _route_labelled(queries_file: Path, index_dir, backend, model):
    from .evaluation import read_labelled, route_all

    labelled = read_labelled(queries_file)
    router = _open_router(index_dir, backend, model)
    router.embed_query("warm-up")  # the first embedding is slow; keep it out of the latency figures
    bar = _Bar(len(labelled), label="Routing") if sys.stderr.isatty() else None
    try:
        return router, route_all(router, labelled, progress=bar.advance if bar else None)
    finally:
        if bar:
            bar.close()


def _fmt(value, width: int = 9) -> str:
    return f"{value:>{width}.3f}" if value is not None else f"{'-':>{width}}"


@main.command("eval")
@queries_file_option
@index_dir_option
@embedder_option
@model_option
@json_option
def evaluate(queries_file, index_dir, backend, model, as_json):
    """Measure routing quality on labelled messages.

    Top-1, recall@5 and MRR are over messages with a skill (from the
    candidates); correct and wrong injection too; false injection is over
    messages labelled with no skill; precision is right injections over all
    injections. Also route latency next to a bare query embedding.
    """
    from .evaluation import BARE_EMBEDDING_EVERY, evaluation_report

    router, routed = _route_labelled(queries_file, index_dir, backend, model)
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
    columns = ("top1", "recall_at_5", "mrr", "correct_injection", "wrong_injection", "false_injection", "precision")
    click.echo(f"{'':32}{'top-1':>9}{'recall@5':>9}{'MRR':>9}{'correct':>9}{'wrong':>9}{'false':>9}{'precision':>10}{'messages':>9}")
    rows = [("all", overall)] + list(report["by_source"].items()) if len(report["by_source"]) > 1 else [("all", overall)]
    for label, metrics in rows:
        cells = "".join(_fmt(metrics[c]) for c in columns[:-1]) + _fmt(metrics["precision"], 10)
        click.echo(f"{label[:31]:32}{cells}{metrics['messages']:>9}")
    latency = report["latency_ms"]
    click.echo(f"\nroute latency: median {latency['route_median']:.1f} ms, p95 {latency['route_p95']:.1f} ms; "
               f"bare query embedding (every {BARE_EMBEDDING_EVERY}th message): median {latency['embed_median']:.1f} ms "
               f"(route / embedding = {latency['route_over_embed']:.2f}x)")


@main.command()
@queries_file_option
@index_dir_option
@embedder_option
@model_option
@click.option("--min-precision", default=0.80, show_default=True, type=click.FloatRange(0.0, 1.0),
              help="Precision of injections the chosen gate must reach.")
@click.option("--write", is_flag=True, help="Save the chosen gate in the index manifest (router section).")
@json_option
def calibrate(queries_file, index_dir, backend, model, min_precision, write, as_json):
    """Fit the decision gate to labelled messages and show the precision / correct-injection trade-off.

    Picks the similarity floor (never below 0.30) and relative-gap threshold
    with the most correct injections at --min-precision. Nothing is saved
    without --write; the defaults need no calibration with the bundled model.
    """
    from .evaluation import calibrate as fit_gate
    from .evaluation import save_gate

    router, routed = _route_labelled(queries_file, index_dir, backend, model)
    fitted = fit_gate(routed, min_precision)
    saved = save_gate(router.index_dir, fitted, str(queries_file), len(routed)) if write else None
    chosen = fitted.chosen
    if as_json:
        click.echo(json.dumps({
            "floor": chosen.gate.floor, "min_relative_gap": chosen.gate.min_relative_gap,
            "precision": chosen.precision, "correct_injection": chosen.correct_injection,
            "meets_target": fitted.meets_target, "written": saved is not None,
            "table": [{"floor": p.gate.floor, "min_relative_gap": p.gate.min_relative_gap,
                       "correct_injection": p.correct_injection, "wrong_injection": p.wrong_injection,
                       "false_injection": p.false_injection, "precision": p.precision}
                      for p in fitted.points],
        }, ensure_ascii=False))
        return
    header = f"{'correct':>9}{'wrong':>9}{'false':>9}{'precision':>10}"
    click.echo(f"At floor {chosen.gate.floor:.2f}, by relative-gap threshold:")
    click.echo(f"{'gap >=':>8}{header}")
    for p in fitted.floor_table()[::5]:
        click.echo(f"{p.gate.min_relative_gap:>8.2f}{_fmt(p.correct_injection)}{_fmt(p.wrong_injection)}"
                   f"{_fmt(p.false_injection)}{_fmt(p.precision, 10)}")
    click.echo(f"\nAt relative gap {chosen.gate.min_relative_gap:.2f}, by similarity floor:")
    click.echo(f"{'floor':>8}{header}")
    for p in fitted.gap_table()[::2]:
        click.echo(f"{p.gate.floor:>8.2f}{_fmt(p.correct_injection)}{_fmt(p.wrong_injection)}"
                   f"{_fmt(p.false_injection)}{_fmt(p.precision, 10)}")
    verdict = "" if fitted.meets_target else f" (no setting reaches precision {min_precision:.2f}; this is the most precise)"
    click.echo(f"\nchosen: similarity >= {chosen.gate.floor:.2f} and relative gap >= {chosen.gate.min_relative_gap:.2f}: "
               f"precision {_fmt(chosen.precision, 0)}, correct injection {_fmt(chosen.correct_injection, 0)}{verdict}")
    click.echo(f"saved to {router.index_dir / 'manifest.json'}" if saved is not None else "not saved (use --write to save it)")


# --------------------------------------------------------------------------- status


@main.command()
@index_dir_option
@json_option
def status(index_dir, as_json):
    """Show the index: where it is, which embedder built it, and what changed on disk since."""
    from .index.diff import diff_with_disk
    from .index.store import load_index

    settings = _settings()
    folder = _index_dir(settings, index_dir)
    manifest, _vectors = load_index(folder)  # the vectors too: a corrupt index is reported, not shown as fine
    diff = diff_with_disk(manifest)
    changed = sorted(record.name for record, _skill in diff.changed())
    new = sorted(skill.name for skill in diff.added())
    deleted = sorted(record.name for record in diff.removed())
    info = {
        "index_dir": str(folder),
        "embedder": manifest.embedder.as_dict(),
        "built_at": manifest.built_at,
        "skills": len(manifest.skills),
        "roots": manifest.roots,
        "changed": changed,
        "new": new,
        "deleted": deleted,
        "up_to_date": not (changed or new or deleted),
    }
    if as_json:
        click.echo(json.dumps(info, ensure_ascii=False))
        return
    click.echo(f"index:    {folder}")
    click.echo(f"embedder: {manifest.embedder.describe()}")
    click.echo(f"built:    {manifest.built_at}")
    click.echo(f"skills:   {len(manifest.skills)} from {', '.join(manifest.roots)}")
    if info["up_to_date"]:
        click.echo("up to date with the skills on disk")
    for label, names in (("changed", changed), ("new", new), ("deleted", deleted)):
        if names:
            click.echo(f"{label} since the build ({len(names)}): {', '.join(names)}")
    if not info["up_to_date"]:
        click.echo("run `semantic-skills build` to update the index")


# --------------------------------------------------------------------------- demo


@main.command()
@click.option("--show", "show_chars", default=300, show_default=True, type=click.IntRange(0, None),
              help="How many characters of each injected message to print.")
def demo(show_chars):
    """Build an index over examples/skills and route the sample messages (offline, no API key)."""
    from .builder import build_index
    from .embedders.sentence_transformers import SentenceTransformerEmbedder
    from .injection import inject
    from .router import SkillRouter

    skills_dir = EXAMPLES_DIR / "skills"
    messages_file = EXAMPLES_DIR / "messages.txt"
    if not skills_dir.is_dir() or not messages_file.is_file():
        raise click.ClickException(f"the examples are missing from {EXAMPLES_DIR}; run the demo from a source checkout")
    messages = [m.strip() for m in messages_file.read_text(encoding="utf-8").splitlines() if m.strip() and not m.startswith("#")]
    embedder = SentenceTransformerEmbedder()
    with tempfile.TemporaryDirectory(prefix="semantic-skills-demo-") as tmp:
        report = build_index([SkillsRoot(skills_dir)], Path(tmp), EmbedderSettings(), embedder=embedder)
        click.echo(f"Built an index of {report.skills} example skills with {report.embedder} in {report.seconds:.1f} s\n")
        router = SkillRouter.open(tmp, embedder=embedder)
        for message in messages:
            decision = router.route(message)
            click.echo(f"> {message}")
            if decision.skill is None:
                best = decision.candidates[0] if decision.candidates else None
                nearest = f"; nearest {best.name} at {best.score:.3f}" if best else ""
                click.echo(f"  inject nothing ({decision.reason}{nearest})\n")
                continue
            click.echo(f"  inject {decision.skill.name} (score {decision.score:.3f})")
            text = inject(message, decision.skill.name, decision.score, Path(decision.skill.path).read_text(encoding="utf-8"))
            if show_chars:
                preview = text if len(text) <= show_chars else text[:show_chars] + f"... [{len(text) - show_chars} more characters]"
                click.echo("  " + preview.replace("\n", "\n  ") + "\n")


if __name__ == "__main__":  # pragma: no cover
    main()
