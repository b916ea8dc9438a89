"""Starting a child Python that imports this package: the routing worker, or the plugin's command line."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from .protocol import Startup

# The worker embeds one short query at a time, so numpy, torch and onnxruntime
# run single-threaded there: a second thread saves little on such small inputs
# and, when the cores are busy, makes a query several times slower (see
# docs/performance.md). Builds, in their own processes, keep every core.
WORKER_THREAD_LIMITS = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def worker_environment() -> dict[str, str]:
    """The environment for a child Python that must import this package.

    The package's parent folder goes first on ``PYTHONPATH``, so a plugin
    loaded as a plain folder (not pip-installed) works too.
    """
    env = dict(os.environ)
    package_parent = str(Path(__file__).resolve().parents[2])
    current = env.get("PYTHONPATH", "")
    env["PYTHONPATH"] = package_parent + (os.pathsep + current if current else "")
    return env


def launch(python: str, startup: Startup) -> subprocess.Popen:
    """Start ``python -m semantic_skills.worker`` with ``startup``, its pipes open; raises OSError.

    It runs in its own session, so a signal meant for the host's terminal
    does not reach it; it exits when its stdin closes.
    """
    return subprocess.Popen(
        [python, "-m", "semantic_skills.worker", startup.to_json()],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**worker_environment(), **WORKER_THREAD_LIMITS}, start_new_session=True, close_fds=True,
    )
