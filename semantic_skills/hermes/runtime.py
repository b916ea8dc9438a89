"""The plugin's long-lived state inside a Hermes process: one per Hermes home (per profile).

Every hook call finds the runtime of the home Hermes is serving in that call
(:func:`get_runtime`), so a gateway serving several profiles keeps each
profile's index, settings, worker and trust store apart. Everything here is
cheap to create and imports nothing heavy: routing runs in the worker process
that :class:`~semantic_skills.worker.client.RouterClient` starts, and the
trust store is read on a thread of its own. Each hook call that routes
begins with :meth:`PluginRuntime.refresh`: when ``config.yaml`` changed, the settings a
message uses apply from that call on, and a changed index folder or embedder
restarts the worker with them.
"""

from __future__ import annotations

import atexit
import logging
import threading
from pathlib import Path
from typing import Any, Callable

from ..decision_log import DecisionLog
from ..logs import OnceLogger
from ..threads import LazyThread
from ..worker.client import RouterClient
from .budget import Deadline, route_timeout
from .config import (
    SETTINGS_KEY,
    PluginSettings,
    decision_record_path,
    hermes_command,
    in_use_instead,
    index_dir,
    load_config,
    not_a_setting,
    read_settings,
    state_dir,
    unknown_settings,
)
from .home_index import settle_index
from .host.home import hermes_home
from .host.limits import hook_context_limit
from .host.lookup import hermes_distribution
from .offer.rules import Eligibility, Offer
from .trust.store import TrustStore
from .turns import AnsweredTurns, TurnLedger

STATE_FILE = "dedupe.json"  # in the plugin's state folder: the trust store

_plugin_config: Callable[[str, Any], Any] | None = None  # Hermes' ctx.get_config, where it has one


