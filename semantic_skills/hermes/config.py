"""What Hermes' configuration says to this plugin, read as plain YAML.

Pure functions of a config mapping (``config.yaml`` as parsed) give the skills
roots, the disabled skills and this plugin's settings under
``plugins.entries.semantic-skills.settings`` (or, where Hermes offers
``ctx.get_config``, read through it key by key); :func:`load_config` reads
that mapping from the Hermes home. Nothing here imports Hermes. Importing this
module costs no more than the core's settings: the command line uses it for
its Hermes defaults.
"""

from __future__ import annotations

import ast
import difflib
import os
import re
import shlex
import threading
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Callable, ClassVar

from ..files import file_stamp, read_regular_file
from ..gates import DEFAULT_FLOOR
from ..limits import DEFAULT_MAX_SKILL_CHARS
from ..logs import logger
from ..settings import EmbedderSettings, SettingProblem, Settings, setting_name
from ..skills.discovery import SkillsRoot
from .host.lookup import hermes_script
from .prompt.stub import COMPACT, PROMPT_MODES

PLUGIN_NAME = "semantic-skills"
ENTRY_KEY = f"plugins.entries.{PLUGIN_NAME}"  # this plugin's part of config.yaml, as `hermes config set` names it
SETTINGS_KEY = f"{ENTRY_KEY}.settings"
INDEX_DIR_ENV = "SEMANTIC_SKILLS_INDEX_DIR"
DECISION_RECORD_FILE = "decisions.jsonl"  # in the plugin's state folder
INDEX_FOLDER = "skills_index"  # the default index, in the state folder


@dataclass(frozen=True)
class PluginSettings(Settings):
    """The core's settings plus what only the Hermes side uses, with their defaults."""

    max_skill_chars: int = DEFAULT_MAX_SKILL_CHARS
    max_tool_chars: int = DEFAULT_MAX_SKILL_CHARS
    prompt_mode: str = COMPACT
    dedupe_max_sessions: int = 2000
    dedupe_ttl_seconds: int = 86400
    route_timeout_ms: int = 0  # 0: from the answers timed (24-45 ms) for local embedders, 200 ms for litellm
    warmup_wait_seconds: float = 15.0
    record_decisions: bool = True
    record_message_text: bool = False
    record_max_bytes: int = 4_000_000

    CHOICES: ClassVar[tuple[tuple[str, tuple[str, ...]], ...]] = (("prompt_mode", PROMPT_MODES),)
    RANGES: ClassVar[tuple[tuple[str, float, float], ...]] = (
        ("max_skill_chars", 500, 200_000),
        ("max_tool_chars", 500, 200_000),
        ("dedupe_max_sessions", 1, 1_000_000),
        ("dedupe_ttl_seconds", 60, 365 * 86400),
        ("route_timeout_ms", 0, 10_000),
        ("warmup_wait_seconds", 0, 600),
        ("record_max_bytes", 100_000, 1_000_000_000),
    )


SETTING_KEYS = tuple(setting_name(f.name) for f in fields(PluginSettings))
_ABSENT = object()


def hermes_cli(home: Path) -> str:
    """How to run Hermes (``hermes``, or a repackaging's own command) on ``home`` from a shell: told which home
    when it is not the default one."""
    return f"{home_prefix(home)}{hermes_script()}"


def home_prefix(home: Path) -> str:
    """What a shell command that must run on ``home`` starts with: ``HERMES_HOME=... ``, or nothing for the
    default home."""
    if Path(home).expanduser().resolve() == (Path.home() / ".hermes").resolve():
        return ""
    return f"HERMES_HOME={shlex.quote(str(home))} "


def hermes_command(home: Path) -> str:
    """How to run this plugin's command line on ``home`` from a shell: ``hermes semantic-skills``, with
    ``HERMES_HOME=...`` first when ``home`` is not the default one (a profile's, say)."""
    return f"{hermes_cli(home)} {PLUGIN_NAME}"


def plugin_folder(home: Path) -> Path:
    """Where Hermes installs this plugin's code in ``home`` (``hermes plugins install``): code, never state."""
    return Path(home) / "plugins" / PLUGIN_NAME


def state_dir(home: Path) -> Path:
    """The plugin's own files in a Hermes home: the dedupe record, the decision record and, by default, the
    index."""
    return Path(home) / PLUGIN_NAME


