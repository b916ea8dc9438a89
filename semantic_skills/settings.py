"""Where things live and what the user configured.

Reads ``$HERMES_HOME/config.yaml`` as a plain YAML file (no Hermes import):
the skills roots, ``skills.disabled`` / ``skills.platform_disabled`` and this
plugin's settings under ``plugins.entries.semantic-skills.settings``.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .files import file_stamp

PLUGIN_NAME = "semantic-skills"
INDEX_DIR_ENV = "SEMANTIC_SKILLS_INDEX_DIR"
PROMPT_MODES = ("compact", "full")
EMBEDDER_BACKENDS = ("sentence-transformers", "onnx", "litellm")


def hermes_home() -> Path:
    """``$HERMES_HOME``, or ``~/.hermes``."""
    raw = os.environ.get("HERMES_HOME", "").strip()
    return Path(raw).expanduser() if raw else Path.home() / ".hermes"


_config_cache: dict[str, tuple[tuple[int, int, int, int], dict]] = {}
_config_lock = threading.Lock()


def load_hermes_config(home: Path | None = None) -> dict:
    """Parse ``config.yaml`` under the Hermes home; ``{}`` when absent or invalid.

    Cached on the file's inode, mtime, ctime and size, so callers on a hot
    path pay a ``stat`` per call, not a YAML parse.
    """
    path = (home or hermes_home()) / "config.yaml"
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


@dataclass(frozen=True)
class SkillsRoot:
    """A folder searched for SKILL.md files; ``external`` roots lose name clashes."""

    path: Path
    external: bool = False


def hermes_skills_roots(home: Path | None = None) -> list[SkillsRoot]:
    """``$HERMES_HOME/skills`` first, then every ``skills.external_dirs`` entry.

    Relative external entries resolve against the Hermes home, as Hermes does.
    """
    home = home or hermes_home()
    local = (home / "skills").resolve()
    roots = [SkillsRoot(local)]
    raw = _section(load_hermes_config(home), "skills").get("external_dirs")
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


def disabled_skill_names(platform: str | None = None, home: Path | None = None) -> frozenset[str]:
    """``skills.disabled`` plus ``skills.platform_disabled.<platform>``."""
    skills = _section(load_hermes_config(home), "skills")
    names = _string_set(skills.get("disabled"))
    if platform:
        per_platform = skills.get("platform_disabled")
        if isinstance(per_platform, dict):
            names |= _string_set(per_platform.get(platform))
    return names


@dataclass(frozen=True)
class EmbedderSettings:
    """Which embedder to use; see README "Configuration"."""

    backend: str = "sentence-transformers"
    model: str = ""  # empty: the backend's default
    api_base: str = ""
    api_key_env: str = ""
    query_prefix: str = ""
    document_prefix: str = ""
    batch_size: int = 0  # 0: the backend's default, 16 texts for local models and 64 for litellm
    timeout_ms: int = 200  # per query at chat time; builds allow 30 s per batch


@dataclass(frozen=True)
class Settings:
    """Plugin settings with their defaults."""

    index_dir: str = ""
    embedder: EmbedderSettings = field(default_factory=EmbedderSettings)
    threshold: float | None = None  # None: the index's calibrated value, else 0.30
    max_skill_chars: int = 16000
    max_tool_chars: int = 16000
    prompt_mode: str = "compact"
    dedupe_max_sessions: int = 2000
    dedupe_ttl_seconds: int = 86400
    route_timeout_ms: int = 0  # 0: 24 ms for local embedders, 200 ms for litellm
    warmup_wait_seconds: float = 15.0

    @classmethod
    def from_mapping(cls, raw: dict) -> "Settings":
        """Build settings from a config mapping; unknown keys are ignored."""
        if not isinstance(raw, dict):
            raise ConfigError(f"plugin settings must be a mapping, got {type(raw).__name__}")
        values = {f.name: raw[f.name] for f in fields(cls) if f.name in raw and f.name != "embedder"}
        embedder_raw = raw.get("embedder") or {}
        if isinstance(embedder_raw, str):
            embedder_raw = {"backend": embedder_raw}
        if not isinstance(embedder_raw, dict):
            raise ConfigError("settings.embedder must be a mapping or a backend name")
        embedder = EmbedderSettings(
            **{f.name: embedder_raw[f.name] for f in fields(EmbedderSettings) if f.name in embedder_raw}
        )
        settings = cls(embedder=_coerce(embedder), **values)
        settings = _coerce(settings)
        if settings.prompt_mode not in PROMPT_MODES:
            raise ConfigError(
                f"prompt_mode must be one of {', '.join(PROMPT_MODES)}, got {settings.prompt_mode!r}"
            )
        if settings.threshold is not None and not 0.30 <= settings.threshold <= 1.0:
            raise ConfigError(f"threshold must be between 0.30 and 1.0, got {settings.threshold}")
        for name, low, high in _RANGES:
            value = getattr(settings, name)
            if not low <= value <= high:
                raise ConfigError(f"{name} must be between {low} and {high}, got {value}")
        return settings


_RANGES = (
    ("max_skill_chars", 500, 200_000),
    ("max_tool_chars", 500, 200_000),
    ("dedupe_max_sessions", 1, 1_000_000),
    ("dedupe_ttl_seconds", 60, 365 * 86400),
    ("route_timeout_ms", 0, 10_000),
    ("warmup_wait_seconds", 0, 600),
)


def _coerce(obj):
    """Coerce each field to its default's type (YAML may give ``"0.4"`` for 0.4)."""
    changes = {}
    for f in fields(obj):
        value = getattr(obj, f.name)
        if f.name == "embedder" or value is None:
            continue
        kind = float if f.name == "threshold" else type(f.default)
        if type(value) is kind:
            continue
        try:
            changes[f.name] = kind(value)
        except (TypeError, ValueError):
            raise ConfigError(f"setting {f.name!r} must be a {kind.__name__}, got {value!r}") from None
    return replace(obj, **changes) if changes else obj


def load_settings(home: Path | None = None) -> Settings:
    """This plugin's settings from ``plugins.entries.semantic-skills.settings``."""
    raw = _section(load_hermes_config(home), "plugins", "entries", PLUGIN_NAME, "settings")
    return Settings.from_mapping(raw)


def plugin_root() -> Path | None:
    """The source checkout holding this package and ``plugin.yaml``, if any."""
    root = Path(__file__).resolve().parent.parent
    return root if (root / "plugin.yaml").is_file() else None


def default_index_dir(settings: Settings | None = None, home: Path | None = None) -> Path:
    """Index folder: ``$SEMANTIC_SKILLS_INDEX_DIR``, else the ``index_dir`` setting,
    else the plugin's own ``skills_index/``."""
    env = os.environ.get(INDEX_DIR_ENV, "").strip()
    if env:
        return Path(env).expanduser()
    if settings is not None and settings.index_dir:
        path = Path(os.path.expandvars(settings.index_dir)).expanduser()
        return path if path.is_absolute() else (home or hermes_home()) / path
    root = plugin_root()
    if root is not None:
        return root / "skills_index"
    return (home or hermes_home()) / "plugins" / PLUGIN_NAME / "skills_index"
