"""Settings: which index, which embedder and which similarity floor; plain dataclasses and their validation.

They are built from a plain mapping of setting names to values; where that
mapping comes from is the caller's business. A host adds its own fields by
subclassing :class:`Settings`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import ClassVar

from .errors import ConfigError

EMBEDDER_BACKENDS = ("sentence-transformers", "onnx", "litellm")
FLOOR_RANGE = (0.30, 1.0)


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

    @classmethod
    def from_mapping(cls, raw) -> "EmbedderSettings":
        """Embedder settings from a mapping, or from a bare backend name; unknown keys are ignored."""
        raw = raw or {}
        if isinstance(raw, str):
            raw = {"backend": raw}
        if not isinstance(raw, dict):
            raise ConfigError("settings.embedder must be a mapping or a backend name")
        return _coerce(cls(**{f.name: raw[f.name] for f in fields(cls) if f.name in raw}))


@dataclass(frozen=True)
class Settings:
    """The core's settings with their defaults.

    ``floor`` is the similarity floor, below which nothing is injected, not
    even a hint (None: the index's calibrated value, else 0.38; never below
    0.30); its setting is named ``threshold``.
    """

    index_dir: str = ""
    embedder: EmbedderSettings = field(default_factory=EmbedderSettings)
    floor: float | None = None

    SETTING_NAMES: ClassVar[dict[str, str]] = {"floor": "threshold"}  # fields whose setting has another name
    RANGES: ClassVar[tuple[tuple[str, float, float], ...]] = ()  # (field, lowest, highest) checked by check()

    @classmethod
    def from_mapping(cls, raw: dict):
        """Settings from a mapping of setting names; unknown keys are ignored, bad values raise ConfigError."""
        if not isinstance(raw, dict):
            raise ConfigError(f"plugin settings must be a mapping, got {type(raw).__name__}")
        values = {f.name: raw[setting_name(f.name)] for f in fields(cls)
                  if f.name != "embedder" and setting_name(f.name) in raw}
        settings = _coerce(cls(embedder=EmbedderSettings.from_mapping(raw.get("embedder")), **values))
        settings.check()
        return settings

    def check(self) -> None:
        """Raise :class:`ConfigError` for a value out of its range."""
        low, high = FLOOR_RANGE
        if self.floor is not None and not low <= self.floor <= high:
            raise ConfigError(f"{setting_name('floor')} must be between {low:.2f} and {high}, got {self.floor}")
        for name, low, high in self.RANGES:
            value = getattr(self, name)
            if not low <= value <= high:
                raise ConfigError(f"{name} must be between {low} and {high}, got {value}")


def setting_name(field_name: str) -> str:
    """The name a setting has in configuration files (``floor`` is ``threshold``)."""
    return Settings.SETTING_NAMES.get(field_name, field_name)


def _coerce(obj):
    """Coerce each field to its default's type (YAML may give ``"0.4"`` for 0.4); a None default means a number."""
    changes = {}
    for f in fields(obj):
        value = getattr(obj, f.name)
        if f.name == "embedder" or value is None:
            continue
        kind = float if f.default is None else type(f.default)
        if type(value) is kind:
            continue
        try:
            changes[f.name] = _as_bool(value) if kind is bool else kind(value)
        except (TypeError, ValueError):
            raise ConfigError(f"setting {setting_name(f.name)!r} must be a {kind.__name__}, got {value!r}") from None
    return replace(obj, **changes) if changes else obj


_BOOL_WORDS = {"true": True, "yes": True, "on": True, "1": True, "false": False, "no": False, "off": False, "0": False}


def _as_bool(value) -> bool:
    """``true``/``false`` as YAML or a command line may spell them (``"off"``, ``0``); ValueError otherwise."""
    word = str(value).strip().lower()
    if word not in _BOOL_WORDS:
        raise ValueError(word)
    return _BOOL_WORDS[word]