class PluginRuntime:
    """Settings, the routing client, the trust store, the gateway turn ledger and the decision record."""

    def __init__(self, home: Path):
        self.home = home
        self.log_once = OnceLogger()
        self._settings_source = self.config()
        self._settings = settings = self._parse(self._settings_source)
        self.block_limit = hook_context_limit()  # the longest block, whichever path carries it
        self.client = RouterClient(index_dir(settings, home), settings.embedder, cli_command=hermes_command(home),
                                   host=hermes_distribution())
        self.trust = TrustStore(state_dir(home) / STATE_FILE, settings.dedupe_max_sessions,
                                settings.dedupe_ttl_seconds, log_once=self.log_once)
        self.turns = TurnLedger()
        self.answered = AnsweredTurns()
        self.decisions = DecisionLog(decision_record_path(home), settings.record_max_bytes, log_once=self.log_once)
        self.eligibility = Eligibility(home, self.config, self.log_once)
        self._reindex_wanted = False
        self._index_settled = False  # see start()
        self._start_lock = threading.Lock()
        self.closed = False

    @property
    def index_dir(self) -> Path:
        """The index folder the routing worker serves."""
        return self.client.index_dir

    @property
    def settings(self) -> PluginSettings:
        """The settings as :meth:`refresh` last read them."""
        return self._settings

    def config(self) -> dict:
        """Hermes' ``config.yaml`` as parsed: the same object while the file is unchanged."""
        return load_config(self.home)

    def refresh(self) -> PluginSettings:
        """Read the settings again if ``config.yaml`` changed (defaults when invalid) and apply them: the block
        limit, the trust store's bounds, and the worker's index folder and embedder (a change restarts it)."""
        config = self.config()
        if config is self._settings_source:
            return self._settings
        settings = self._parse(config)
        self._settings_source, self._settings = config, settings
        self.block_limit = hook_context_limit()
        self.trust.resize(settings.dedupe_max_sessions, settings.dedupe_ttl_seconds)
        folder = index_dir(settings, self.home)
        if folder != self.index_dir:
            self._index_settled = False  # the next start() looks for an earlier release's index for it
        self.client.configure(folder, settings.embedder)
        return settings

    def _parse(self, config: dict) -> PluginSettings:
        where = self.home / "config.yaml"
        for key, meant in unknown_settings(config):
            self.log_once(logging.WARNING, f"{where}: {not_a_setting(key, meant)}; it is ignored")
        settings, problems = read_settings(config, _plugin_config)
        for problem in problems:  # that setting alone falls back: every other one applies
            self.log_once(logging.WARNING, f"{where}: {SETTINGS_KEY}.{problem.describe()}; {in_use_instead(problem)} "
                                           f"until it is fixed ({hermes_command(self.home)} doctor)")
        return settings

    def start(self) -> None:
        """Start the routing worker (a no-op once it runs, or once closed); before the first start for an index
        folder, move into the home the index an earlier release left in the plugin folder, if it is this
        home's (see home_index), saying so in one line."""
        with self._start_lock:
            if not self._index_settled:
                self._index_settled = True
                self._settle_index()
        self.client.start()

    def _settle_index(self) -> None:
        try:
            earlier = settle_index(self.home, self.config(), self.index_dir)
        except Exception as exc:  # noqa: BLE001 - the index then stays where it is, and routing says what it lacks
            self.log_once(logging.WARNING, f"could not look for the index an earlier release kept in the plugin "
                                           f"folder ({type(exc).__name__}: {exc})")
            return
        if earlier is not None:
            self.log_once(logging.INFO if earlier.moved else logging.WARNING,
                          earlier.said(f"{hermes_command(self.home)} build"))

    def route_timeout(self) -> float:
        """How long the gateway loop may wait for a routing answer, in seconds (for a local embedder, unless
        set, from the worker's recent answers: see budget.py)."""
        return route_timeout(self._settings.route_timeout_ms, remote=self.client.status.backend == "litellm",
                             median_answer=self.client.route_times.median)

    def hook_deadline(self) -> Deadline:
        """The time one ``pre_llm_call`` may spend waiting, all waits together."""
        return Deadline.for_agent_hook(self._settings.warmup_wait_seconds)

    def offer(self, platform: str) -> Offer:
        """What a message on ``platform`` may be routed to (see hermes/offer)."""
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

    def close(self) -> None:
        self.closed = True
        self.client.close()
        self.trust.close()
        self.decisions.close()


_runtimes: dict[Path, PluginRuntime] = {}
_runtimes_lock = threading.Lock()


def use_plugin_config(get_config: Callable[[str, Any], Any] | None) -> None:
    """Read settings through Hermes' ``ctx.get_config`` from now on (it follows the current profile's config)."""
    global _plugin_config
    _plugin_config = get_config


def get_runtime(home: Path | None = None, start: bool = True) -> PluginRuntime:
    """The runtime for ``home`` (default: the Hermes home of this call), created on first use, its worker
    started unless ``start`` is False (then the first call that starts it does)."""
    home = home or hermes_home()
    with _runtimes_lock:
        runtime = _runtimes.get(home)
        if runtime is None or runtime.closed:
            if not _runtimes:
                atexit.register(close_all)
            runtime = _runtimes[home] = PluginRuntime(home)
    if start:
        runtime.start()
        _glyph_data.start()
    return runtime


def _load_glyph_data() -> None:
    """Read the confusables data the tag neutraliser folds with (tens of milliseconds, once per process) before a
    hook first needs it, on a thread of its own rather than on the gateway's event loop."""
    from ..glyphs import angles

    try:
        angles()
    except Exception:  # noqa: BLE001 - the first tag scan meets the same fault, and reports it where it happens
        pass


_glyph_data = LazyThread(_load_glyph_data, "semantic-skills-glyphs")


def current_runtime() -> PluginRuntime | None:
    """The runtime for the Hermes home of this call, if one was created (no side effects)."""
    return _runtimes.get(hermes_home())


def close_all() -> None:
    """Stop every runtime's worker and save its trust store."""
    with _runtimes_lock:
        runtimes = list(_runtimes.values())
    for runtime in runtimes:
        runtime.close()
