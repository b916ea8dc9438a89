"""``hermes semantic-skills ...``: the plugin's own command line, run with Hermes' Python.

Hermes gives the command an argparse parser of its own, whose ``--help``
would describe only that wrapper and which refuses options it does not know;
:func:`setup` hands ``-h``/``--help`` and ``--version`` to the plugin's command
line instead, so ``hermes semantic-skills --help`` lists the plugin's commands.
"""

from __future__ import annotations

import argparse
import os
import signal
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
    sys.exit(run_to_the_end(command, {**os.environ, COMMAND_ENV: named, HOST_ENV: hermes_distribution()}))


def run_to_the_end(command: list[str], env: dict[str, str]) -> int:
    """Run ``command`` and return its exit status as a shell gives it (128 + N for a child ended by signal N).

    A Ctrl-C reaches the terminal's whole foreground process group: the child,
    which says it was interrupted and exits with 130, and this process, which
    meanwhile only waits for it, as a shell does (left to Python, the
    KeyboardInterrupt here killed the child before it said a word, and Hermes
    printed a traceback). A handler that does nothing, unlike ignoring the
    signal, is not inherited by the child.
    """
    try:
        previous = signal.signal(signal.SIGINT, _wait_for_the_child)
    except ValueError:  # not the main thread: signals are not this thread's to handle
        previous = None
    try:
        status = subprocess.Popen(command, env=env).wait()
    finally:
        if previous is not None:  # None: not the main thread, or a handler set outside Python (none to put back)
            signal.signal(signal.SIGINT, previous)
    return 128 - status if status < 0 else status


def _wait_for_the_child(signum, frame) -> None:
    """SIGINT while the command line's child runs: the child got it too and ends as it chooses."""
