"""Starting a child Python that runs this package: the routing worker, or the plugin's command line.

The child must run this very package and nothing its surroundings plant: a
module named ``inspect.py`` or ``json.py`` in the host's working directory, or
a folder on ``PYTHONPATH``, would otherwise be imported in its place. So the
child runs with ``-E`` (no ``PYTHON*`` variables) and ``-P`` (neither the
current folder nor a script's folder goes on ``sys.path``), and a short
bootstrap loads the package from the folder this file is in, which also works
when the plugin is a plain folder that was never pip-installed. Unlike
``-I``, this keeps a ``pip install --user`` site, which belongs to the same
user as the process. The child also searches, after its own, every folder the
starting process imports from (:func:`host_import_paths`): Hermes' package
manager (0.21 and later) runs Hermes with its environment's packages in place
of the interpreter's, through ``PYTHONPATH``, which ``-E`` would drop. The
starting process's working folder stays out. And it writes no bytecode (``-B``):
the package's folder is the plugin Hermes installed, which Hermes' plugin
checks copy, load and delete while a worker started there may be importing (compiling the package's
modules instead costs the worker under 0.1 s a start).
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

from ..errors import COMMAND_ENV, DEFAULT_COMMAND
from ..requirements import HOST_ENV
from .protocol import Startup

PACKAGE_FOLDER = Path(__file__).resolve().parents[1]
ISOLATED = ("-E", "-P", "-B")
# Loads the package from an exact folder (argv[1]), searches the host's import folders (argv[3], os.pathsep
# between them) after its own, and runs one of its modules (argv[2]) as __main__ with the remaining arguments.
BOOTSTRAP = (
    "import importlib.util, os, runpy, sys\n"
    "folder, module, paths = sys.argv[1], sys.argv[2], sys.argv[3]\n"
    "del sys.argv[1:4]\n"
    "sys.path.extend(p for p in paths.split(os.pathsep) if p and p not in sys.path)\n"
    "spec = importlib.util.spec_from_file_location('semantic_skills', folder + '/__init__.py',"
    " submodule_search_locations=[folder])\n"
    "package = sys.modules['semantic_skills'] = importlib.util.module_from_spec(spec)\n"
    "spec.loader.exec_module(package)\n"
    "runpy.run_module(module, run_name='__main__', alter_sys=True)\n"
)

# The worker embeds one short query at a time, so numpy, torch and onnxruntime
# run single-threaded there: a second thread saves little on such small inputs
# and, when the cores are busy, makes a query several times slower (see
# docs/performance.md). Builds, in their own processes, keep every core.
WORKER_THREAD_LIMITS = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def isolated_command(python: str, module: str, *arguments: str) -> list[str]:
    """``python`` running ``module`` of this package as ``__main__``, shielded from the cwd and PYTHONPATH, and
    searching this process's import folders after its own."""
    paths = os.pathsep.join(host_import_paths())
    return [python, *ISOLATED, "-c", BOOTSTRAP, str(PACKAGE_FOLDER), module, paths, *arguments]


def host_import_paths() -> list[str]:
    """The folders this process imports from, but its working folder and any relative entry (``""`` stands for
    the working folder): what a child started with ``-E -P`` searches after its own."""
    here = os.path.realpath(os.getcwd())
    return [path for path in sys.path
            if path and os.path.isabs(path) and os.path.realpath(path) != here and os.path.isdir(path)]


def launch(python: str, startup: Startup, cli_command: str = DEFAULT_COMMAND, host: str = "") -> subprocess.Popen:
    """Start the routing worker with ``startup``, its pipes open; raises OSError.

    It runs in this package's folder (the host's working directory may hold
    anything), so a relative index folder is made absolute first; in its own
    session so a signal meant for the host's terminal does not reach it; and
    exits when its stdin closes. ``cli_command`` is how the host's user runs
    this package's command line; the worker's messages name it in their fixes,
    and ``host`` in their install commands (see ``requirements.install_command``).
    """
    startup = dataclasses.replace(startup, index_dir=os.path.abspath(startup.index_dir))
    return subprocess.Popen(
        isolated_command(python, "semantic_skills.worker", startup.to_json()),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=PACKAGE_FOLDER,
        env={**os.environ, **WORKER_THREAD_LIMITS, COMMAND_ENV: cli_command, **({HOST_ENV: host} if host else {})},
        start_new_session=True,
        close_fds=True,
    )
