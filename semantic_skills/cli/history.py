"""``history``: what the plugin decided for the messages it routed in this Hermes home."""

from __future__ import annotations

import time

import click

from ..errors import command
from . import defaults
from .app import json_option, main
from .output import echo, echo_json

SETTINGS_PLACE = "plugins.entries.semantic-skills.settings"


@main.command()
@click.option("--since", metavar="WHEN",
              help="Only decisions from this far back (30m, 12h, 7d, 2w) or since this date or time "
                   "(2026-11-20, 2026-11-20T08:00; UTC unless it names its zone).")
@json_option
def history(since, as_json):
    """Summarise the plugin's decision record for this Hermes home.

    How often a message got its skill in full, a hint or nothing; the most
    injected skills; near misses (nothing injected but just under a hint's
    thresholds, or a hint just under the whole skill's); the slowest routes;
    and whether `calibrate` on your own labelled messages would help, with
    how to run it; first, any skill the index leaves out because its name
    reads as another skill's, with the fix. The record is
    decisions.jsonl in the Hermes home's semantic-skills folder (see docs/configuration.md:
    record_decisions, record_message_text, record_max_bytes). Run it as
    `hermes semantic-skills history` for the Hermes home (profile) Hermes uses.
    """
    from ..decision_log import read_record
    from ..history import parse_since, summarise

    settings = defaults.settings()
    path = defaults.decision_record()
    try:
        cutoff = parse_since(since, time.time()) if since else None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--since") from None
    contents = read_record(path, settings.record_max_bytes, cutoff)
    embedder = settings.embedder
    summary = summarise(contents.entries, default_embedder=embedder.backend != "litellm" and not embedder.model)
    summary.update(record=str(path), recording=settings.record_decisions, since=since,
                   config=str(defaults.config_file()),
                   files=[str(f) for f in contents.files], damaged_lines=contents.damaged_lines,
                   cut_files=[str(f) for f in contents.cut_files], unreadable=contents.unreadable,
                   not_routed=_not_routed())
    if as_json:
        echo_json(summary)
        return
    _echo_not_routed(summary["not_routed"])
    _echo_record_state(summary)
    if summary["decisions"]:
        _echo_counts(summary)
        _echo_skills(summary)
        _echo_slowest(summary)
        _echo_calibrate(summary)


def _not_routed() -> list[dict]:
    """The skills the home's index leaves out because each one's name reads as a routed skill's (see
    skills/look_alikes.py); none without a readable index."""
    from ..errors import SemanticSkillsError
    from ..index.manifest import read_manifest

    try:
        left_out = read_manifest(defaults.index_dir(None)).left_out_look_alikes()
    except SemanticSkillsError:
        return []
    return [{"name": skill.name, "path": skill.path, "reads_as": kept.name, "kept_by": kept.path}
            for skill, kept in left_out]


def _echo_not_routed(not_routed: list[dict]) -> None:
    for skill in not_routed:
        echo(f'Not routed, for its name: {skill["path"]} ("{skill["name"]}" reads as "{skill["reads_as"]}" '
             f'({skill["kept_by"]}), which keeps that name): rename it so that its name reads differently, then run '
             f"`{command('build')}`")


def _echo_record_state(summary: dict) -> None:
    """Where the record is, whether it is on, what had to be skipped, and the time span (or why it is empty)."""
    path = summary["record"]
    if not summary["recording"]:
        echo(f"The decision record is off (record_decisions: false under {SETTINGS_PLACE} in {summary['config']}).")
    for problem in summary["unreadable"]:
        echo(f"cannot read {problem}")
    if summary["damaged_lines"]:
        echo(f"skipped {summary['damaged_lines']} damaged line(s) in {path}")
    for cut in summary["cut_files"]:
        echo(f"{cut} is larger than record_max_bytes: read its last part only")
    if not summary["files"]:
        echo(f"No decisions recorded yet: {path} does not exist. Hermes records each message it routes "
             "there once the plugin is running.")
    elif not summary["decisions"]:
        since = f" since {summary['since']}" if summary["since"] else ""
        echo(f"No decisions recorded{since} in {path}.")
    else:
        paths = ", ".join(f"{name} {count}" for name, count in summary["paths"].items())
        echo(f"{summary['decisions']} routed messages from {_minute(summary['first'])} to "
             f"{_minute(summary['last'])} UTC ({paths}), recorded in {path}")


