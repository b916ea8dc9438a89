"""``doctor``: check everything routing needs in this Hermes home, one line per check with its fix."""

from __future__ import annotations

import sys

import click

from .app import echo, echo_json, json_option, main

MARKS = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL", "skip": "skip"}
INDENT = " " * 5  # a fix goes on its own line, under its problem


@main.command()
@click.option("--timeout", default=120.0, show_default=True, type=click.FloatRange(1, 3600),
              help="Seconds the routing worker may take to load the index and its embedder.")
@json_option
def doctor(timeout, as_json):
    """Check the plugin's set-up and say how to fix what is wrong.

    Checks the Python and its dependencies, Hermes and its capabilities, the
    plugin's install and settings, the index (present, built with the configured
    embedder, up to date), a real routing worker, and which skills Hermes offers.
    One line per check; under a problem, the command that fixes it (and another
    way, with its cost, where there is one). Exits with 1 when routing would
    not work. Run it as `hermes semantic-skills
    doctor` to check the Python and the Hermes home (profile) that Hermes uses.
    """
    from ..errors import command
    from ..hermes.doctor.report import FAIL
    from ..hermes.doctor.setup_checks import run_doctor

    checks = run_doctor(timeout)
    healthy = all(check.status != FAIL for check in checks)
    if as_json:
        echo_json({"ok": healthy, "checks": [c.as_dict() for c in checks]})
    else:
        for check in checks:
            echo(f"{MARKS.get(check.status, check.status)} {check.name}: {check.detail}")
            if check.fix and check.status != "ok":
                echo(f"{INDENT}fix: {check.fix}")
            if check.alternative and check.status != "ok":
                echo(f"{INDENT}or:  {check.alternative}")
        echo("routing works" if healthy else
             f"routing does not work yet: apply the fixes from the top, then run {command('doctor')} again")
    if not healthy:
        sys.exit(1)
