"""The doctor's check of which Python it describes: the one the Hermes serving this home runs the plugin with, or
another (a ``semantic-skills`` command from another venv), when that Hermes recorded itself (``hermes/serving.py``).
"""

from __future__ import annotations

import shlex
import shutil
import sys
from dataclasses import asdict
from pathlib import Path

from ...files import open_regular_file
from ..config import PLUGIN_NAME, home_prefix
from ..serving import ServingHermes, served_by
from .report import FAIL, OK, Check, Setup

BOTH = "the plugin runs in it and starts its routing worker with it"


def served_check(setup: Setup) -> Check | None:
    """Run without Hermes: ok when this is the Python the Hermes serving this home last ran the plugin with; a
    failure naming that Hermes and the command that checks it when this is another one (every other check would
    describe this Python, its Hermes and packages, not those that serve the home); None when no Hermes has loaded
    the plugin in this home, or the Python it used is gone."""
    record = served_by(setup.home)
    if record is None or not Path(record.python).exists():
        return None
    here = Path(sys.executable)
    version = ".".join(map(str, sys.version_info[:3]))
    facts = {"python": str(here), "worker_python": str(here), "served_by": asdict(record)}
    serving = f"{record.command} (Hermes {record.version})"
    if same_environment(here, Path(record.python)):
        return Check("python", OK, f"Python {version} at {here}, which {serving} runs the plugin with for this "
                                   f"home: {BOTH}", facts=facts)
    return Check("python", FAIL, f"this is {here}, but {serving} runs the plugin for this home with "
                                 f"{record.python} (it loaded the plugin there last): every other check would "
                                 "describe this Python, not that one",
                 f"{home_prefix(setup.home)}{_command(record)} {PLUGIN_NAME} doctor", facts)


def _command(record: ServingHermes) -> str:
    """How a shell here starts that Hermes: its command when the one on PATH runs its Python, else the command's
    path beside that Python (found there), else its bare name."""
    on_path = python_of(shutil.which(record.command))
    if on_path is not None and same_environment(on_path, Path(record.python)):
        return record.command
    beside = Path(record.python).parent / record.command
    return shlex.quote(str(beside)) if beside.is_file() else record.command


def python_of(script: str | None) -> Path | None:
    """The interpreter a console script starts, from its ``#!`` line."""
    try:
        with open_regular_file(script) as handle:
            first = handle.readline(512).decode("utf-8", "replace")
    except (OSError, TypeError):
        return None
    return Path(first[2:].strip().split()[0]) if first.startswith("#!/") else None


def same_environment(a: Path, b: Path) -> bool:
    """Whether two interpreters are one Python environment: the same folder, however it is reached (``python`` and
    ``python3`` in one venv are; two venvs are not, though their ``python`` links resolve to one interpreter)."""
    try:
        return a.parent.resolve() == b.parent.resolve()
    except OSError:
        return False
