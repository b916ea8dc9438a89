"""The plugin's long-lived state inside a Hermes process: one per Hermes home (per profile).

Every hook call finds the runtime of the home Hermes is serving in that call
(:func:`get_runtime`), so a gateway serving several profiles keeps each
profile's index, settings, worker and dedupe record apart. Everything here is
cheap to create and imports nothing heavy: routing runs in the worker process
that :class:`~semantic_skills.worker.client.RouterClient` starts, and the
dedupe record is read on a thread of its own. Settings
are read again whenever ``config.yaml`` changes: the ones a message uses
apply to the next message, and a changed index folder or embedder restarts
the worker with them.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from pathlib import Path
from typing import Any, Callable

from ..decision_log import DecisionLog
from ..errors import ConfigError
from ..logs import OnceLogger
from ..worker.client import RouterClient
from .capabilities import host_hook_timeout
from .config import (
    HERMES_COMMAND,
    HERMES_DISTRIBUTION,
    SETTINGS_KEY,
    PluginSettings,
    decision_record_path,
    hermes_home,
    index_dir,
    load_config,
    not_a_setting,
    plugin_settings,
    state_dir,
    unknown_settings,
)
from .dedupe import DedupeStore
from .eligibility import Eligibility, Offer
from .turns import TurnLedger

LOCAL_ROUTE_TIMEOUT_MS = 24  # with ~0.5 ms of hook work, keeps the hook within its 25 ms p99 target
REMOTE_ROUTE_TIMEOUT_MS = 200
AGENT_ANSWER_TIMEOUT_SECONDS = 5.0  # a ready worker answers in milliseconds; a hung one is given up on
HOST_TIMEOUT_SHARE = 0.5  # one hook call waits at most this share of Hermes' hook_callback_timeout

DEDUPE_FILE = "dedupe.json"  # in the plugin's state folder

_plugin_config: Callable[[str, Any], Any] | None = None  # Hermes' ctx.get_config, where it has one


class PluginRuntime:
    """Settings, the routing client, the dedupe store, the gateway turn ledger and the decision record."""

    def __init__(self, home: Path):
        self.home = home
        self.log_once = OnceLogger()
        self._settings_source = self.config()
        self._settings = settings = self._parse(self._settings_source)
        self._block_limit = hook_context_limit()
        self.client = RouterClient(index_dir(settings, home), settings.embedder, cli_command=HERMES_COMMAND,
                                   host=HERMES_DISTRIBUTION)
        self.dedupe = DedupeStore(state_dir(home) / DEDUPE_FILE, settings.dedupe_max_sessions,
                                  settings.dedupe_ttl_seconds, log_once=self.log_once)
        self.turns = TurnLedger()
        self.decisions = DecisionLog(decision_record_path(home), settings.record_max_bytes, log_once=self.log_once)
        self.eligibility = Eligibility(home, self.config, self.log_once)
        self._reindex_wanted = False
        self.closed = False

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
        self.dedupe.max_sessions = settings.dedupe_max_sessions
        self.dedupe.ttl_seconds = settings.dedupe_ttl_seconds
        self.client.configure(index_dir(settings, self.home), settings.embedder)
        return settings

    @property
    def current_settings(self) -> PluginSettings:
        """The settings as :meth:`settings` last read them, without looking at config.yaml again (for a hook
        that read them at its start)."""
        return self._settings

    def _parse(self, config: dict) -> PluginSettings:
        where = self.home / "config.yaml"
        for key, meant in unknown_settings(config):
            self.log_once(logging.WARNING, f"{where}: {not_a_setting(key, meant)}; it is ignored")
        try:
            return plugin_settings(config, _plugin_config)
        except ConfigError as exc:
            self.log_once(logging.WARNING, f"invalid settings under {SETTINGS_KEY} in {where}: {exc}; using the "
                                           "defaults")
            return PluginSettings()

    def route_timeout(self) -> float:
        """How long the gateway loop may wait for a routing answer, in seconds."""
        ms = self.settings().route_timeout_ms
        if not ms:
            ms = REMOTE_ROUTE_TIMEOUT_MS if self.client.status.backend == "litellm" else LOCAL_ROUTE_TIMEOUT_MS
        return ms / 1000.0

    def hook_deadline(self) -> "Deadline":
        """The time one ``pre_llm_call`` may spend waiting, all waits together.

        The warm-up wait plus one answer, and never more than
        :data:`HOST_TIMEOUT_SHARE` of the time after which Hermes abandons a
        hook callback (and mutes it for a minute).
        """
        wanted = self.settings().warmup_wait_seconds + AGENT_ANSWER_TIMEOUT_SECONDS
        return Deadline(min(wanted, HOST_TIMEOUT_SHARE * host_hook_timeout()))

    def block_limit(self) -> int | None:
        """The longest skill block, whichever path carries it (see :func:`hook_context_limit`)."""
        self.settings()  # re-reads the limit too when config.yaml changed
        return self._block_limit

    def offer(self, platform: str) -> Offer:
        """What a message on ``platform`` may be routed to (see eligibility.py)."""
        offer = self.eligibility.offer(platform, self.client.status.gated)
        if offer.reindex:
            self.reindex()
        return offer

    def reindex(self) -> None:
        """A skill changed on disk: have the worker bring the index up to date (now, or once it is ready)."""
        self._reindex_wanted = True
        self.send_reindex()

    def send_reindex(self) -> None:
        """Send a re-index asked for while the worker was not ready (cheap when there is none)."""
        if self._reindex_wanted and self.client.ready:
            self._reindex_wanted = False
            self.client.rebuild()

    def start(self) -> None:
        self.client.start()

    def close(self) -> None:
        self.closed = True
        self.client.close()
        self.dedupe.close()
        self.decisions.close()


class Deadline:
    """The time budget of one hook call, shared by all its waits.

    Each wait gets the smaller of its own limit and what is left; the waits
    for the worker's answers also share one :data:`AGENT_ANSWER_TIMEOUT_SECONDS`
    window, opened by the first of them: the answers are all due at once, so a
    hung worker costs that window once, however many turns wait on it.
    """

    def __init__(self, seconds: float):
        self.seconds = max(0.0, seconds)
        self._end = time.monotonic() + self.seconds
        self._answers_end: float | None = None

    def within(self, limit: float) -> float:
        """How long the next wait may take: ``limit``, or less if the budget runs out first."""
        return max(0.0, min(limit, self._end - time.monotonic()))

    def for_answer(self) -> float:
        """How long the next wait for a routing answer may take."""
        now = time.monotonic()
        if self._answers_end is None:
            self._answers_end = now + AGENT_ANSWER_TIMEOUT_SECONDS
        return self.within(self._answers_end - now)


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


_runtimes: dict[Path, PluginRuntime] = {}
_runtimes_lock = threading.Lock()


def use_plugin_config(get_config: Callable[[str, Any], Any] | None) -> None:
    """Read settings through Hermes' ``ctx.get_config`` from now on (it follows the current profile's config)."""
    global _plugin_config
    _plugin_config = get_config


def get_runtime(home: Path | None = None) -> PluginRuntime:
    """The runtime for ``home`` (default: the Hermes home of this call), created and started on first use."""
    home = home or hermes_home()
    with _runtimes_lock:
        runtime = _runtimes.get(home)
        if runtime is None or runtime.closed:
            if not _runtimes:
                atexit.register(close_all)
            runtime = _runtimes[home] = PluginRuntime(home)
            runtime.start()
        return runtime


def current_runtime() -> PluginRuntime | None:
    """The runtime for the Hermes home of this call, if one was created (no side effects)."""
    return _runtimes.get(hermes_home())


def close_all() -> None:
    """Stop every runtime's worker and save its dedupe record."""
    with _runtimes_lock:
        runtimes = list(_runtimes.values())
    for runtime in runtimes:
        runtime.close()