def _echo_counts(summary: dict) -> None:
    modes, outcomes = summary["modes"], summary["outcomes"]
    answered = sum(modes.values())
    echo("\nDecisions:")
    for mode, label in (("full", "the whole skill"), ("hint", "a hint"), ("nothing", "nothing")):
        share = f"{modes[mode] / answered:6.1%}" if answered else "     -"
        echo(f"  {mode:<8}{modes[mode]:>7} {share}  {label}")
    echo(f"  injected {outcomes['injected']}, skipped as already in front of the model "
         f"{outcomes['already_live']}")
    if outcomes["unanswered"]:
        echo(f"  {outcomes['unanswered']} message(s) got no decision (the routing worker was not ready, "
             "failed or answered too late)")


def _echo_skills(summary: dict) -> None:
    if summary["most_injected"]:
        echo("\nMost injected skills:")
        for row in summary["most_injected"]:
            echo(f"  {row['injected']:>6}  {row['skill']} (full {row['full']}, hint {row['hint']})")
    short_of_hint, short_of_full = summary["near_misses"]["hint"], summary["near_misses"]["full"]
    if short_of_hint["count"]:
        echo(f"\nNear misses: {short_of_hint['count']} message(s) got nothing but fell just short of a hint:")
        for row in short_of_hint["skills"]:
            echo(f"  {row['count']:>6}  {row['skill']}: closest at similarity {row['similarity']:.3f} "
                 f"(floor {row['floor']:.2f}), relative gap {row['gap']:.3f} (needs {row['min_gap']:.2f})")
    if short_of_full["count"]:
        echo(f"\nNear misses: {short_of_full['count']} hint(s) fell just short of the whole skill:")
        for row in short_of_full["skills"]:
            echo(f"  {row['count']:>6}  {row['skill']}: closest at relative gap {row['gap']:.3f} "
                 f"(needs {row['full_gap']:.2f}), relative margin {row['margin']:.3f} "
                 f"(needs {row['full_margin']:.2f})")


def _echo_slowest(summary: dict) -> None:
    if not summary["slowest"]:
        return
    echo("\nSlowest routes:")
    for row in summary["slowest"]:
        decided = f"{row['skill']} ({row['mode']})" if row["skill"] else row["outcome"]
        echo(f"  {row['latency_ms']:>9.1f} ms  {_minute(row['time'])}  {row['path']:<8} "
             f"{row['platform'] or '-':<10} {decided}")
    for path, latency in summary["latency_ms"].items():
        echo(f"  {path}: median {latency['median']:.1f} ms, p95 {latency['p95']:.1f} ms over "
             f"{latency['routes']} routes")


def _echo_calibrate(summary: dict) -> None:
    reasons = summary["calibrate"]
    if not reasons:
        echo("\nNothing here suggests calibrating the gate.")
        return
    echo("\nCalibrating the gate on your own messages would help:")
    for reason in reasons:
        echo(f"  - {reason}")
    echo(
        "  How: write 50 or more of your messages to a JSONL file, one per line, labelled with the skill each\n"
        '  needs: {"query": "the message", "gold": ["skill-name"]}, or "gold": [] when none fits. With\n'
        f"  record_message_text: true the record ({summary['record']}) keeps each message beside its decision.\n"
        f"  Then `{command('calibrate --queries FILE.jsonl')}` shows the trade-off, and `--write` saves the "
        "fitted gate\n  in the index."
    )


def _minute(iso: str) -> str:
    return iso[:16].replace("T", " ")
