"""Which Hermes serves a Hermes home: the Python that loaded the plugin there last, its command and its version.

Nothing in a Hermes home says which Hermes runs it: several can share one
(``hermes``, a repackaging's ``hermesx``, a development venv's), and a
``semantic-skills`` command run from another venv sees only its own Python.
So ``register()``, in the Hermes process itself, records in the plugin's state
folder (``hermes.json``, owner-only) the interpreter it runs in, Hermes'
command and version, rewriting the file only when they change; ``doctor`` run
with another Python reads it back and points to the command that checks the
right one.
"""

from __future__ import annotations

import json
import logging
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from ..files import atomic_write, read_regular_file
from ..logs import logger
from .config import state_dir
from .host.lookup import hermes_script, hermes_version

RECORD_FILE = "hermes.json"  # in the plugin's state folder
MAX_RECORD_BYTES = 16_384


@dataclass(frozen=True)
class ServingHermes:
    python: str  # the interpreter Hermes ran the plugin with (``sys.executable``, its venv's own path)
    command: str  # the command that starts that Hermes (``hermes``, ``hermesx``)
    version: str  # as Hermes reports it, for display only


def remember(home: Path) -> None:
    """Record the Hermes of this process as the one serving ``home``; never raises (a failure costs only the
    record ``doctor`` reads)."""
    if not sys.executable:
        return
    current = ServingHermes(sys.executable, hermes_script(), hermes_version())
    if served_by(home) == current:
        return
    path = record_path(home)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(asdict(current)).encode(), mode=0o600)
    except OSError as exc:
        logger.log(logging.DEBUG, "semantic-skills: could not record which Hermes serves %s (%s)", home, exc)


def served_by(home: Path) -> ServingHermes | None:
    """The Hermes that loaded the plugin in ``home`` last, or None when no Hermes has (or its record is unreadable
    or damaged)."""
    try:
        found = json.loads(read_regular_file(record_path(home), MAX_RECORD_BYTES, follow=False))
    except (OSError, ValueError, RecursionError):
        return None
    fields = ("python", "command", "version")
    if not isinstance(found, dict) or not all(isinstance(found.get(name), str) and found[name] for name in fields):
        return None
    return ServingHermes(*(found[name] for name in fields))


def record_path(home: Path) -> Path:
    return state_dir(home) / RECORD_FILE
