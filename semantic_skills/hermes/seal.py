"""This Hermes home's seal: a random token that marks the skill blocks this plugin wrote.

A user's message can start with text that looks like a skill block; only a
block carrying the seal was written by the plugin. The seal is created once
per home (``$HERMES_HOME/semantic-skills/seal``, readable by its owner only)
and then never changes, so the system prompt that names it stays
byte-identical across restarts and the provider's prompt cache keeps hitting.
"""

from __future__ import annotations

import os
import re
import secrets
import threading
from pathlib import Path

from ..logs import logger
from .config import state_dir

SEAL_FILE = "seal"  # in the plugin's state folder
_VALID = re.compile(r"[0-9a-f]{16,64}")

_seals: dict[Path, str] = {}
_lock = threading.Lock()


def home_seal(home: Path) -> str:
    """The seal of ``home``, created on first use; never raises.

    A home where the file cannot be written gets a seal for this process
    only (said once in the log): blocks stay unforgeable, but the system
    prompt then changes with each restart.
    """
    path = state_dir(home) / SEAL_FILE
    with _lock:
        if path not in _seals:
            _seals[path] = _read(path) or _create(path)
        return _seals[path]


def _read(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text if _VALID.fullmatch(text) else None


def _create(path: Path) -> str:
    """A new seal written to ``path`` (0600) without ever replacing a valid one another process wrote first."""
    seal = secrets.token_hex(8)  # 64 random bits: unguessable, and few tokens
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".seal.{secrets.token_hex(4)}")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", encoding="ascii") as out:
            out.write(seal + "\n")
        try:
            os.link(temporary, path)  # fails if another process created the seal meanwhile
        except FileExistsError:
            existing = _read(path)
            if existing is None:  # an unreadable or damaged file: replace it
                os.replace(temporary, path)
                return seal
            seal = existing
        finally:
            temporary.unlink(missing_ok=True)
    except OSError as exc:
        logger.warning("semantic-skills: cannot store the skill-block seal in %s (%s); using one for this "
                       "process only, so the system prompt changes at each restart", path, exc.strerror or exc)
    return seal
