"""What Hermes' configuration says to this plugin, read as plain YAML (no Hermes import).

Pure functions of a config mapping (``config.yaml`` as parsed) give the skills
roots, the disabled skills and this plugin's settings under
``plugins.entries.semantic-skills.settings``; :func:`load_config` reads that
mapping from the Hermes home. Importing this module costs no more than the
core's settings: the command line uses it for its Hermes defaults.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ..errors import ConfigError
from ..files import file_stamp
from ..limits import DEFAULT_MAX_SKILL_CHARS
from ..settings import Settings
from ..skills.discovery import SkillsRoot

PLUGIN_NAME = "semantic-skills"
INDEX_DIR_ENV = "SEMANTIC_SKILLS_INDEX_DIR"
PROMPT_MODES = ("compact", "full")


@dataclass(frozen=True)
class PluginSettings(Settings):
    """The core's settings plus what only the Hermes side uses, with their defaults."""

    max_skill_chars: int = DEFAULT_MAX_SKILL_CHARS
    max_tool_chars: int = DEFAULT_MAX_SKILL_CHARS
    prompt_mode: str = "compact"
    dedupe_max_sessions: int = 2000
    dedupe_ttl_seconds: int = 86400
    route_timeout_ms: int = 0  # 0: 24 ms for local embedders, 200 ms for litellm
    warmup_wait_seconds: float = 15.0

    RANGES: ClassVar[tuple[tuple[str, float, float], ...]] = (
        ("max_skill_chars", 500, 200_000),
        ("max_tool_chars", 500, 200_000),
        ("dedupe_max_sessions", 1, 1_000_000),
        ("dedupe_ttl_seconds", 60, 365 * 86400),
        ("route_timeout_ms", 0, 10_000),
        ("warmup_wait_seconds", 0, 600),
    )

    def check(self) -> None:
        if self.prompt_mode not in PROMPT_MODES:
            raise ConfigError(f"prompt_mode must be one of {', '.join(PROMPT_MODES)}, got {self.prompt_mode!r}")
        super().check()


def hermes_home() -> Path:
    """``$HERMES_HOME``, or ``~/.hermes``."""
    raw = os.environ.get("HERMES_HOME", "").strip()
    return Path(raw).expanduser() if raw else Path.home() / ".hermes"


# --------------------------------------------------------------------------- pure functions of the config


def plugin_settings(config: dict) -> PluginSettings:
    """This plugin's settings in ``config``; raises :class:`ConfigError` for a bad value."""
    return PluginSettings.from_mapping(_section(config, "plugins", "entries", PLUGIN_NAME, "settings"))


def skills_roots(config: dict, home: Path) -> list[SkillsRoot]:
    """``HOME/skills`` first, then every ``skills.external_dirs`` entry.

    Relative external entries resolve against the Hermes home, as Hermes does.
    """
    local = (home / "skills").resolve()
    roots = [SkillsRoot(local)]
    raw = _section(config, "skills").get("external_dirs")
    if isinstance(raw, str):
        raw = [raw]
    seen = {local}
    for entry in raw if isinstance(raw, list) else []:
        text = str(entry).strip()
        if not text:
            continue
        path = Path(os.path.expandvars(os.path.expanduser(text)))
        path = (path if path.is_absolute() else home / path).resolve()
        if path not in seen:
            seen.add(path)
            roots.append(SkillsRoot(path, external=True))
    return roots


def disabled_skill_names(config: dict, platform: str | None = None) -> frozenset[str]:
    """``skills.disabled`` plus ``skills.platform_disabled.<platform>``."""
    skills = _section(config, "skills")
    names = _string_set(skills.get("disabled"))
    if platform:
        per_platform = skills.get("platform_disabled")
        if isinstance(per_platform, dict):
            names |= _string_set(per_platform.get(platform))
    return names


def index_dir(settings: Settings, home: Path) -> Path:
    """Index folder: ``$SEMANTIC_SKILLS_INDEX_DIR``, else the ``index_dir`` setting (relative to the
    Hermes home), else the plugin's own ``skills_index/``."""
    env = os.environ.get(INDEX_DIR_ENV, "").strip()
    if env:
        return Path(env).expanduser()
    if settings.index_dir:
        path = Path(os.path.expandvars(settings.index_dir)).expanduser()
        return path if path.is_absolute() else home / path
    root = plugin_root()
    if root is not None:
        return root / "skills_index"
    return home / "plugins" / PLUGIN_NAME / "skills_index"


def plugin_root() -> Path | None:
    """The source checkout holding this package and ``plugin.yaml``, if any."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "plugin.yaml").is_file() else None


def _section(config: dict, *keys: str) -> dict:
    node: Any = config
    for key in keys:
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else {}


def _string_set(values: Any) -> frozenset[str]:
    if values is None:
        return frozenset()
    if isinstance(values, str):
        values = [values]
    if not isinstance(values, (list, tuple, set)):
        return frozenset()
    return frozenset(str(v).strip() for v in values if str(v).strip())


# --------------------------------------------------------------------------- reading config.yaml

_config_cache: dict[str, tuple[tuple, dict]] = {}
_config_lock = threading.Lock()


def load_config(home: Path) -> dict:
    """Parse ``HOME/config.yaml``; ``{}`` when absent or invalid.

    Cached on the file's stamp, so callers on a hot path pay a ``stat`` per
    call, not a YAML parse; an unchanged file gives the same dict object.
    """
    path = home / "config.yaml"
    stamp = file_stamp(path)
    if stamp is None:
        return {}
    key = str(path)
    with _config_lock:
        cached = _config_cache.get(key)
        if cached and cached[0] == stamp:
            return cached[1]
    import yaml

    try:
        # libyaml's loader when present: Hermes' ~15 KB config parses several times faster,
        # and a changed config is read again by the next hook call, on the gateway's loop.
        data = yaml.load(path.read_text(encoding="utf-8", errors="replace"),
                         Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (OSError, yaml.YAMLError):
        data = None
    if not isinstance(data, dict):
        data = {}
    with _config_lock:
        _config_cache[key] = (stamp, data)
    return data