def decision_record_path(home: Path) -> Path:
    """Where the decision record of ``home`` lives (its previous generation sits beside it)."""
    return state_dir(home) / DECISION_RECORD_FILE


# --------------------------------------------------------------------------- pure functions of the config


def read_settings(config: dict, get_config: Callable[[str, Any], Any] | None = None
                  ) -> tuple[PluginSettings, list[SettingProblem]]:
    """This plugin's settings as the plugin runs on them, and the invalid values it set aside.

    Each setting is read on its own (:meth:`Settings.parse`): an invalid value
    leaves that setting at its default, and only that one. The runtime, the
    command line and ``doctor`` all read settings here. With ``get_config``
    (Hermes' ``ctx.get_config(key, default)``) each setting is read through
    it, as Hermes resolves them; otherwise from ``config`` under
    ``plugins.entries.semantic-skills.settings``.
    """
    if get_config is None:
        return PluginSettings.parse(_section(config, "plugins", "entries", PLUGIN_NAME, "settings"))
    read = {key: get_config(key, _ABSENT) for key in SETTING_KEYS}
    return PluginSettings.parse({key: value for key, value in read.items() if value is not _ABSENT})


def in_use_instead(problem: SettingProblem, floor: str = "") -> str:
    """What the plugin uses instead of ``problem``'s value, in words; ``floor``: the floor routing uses without a
    threshold, in words, when the caller has read the index (else said in general)."""
    if problem.key == "threshold":
        general = f"the index calibrated floor, else its embedder's default ({DEFAULT_FLOOR} for the bundled model)"
        return f"routing uses {floor or general}"
    if problem.key in ("settings", "embedder"):
        return f"the plugin uses the default for every {'embedder field' if problem.key == 'embedder' else 'setting'}"
    shown = problem.using if problem.using != "" else "none"
    return f"the plugin uses {shown} (the default)"


def plugin_settings(config: dict, get_config: Callable[[str, Any], Any] | None = None) -> PluginSettings:
    """The settings :func:`read_settings` gives (an invalid value at its default)."""
    return read_settings(config, get_config)[0]


def unknown_settings(config: dict) -> list[tuple[str, str | None]]:
    """Keys in this plugin's part of the config that no setting has, each with the key probably meant (or None).

    Both are dotted paths below ``plugins.entries.semantic-skills``: a
    misspelt ``settings.embeder`` (``settings.embedder``), a misspelt
    embedder field, or a setting placed beside ``settings`` instead of in it.
    """
    entry = _section(config, "plugins", "entries", PLUGIN_NAME)
    found = [(str(key), f"settings.{key}") for key in entry if key in SETTING_KEYS]
    settings = _section(config, "plugins", "entries", PLUGIN_NAME, "settings")
    found += [(f"settings.{key}", _closest(str(key), SETTING_KEYS, "settings.")) for key in settings
              if key not in SETTING_KEYS]
    embedder = settings.get("embedder")
    if isinstance(embedder, dict):
        names = [f.name for f in fields(EmbedderSettings)]
        found += [(f"settings.embedder.{key}", _closest(str(key), names, "settings.embedder.")) for key in embedder
                  if key not in names]
    return found


def not_a_setting(key: str, meant: str | None) -> str:
    """One :func:`unknown_settings` entry, said to the user."""
    return f"{ENTRY_KEY}.{key} is not a setting" + (f" (did you mean {ENTRY_KEY}.{meant}?)" if meant else "")


def _closest(key: str, names, prefix: str) -> str | None:
    match = difflib.get_close_matches(key, list(names), n=1, cutoff=0.6)
    return prefix + match[0] if match else None


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
    """``skills.disabled`` plus ``skills.platform_disabled.<platform>``, read as the newest Hermes reads them.

    A string is one name, unless it holds a list (``'["a", "b"]'``, as
    ``hermes config set`` writes one).
    """
    skills = _section(config, "skills")
    names = _string_set(skills.get("disabled"))
    if platform:
        per_platform = skills.get("platform_disabled")
        if isinstance(per_platform, dict):
            names |= _string_set(per_platform.get(platform))
    return names


