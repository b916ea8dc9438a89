"""``hermes semantic-skills ...``: the plugin's own command line, run with Hermes' Python."""

from __future__ import annotations

import argparse
import subprocess
import sys

from ..worker.launch import worker_environment
from .runtime import current_runtime

NAME = "semantic-skills"
HELP = "Build and inspect the semantic skill index (build, status, search, route)"


def setup(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("arguments", nargs=argparse.REMAINDER,
                        help="arguments for semantic-skills, for example: build, status, search QUERY")


def run(args: argparse.Namespace) -> None:
    """Run ``python -m semantic_skills ARGUMENTS`` and exit with its status."""
    runtime = current_runtime()
    if runtime is not None:
        runtime.client.close()  # this process only runs a command: no routing worker needed
    command = [sys.executable, "-m", "semantic_skills", *(args.arguments or ["--help"])]
    sys.exit(subprocess.call(command, env=worker_environment()))
