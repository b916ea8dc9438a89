"""``build`` and ``status``: write the index, and compare it with the skills on disk."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import command
from . import defaults
from .app import index_dir_option, index_options, json_option, main
from .output import echo, echo_json
from .progress import build_progress


def _print_build_report(report, roots, as_json: bool) -> None:
    counts = report.counts()
    if not as_json:
        if report.skills:
            action = "Indexed" if report.wrote else "Index already up to date:"
            second = f"; multilingual set: {report.multilingual}" if report.multilingual else ""
            echo(f"{action} {report.skills} skills in {report.index_dir} ({report.embedder}{second}) "
                 f"in {report.seconds:.1f} s")
            echo("  " + ", ".join(f"{k} {v}" for k, v in counts.items()))
        else:
            echo(_empty_library_line(report, roots))
        for skipped in report.skipped:
            echo(f"  skipped {skipped.path}: {skipped.reason}")
        for dup in report.duplicates:
            echo(f"  duplicate name {dup.name!r}: kept {dup.kept}, ignored {dup.dropped}")
        for conflict in report.conflicts:
            echo(f"  {conflict_line(conflict)}")
        for path, warning in report.warnings:
            echo(f"  warning {path}: {warning}")
        return
    payload = dict(counts)
    payload.update(
        index_dir=str(report.index_dir),
        embedder=report.embedder,
        multilingual=report.multilingual or None,
        wrote=report.wrote,
        seconds=round(report.seconds, 3),
        added_skills=report.added,
        updated_skills=report.updated,
        removed_skills=report.removed,
        skipped_files=[{"path": s.path, "reason": s.reason} for s in report.skipped],
        duplicates=[{"name": d.name, "kept": d.kept, "dropped": d.dropped} for d in report.duplicates],
        conflicts=[{"left_out": list(c.left_out), "reason": c.reason} for c in report.conflicts],
        warnings=[{"path": p, "warning": w} for p, w in report.warnings],
    )
    echo_json(payload)


def _empty_library_line(report, roots) -> str:
    """What a build over roots without a skill did, in one line: an empty index is a state, not an error."""
    searched = ", ".join(str(root.path) for root in roots) or "no skills folder"
    emptied = (f"emptied the index in {report.index_dir} (removed {len(report.removed)} skills)" if report.removed
               else f"the index in {report.index_dir} holds none")
    return (f"No skill under {searched}: {emptied}; routing injects nothing until SKILL.md files are added there "
            f"and `{command('build')}` runs again")


@main.command()
@click.option("--skills-dir", "skills_dirs", multiple=True, type=click.Path(exists=True, file_okay=False),
              help="Index the SKILL.md files under DIR instead of the Hermes skills folders. "
                   "Repeatable; earlier folders win name clashes.")
@index_options
@click.option("--full", is_flag=True, help="Re-embed every skill, not only changed ones.")
@json_option
def build(skills_dirs, index_dir, backend, model, full, as_json):
    """Index SKILL.md files (default: the Hermes home's skills folder and skills.external_dirs).

    Only changed skills are re-embedded; when nothing changed no model is loaded.
    With --json the last line is a JSON object with the counts.
    """
    from ..builder import build_index
    from ..skills.discovery import SkillsRoot

    roots = [SkillsRoot(Path(d).resolve()) for d in skills_dirs] if skills_dirs else defaults.skills_roots()
    report = build_index(roots, defaults.index_dir(index_dir), defaults.embedder_settings(backend, model),
                         full=full, progress=build_progress(as_json))
    _print_build_report(report, roots, as_json)


@main.command()
@index_dir_option
@json_option
def status(index_dir, as_json):
    """Show the index: where it is, which embedder built it, and what changed on disk since."""
    from ..index.diff import diff_with_disk
    from ..index.store import load_vector_sets

    folder = defaults.index_dir(index_dir)
    manifest, _vectors, _second = load_vector_sets(folder)  # the vectors too: a corrupt index is reported
    diff = diff_with_disk(manifest)
    changed = sorted(record.name for record, _skill in diff.changed())
    new = sorted(skill.name for skill in diff.added())
    conflicting = {path for conflict in diff.conflicts for path in conflict.left_out}
    deleted = sorted(record.name for record in diff.removed() if record.path not in conflicting)
    left_out = sorted(record.name for record in diff.removed() if record.path in conflicting)
    info = {
        "index_dir": str(folder),
        "embedder": manifest.embedder.as_dict(),
        "multilingual": manifest.second.embedder.as_dict() if manifest.second else None,
        "built_at": manifest.built_at,
        "skills": len(manifest.skills),
        "roots": manifest.roots,
        "changed": changed,
        "new": new,
        "deleted": deleted,
        "left_out": left_out,
        "up_to_date": not (changed or new or deleted or left_out),
        "conflicts": [{"left_out": list(c.left_out), "reason": c.reason} for c in diff.conflicts],
    }
    if as_json:
        echo_json(info)
        return
    echo(f"index:    {folder}")
    echo(f"embedder: {manifest.embedder.describe()}")
    if manifest.second:
        echo(f"          and {manifest.second.embedder.describe()} for messages not in English (embedder.multilingual)")
    echo(f"built:    {manifest.built_at}")
    echo(f"skills:   {len(manifest.skills)} from {', '.join(manifest.roots)}")
    if info["up_to_date"]:
        echo("up to date with the skills on disk")
    if not manifest.skills:
        echo(f"the index holds no skills: routing injects nothing until SKILL.md files are added under "
             f"{', '.join(manifest.roots) or 'a skills folder'} and `{command('build')}` runs")
    for label, names in (("changed", changed), ("new", new), ("deleted", deleted),
                         ("left out for their names", left_out)):
        if names:
            echo(f"{label} since the build ({len(names)}): {', '.join(names)}")
    if not info["up_to_date"]:
        echo(f"run `{command('build')}` to update the index")
    for conflict in diff.conflicts:
        echo(conflict_line(conflict))


def conflict_line(conflict) -> str:
    """A name conflict in one line: the skills it leaves out of routing, and why with the fix."""
    return f"not routed, for its name: {', '.join(conflict.left_out)} ({conflict.reason})"