def index_dir(settings: Settings, home: Path) -> Path:
    """Index folder: ``$SEMANTIC_SKILLS_INDEX_DIR``, else the ``index_dir`` setting (relative to the
    Hermes home), else :func:`default_index_dir`."""
    env = os.environ.get(INDEX_DIR_ENV, "").strip()
    if env:
        return Path(env).expanduser()
    if settings.index_dir:
        path = Path(os.path.expandvars(settings.index_dir)).expanduser()
        return path if path.is_absolute() else home / path
    return default_index_dir(home)


def default_index_dir(home: Path) -> Path:
    """The index of ``home`` when no setting names one: ``HOME/semantic-skills/skills_index``, beside the
    plugin's other state. Never in the plugin folder, which is code and may be a link that other homes share."""
    return state_dir(home) / INDEX_FOLDER


def _section(config: dict, *keys: str) -> dict:
    node: Any = config
    for key in keys:
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else {}


def _string_set(values: Any) -> frozenset[str]:
    if isinstance(values, str):
        values = _listed(values)
    if not isinstance(values, (list, tuple, set)):
        return frozenset()
    return frozenset(str(v).strip() for v in values if str(v).strip())


def _listed(value: str) -> list:
    """A config string as a list: the list it spells (``'["a", "b"]'``), else itself as the only item."""
    if value.strip().startswith("["):
        try:
            parsed = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            parsed = None
        if isinstance(parsed, list):
            return parsed
    return [value]


# --------------------------------------------------------------------------- reading config.yaml

MAX_CONFIG_BYTES = 256 * 1024  # Hermes' own config.yaml is about 15 KB; a bigger one is not read
MAX_CONFIG_NESTING = 64  # brackets deep: libyaml's parser overflows the C stack on a few hundred thousand
MAX_CONFIG_NODES = 100_000  # values once aliases are expanded: a "billion laughs" file is refused

_config_cache: dict[str, tuple[tuple, dict]] = {}
_config_lock = threading.Lock()
_BRACKETS = re.compile(r"[\[\]{}]")


def load_config(home: Path) -> dict:
    """Parse ``HOME/config.yaml``; ``{}`` when absent, or when it cannot be used (logged once per version).

    Cached on the file's stamp, so callers on a hot path pay a ``stat`` per
    call, not a YAML parse; an unchanged file gives the same dict object. No
    file and no content holds a caller up for long: only a regular file is
    read (a FIFO at that path is refused, never waited on), only up to
    :data:`MAX_CONFIG_BYTES`, and parsed only if it nests at most
    :data:`MAX_CONFIG_NESTING` brackets deep.
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
    try:
        data = _parse_config(path)
    except ModuleNotFoundError:  # no pyyaml in this Python: the file is not at fault, the dependency check names it
        return {}
    except Exception as exc:  # noqa: BLE001 - any content at all: the plugin runs on its defaults
        logger.warning("semantic-skills: cannot use %s (%s); the plugin runs on its default settings until the "
                       "file changes", path, f"{type(exc).__name__}: {exc}"[:200])
        data = {}
    with _config_lock:
        _config_cache[key] = (stamp, data)
    return data


def _parse_config(path: Path) -> dict:
    text = read_regular_file(path, MAX_CONFIG_BYTES).decode("utf-8", errors="replace")
    if _bracket_depth(text) > MAX_CONFIG_NESTING:
        raise ValueError(f"nested more than {MAX_CONFIG_NESTING} brackets deep")
    import yaml

    # libyaml's loader when present: Hermes' ~15 KB config parses several times faster,
    # and a changed config is read again by the next hook call, on the gateway's loop.
    data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    if not isinstance(data, dict):
        return {}
    if _exceeds(data, MAX_CONFIG_NODES):
        raise ValueError(f"more than {MAX_CONFIG_NODES:,} values once its aliases are expanded")
    return data


def _bracket_depth(text: str) -> int:
    """How deep flow brackets nest in ``text`` (counting those in strings too: an upper bound)."""
    depth = deepest = 0
    for bracket in _BRACKETS.finditer(text):
        depth = depth + 1 if bracket.group() in "[{" else max(0, depth - 1)
        deepest = max(deepest, depth)
    return deepest


def _exceeds(data, limit: int) -> bool:
    """True if walking ``data`` (aliases expanded, cycles included) visits more than ``limit`` values."""
    stack, visited = [data], 0
    while stack:
        node = stack.pop()
        visited += 1
        if visited > limit:
            return True
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False
