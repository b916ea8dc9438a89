"""``doctor``: check everything routing needs in this Hermes home, one line per check with its fix, each line
printed as soon as its check is done."""

from __future__ import annotations

import sys
from contextlib import ExitStack, nullcontext
from typing import ContextManager

import click

from . import progress
from .app import json_option, main
from .output import echo, echo_json
from .progress import counted

MARKS = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL", "skip": "skip"}
INDENT = " " * 5  # a fix goes on its own line, under its problem


@main.command()
@click.option("--timeout", default=120.0, show_default=True, type=click.FloatRange(1, 3600),
              help="Seconds the routing worker may take to load the index and its embedder.")
@json_option
def doctor(timeout, as_json):
    """Check the plugin's set-up and say how to fix what is wrong.

    Checks the Python that runs the plugin and its dependencies, Hermes and
    its capabilities, the plugin's install and settings, the skills Hermes
    offers, the index (present, built with the configured embedder, up to
    date), and last a real routing worker answering a route. One line per
    check, printed as it finishes; under a problem, the command that fixes it
    (and another way, with its cost, where there is one). Ends with "routing
    works" when a route succeeded and nothing keeps Hermes from using it,
    listing the warnings; exits with 1 otherwise. Run it as `hermes
    semantic-skills doctor` to check the Python and the Hermes home (profile)
    that Hermes uses.
    """
    from ..hermes.doctor.report import Check, Progress
    from ..hermes.doctor.run import run_doctor

    checks, last = [], None
    with ExitStack() as waiting:
        for item in run_doctor(timeout):
            waiting.close()  # what a progress note announced is over
            if isinstance(item, Check):
                checks.append(item)
            elif not isinstance(item, Progress):
                last = item  # the verdict comes last
            if not as_json:
                waiting.enter_context(_print(item))
    if as_json:
        echo_json({"ok": last.healthy, "verdict": last.text, "checks": [c.as_dict() for c in checks]})
    if not last.healthy:
        sys.exit(1)


def _print(item) -> ContextManager[None]:
    """One line of the report as it comes: a check (with its fix under it), a progress note, or the verdict. The
    context lasts until the next item: on a terminal, a progress note counts the seconds of its wait meanwhile."""
    from ..hermes.doctor.report import Check, Progress

    if isinstance(item, Progress):
        if sys.stdout.isatty():
            return counted(f"...  {item.text}", every=progress.TICK_SECONDS, err=False)
        echo(f"...  {item.text}")
        return nullcontext()
    if not isinstance(item, Check):
        echo(item.text)
        return nullcontext()
    check = item
    echo(f"{MARKS.get(check.status, check.status)} {check.name}: {check.detail}")
    if check.fix and check.status != "ok":
        echo(f"{INDENT}fix: {check.fix}")
    if check.alternative and check.status != "ok":
        echo(f"{INDENT}or:  {check.alternative}")
    return nullcontext()
