"""The doctor's vocabulary: one line of its report (:class:`Check`), its four statuses, and what every check
reads (:class:`Setup`). Shared by the set-up checks and the routing checks."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..config import HERMES_COMMAND, PluginSettings

OK, WARN, FAIL, SKIP = "ok", "warn", "fail", "skip"


@dataclass(frozen=True)
class Check:
    """One line of the report: ``fix`` is set whenever ``status`` is ``fail`` or ``warn``; ``alternative`` is
    another way to fix it, with what it costs or saves."""

    name: str
    status: str
    detail: str
    fix: str = ""
    facts: dict = field(default_factory=dict)
    alternative: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Setup:
    """What every check reads: the home, its config and settings, and how the user runs this command line."""

    home: Path
    config: dict
    settings: PluginSettings
    index_dir: Path
    backend: str  # the embedder backend routing uses: the configured one, or with default settings the index's
    command: str

    @property
    def under_hermes(self) -> bool:
        return self.command == HERMES_COMMAND
