"""``hermes semantic-skills ...``: the plugin's own command line, run with Hermes' Python.

Hermes gives the command an argparse parser of its own, whose ``--help``
would describe only that wrapper and which refuses options it does not know;
:func:`setup` hands ``-h``/``--help`` and ``--version`` to the plugin's command
line instead, so ``hermes semantic-skills --help`` lists the plugin's commands.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from ..errors import COMMAND_ENV
from ..requirements import HOST_ENV
from ..worker.launch import isolated_command
from .config import PLUGIN_NAME, hermes_command
from .host.home import hermes_home
from .host.lookup import hermes_distribution

NAME = PLUGIN_NAME
HELP = "Build, check and query the semantic skill index (build, status, doctor, search, route, history)"


def setup(parser: argparse.ArgumentParser) -> None:
    parser.conflict_handler = "resolve"  # a group made now resolves clashes: its -h/--help replaces the wrapper's
    plugin = parser.add_argument_group(NAME)
    plugin.add_argument("-h", "--help", action="store_true", dest="plugin_help",
                        help="show the plugin's commands and options")
    plugin.add_argument("--version", action="store_true", dest="plugin_version",
                        help="show the version of the plugin's code that this Hermes runs")
    parser.add_argument("arguments", nargs=argparse.REMAINDER,
                        help="a semantic-skills command and its arguments, for example: doctor, build, status")


def run(args: argparse.Namespace) -> None:
    """Run the plugin's command line with ``args`` in an isolated child of this Python, and exit with its status.

    The child keeps the user's working directory (relative paths in the
    arguments mean what the user typed) but imports nothing from it.
    """
    from .runtime import current_runtime

    runtime = current_runtime()
    if runtime is not None:
        runtime.client.close()  # this process only runs a command: no routing worker needed
    if getattr(args, "plugin_help", False) or getattr(args, "plugin_version", False):
        arguments = ["--help" if args.plugin_help else "--version"]
    else:
        arguments = args.arguments or ["--help"]
    command = isolated_command(sys.executable, "semantic_skills", *arguments)
    named = hermes_command(hermes_home())  # the fixes it prints name this home, a profile's too
    sys.exit(subprocess.call(command, env={**os.environ, COMMAND_ENV: named, HOST_ENV: hermes_distribution()}))
