"""The plugin's long-lived state inside a Hermes process: one per Hermes home.

Everything here is cheap to create and imports nothing heavy: routing runs in
the worker process that :class:`~semantic_skills.worker.client.RouterClient`
starts. Settings are read again whenever ``config.yaml`` changes: the ones a
message uses apply to the next message, and a changed index folder or
embedder restarts the worker with them.
"""

from __future__ import annotations

import atexit
import functools
import logging
import threading
from pathlib import Path

from ..errors import ConfigError
from ..logs import OnceLogger, logger
from ..worker.client import RouterClient
from .cli_command import HERMES_COMMAND
from .config import PluginSettings, hermes_home, index_dir, load_config, plugin_settings
from .dedupe import InjectedSkills
from .seal import home_seal
from .turns import TurnLedger

LOCAL_ROUTE_TIMEOUT_MS = 24  # with ~0.5 ms of hook work, keeps the hook within its 25 ms p99 target
REMOTE_ROUTE_TIMEOUT_MS = 200
AGENT_ANSWER_TIMEOUT_SECONDS = 5.0
HERMES_ENVIRONMENTS = ("kanban", "docker", "s6")  # the environments Hermes 0.19 detects


class PluginRuntime:
    """Settings, the home's seal, the routing client, the dedupe store and the gateway turn ledger."""

    def __init__(self, home: Path):
        self.home = home
        self.log_once = OnceLogger()
        self.seal = home_seal(home)
        self._settings_source = self.config()
        self._settings = settings = self._parse(self._settings_source)
        self._block_limit = hook_context_limit()
        self.client = RouterClient(index_dir(settings, home), settings.embedder,
                                   inactive_environments=inactive_environments, cli_command=HERMES_COMMAND)
        self.injected = InjectedSkills(home / "semantic-skills" / "dedupe.json", settings.dedupe_max_sessions,
                                       settings.dedupe_ttl_seconds, log_once=self.log_once)
        self.turns = TurnLedger()

    @property
    def index_dir(self) -> Path:
        """The index folder the routing worker serves."""
        return self.client.index_dir

    def config(self) -> dict:
        """Hermes' ``config.yaml`` as parsed: the same object while the file is unchanged."""
        return load_config(self.home)

    def settings(self) -> PluginSettings:
        """The current settings; re-read when config.yaml changes, defaults when invalid."""
        config = self.config()
        if config is self._settings_source:
            return self._settings
        settings = self._parse(config)
        self._settings_source, self._settings = config, settings
        self._block_limit = hook_context_limit()
        self.injected.max_sessions = settings.dedupe_max_sessions
        self.injected.ttl_seconds = settings.dedupe_ttl_seconds
        self.client.configure(index_dir(settings, self.home), settings.embedder)
        return settings

    def _parse(self, config: dict) -> PluginSettings:
        try:
            return plugin_settings(config)
        except ConfigError as exc:
            self.log_once(logging.WARNING, f"invalid settings under plugins.entries.semantic-skills.settings in "
                                           f"{self.home / 'config.yaml'}: {exc}; using the defaults")
            return PluginSettings()

    def route_timeout(self) -> float:
        """How long the gateway loop may wait for a routing answer, in seconds."""
        ms = self.settings().route_timeout_ms
        if not ms:
            ms = REMOTE_ROUTE_TIMEOUT_MS if self.client.status.backend == "litellm" else LOCAL_ROUTE_TIMEOUT_MS
        return ms / 1000.0

    def block_limit(self) -> int | None:
        """The longest skill block, whichever path carries it (see :func:`hook_context_limit`)."""
        self.settings()  # re-reads the limit too when config.yaml changed
        return self._block_limit

    def start(self) -> None:
        self.client.start()

    def close(self) -> None:
        self.client.close()
        self.injected.close()


def hook_context_limit() -> int | None:
    """The longest ``pre_llm_call`` context Hermes passes on as it is, if it has such a limit.

    Hermes replaces hook context longer than ``hooks.output_spill.max_chars``
    with a short preview and a file path. Gateway blocks keep the same limit,
    so a skill arrives with the same bytes on either path.
    """
    try:
        from tools.hook_output_spill import get_spill_config

        spill = get_spill_config()
        return int(spill["max_chars"]) if spill.get("enabled") else None
    except Exception:  # noqa: BLE001 - a Hermes without this limit
        return None


@functools.cache
def inactive_environments() -> frozenset[str]:
    """The environments Hermes finds inactive in this process, asked once; none if Hermes cannot say.

    Hermes hides a skill whose ``environments:`` are all inactive. Called on
    the client's supervisor thread, so ``register()`` does not wait for the
    detection (which imports Hermes' kanban tools).
    """
    try:
        from agent.skill_utils import skill_matches_environment

        return frozenset(env for env in HERMES_ENVIRONMENTS if not skill_matches_environment({"environments": [env]}))
    except Exception as exc:  # noqa: BLE001 - another Hermes version: hide nothing
        logger.warning("semantic-skills: cannot ask Hermes which environments are active (%s: %s); "
                       "skills are offered whatever their environments:", type(exc).__name__, exc)
        return frozenset()


_current: PluginRuntime | None = None
_current_lock = threading.Lock()


def get_runtime() -> PluginRuntime:
    """The runtime for the current ``$HERMES_HOME``, created on first use."""
    global _current
    home = hermes_home()
    with _current_lock:
        if _current is None or _current.home != home:
            if _current is not None:
                _current.close()
            else:
                atexit.register(_close_current)
            _current = PluginRuntime(home)
        return _current


def current_runtime() -> PluginRuntime | None:
    """The runtime created last, if any (no side effects)."""
    return _current


def _close_current() -> None:
    if _current is not None:
        _current.close()
