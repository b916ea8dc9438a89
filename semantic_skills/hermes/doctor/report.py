"""The doctor's vocabulary: one line of its report (:class:`Check`), its four statuses, a line said while a slow
check runs (:class:`Progress`), what every check reads (:class:`Setup`), and the verdict on them all."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from ...settings import SettingProblem
from ..config import PLUGIN_NAME, PluginSettings, hermes_cli, home_prefix
from ..host.lookup import hermes_script

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
class Progress:
    """Said before a check that may take a while, so nobody stares at a silent terminal."""

    text: str


@dataclass(frozen=True)
class Setup:
    """What every check reads: the home, its config and settings (as the plugin runs on them, with the values
    it set aside), and how the user runs this command line."""

    home: Path
    config: dict
    settings: PluginSettings
    index_dir: Path
    backend: str  # the embedder backend routing uses: the configured one, or with default settings the index's
    command: str
    problems: tuple[SettingProblem, ...] = ()

    @property
    def under_hermes(self) -> bool:
        return self.command.endswith(f"{hermes_script()} {PLUGIN_NAME}")  # "HERMES_HOME=... hermes semantic-skills"

    @property
    def hermes(self) -> str:
        """How to run ``hermes`` on this home from a shell."""
        return hermes_cli(self.home)

    def run(self, arguments: str) -> str:
        """How to run this command line's ``arguments`` on this home from a shell, as the user runs it."""
        prefix = "" if "HERMES_HOME=" in self.command else home_prefix(self.home)  # under Hermes it names the home
        return f"{prefix}{self.command} {arguments}"


@dataclass(frozen=True)
class Verdict:
    """The report's last line: ``healthy`` when the routing worker answered a route and nothing stops Hermes from
    using it; the warnings are listed under the line, each on its own."""

    healthy: bool
    text: str


def verdict(checks: list[Check], setup: Setup) -> Verdict:
    """The :class:`Verdict` on ``checks``."""
    worker = next((c for c in checks if c.name == "worker"), None)
    failing = [c.name for c in checks if c.status == FAIL]
    warnings = [c for c in checks if c.status == WARN]
    routed = worker is not None and worker.status == OK
    if routed and not failing:
        line = "routing works" + (", with these warnings:" if warnings else "")
        return Verdict(True, "\n".join([line] + [f"  {c.name}: {c.detail}" for c in warnings]))
    again = f"then run `{setup.run('doctor')}` again"
    if routed:
        return Verdict(False, f"the routing worker answers, but Hermes does not route until the FAIL lines above are "
                              f"fixed ({', '.join(failing)}); {again}")
    return Verdict(False, f"routing does not work yet: apply the fixes from the top, {again}")
