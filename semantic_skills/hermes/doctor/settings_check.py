"""The doctor's settings line: each invalid value with what the plugin really uses instead, and each key that is
no setting, with the exact commands that fix them.

It reads the settings through :func:`~semantic_skills.hermes.config.read_settings`, as the runtime does, so
what it says falls back is what falls back.
"""

from __future__ import annotations

import difflib
import shlex

import yaml

from ...gates import EMBEDDER_GATES, FLOOR, Gate
from ...settings import EMBEDDER_BACKENDS, SettingProblem
from ..config import ENTRY_KEY, SETTINGS_KEY, in_use_instead, not_a_setting, unknown_settings
from .dependencies import index_manifest
from .report import OK, WARN, Check, Setup


def settings_check(setup: Setup) -> Check:
    """The settings are valid, and every key in the plugin's part of config.yaml is one the plugin reads."""
    config = setup.home / "config.yaml"
    unknown = unknown_settings(setup.config)
    if not (setup.problems or unknown):
        return Check("settings", OK, f"valid ({SETTINGS_KEY} in {config})")
    floor, source = index_floor(setup)
    details = [f"{problem.describe()}: {in_use_instead(problem, f'{floor:.2f} ({source})')}"
               for problem in setup.problems]
    if setup.problems:
        details[-1] += "; every other setting applies as set"
    if unknown:
        details.append(f"ignored by the plugin: {'; '.join(not_a_setting(key, meant) for key, meant in unknown)}")
    fixes = [_unset(setup, problem) for problem in setup.problems]
    renames = [_rename(setup.config, setup.hermes, key, meant) for key, meant in unknown]
    fixes += [fix for fix, _ in renames]
    choices = "; ".join(filter(None, [*(_choose(setup, problem, floor) for problem in setup.problems),
                                      *(keep for _, keep in renames)]))
    facts = {"invalid": [p.as_dict() for p in setup.problems], "unknown": [key for key, _ in unknown],
             "config": str(config)}
    return Check("settings", WARN, "; ".join(details), " && ".join(fixes), facts, choices)


def index_floor(setup: Setup) -> tuple[float, str]:
    """The floor routing uses without a threshold setting, and whose it is: the index's calibrated value, else the
    default of the embedder that built it (as ``SkillRouter`` chooses)."""
    manifest = index_manifest(setup.index_dir)
    router = manifest.get("router")
    value = router.get("threshold") if isinstance(router, dict) else None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return max(FLOOR, float(value)), "the index's calibrated value"
    embedder = manifest.get("embedder") if isinstance(manifest.get("embedder"), dict) else {}
    fitted = EMBEDDER_GATES.get((str(embedder.get("backend")), str(embedder.get("model"))))
    if fitted is not None:
        return fitted.floor, f"the default floor for {embedder.get('backend')} {embedder.get('model')}"
    return Gate().floor, "the default floor"


def _unset(setup: Setup, problem: SettingProblem) -> str:
    """Back to the default, which is what the plugin uses now: the warning goes and nothing else changes."""
    where = f"{ENTRY_KEY}.settings" if problem.key == "settings" else f"{SETTINGS_KEY}.{problem.key}"
    return f"{setup.hermes} config unset {where}"


def _choose(setup: Setup, problem: SettingProblem, floor: float) -> str:
    """To pick a value instead: what the setting may be, and the command that sets one (the choice nearest what
    was typed, else the default, for the threshold the floor in use)."""
    if problem.key == "settings":
        return ""
    if problem.key == "embedder":
        return (f"to choose the embedder, one field at a time (the backend: {', '.join(EMBEDDER_BACKENDS)}): "
                f"{setup.hermes} config set {SETTINGS_KEY}.embedder.backend {EMBEDDER_BACKENDS[0]}")
    if problem.choices:
        near = difflib.get_close_matches(str(problem.value), problem.choices, n=1, cutoff=0.5)
        example = near[0] if near else next((c for c in problem.choices if c != problem.using), problem.choices[0])
    elif problem.key == "threshold":
        example = f"{floor:.2f}"
    elif isinstance(problem.using, bool):
        example = str(not problem.using).lower()
    else:
        example = problem.using
    value = shlex.quote(str(example)) if str(example) != "" else "''"
    return f"to set {problem.key} to {problem.expected}: {setup.hermes} config set {SETTINGS_KEY}.{problem.key} {value}"


def _rename(config: dict, hermes: str, key: str, meant: str | None) -> tuple[str, str]:
    """The commands that move ``key``'s value to ``meant`` (both below ENTRY_KEY): ``hermes config set`` for each
    field first (a mapping field by field), then ``hermes config unset`` of ``key``, so nothing is lost if a set
    fails; and, when that replaces a value ``meant`` holds, the command that keeps it instead. A field is not moved
    onto a section (it would wipe the section's other fields), nor where it is already set to the same value."""
    entry = config["plugins"]["entries"]["semantic-skills"]
    unset = f"{hermes} config unset {shlex.quote(f'{ENTRY_KEY}.{key}')}"
    if meant is None:
        return unset, ""
    moves = [(f"{meant}{suffix}", leaf) for suffix, leaf in _leaves(_at(entry, key), "")
             if leaf is not None and _at(entry, f"{meant}{suffix}") != leaf
             and not isinstance(_at(entry, f"{meant}{suffix}"), dict)]
    sets = [f"{hermes} config set {shlex.quote(f'{ENTRY_KEY}.{path}')} {_config_value(leaf)}" for path, leaf in moves]
    replaced = [f"{ENTRY_KEY}.{path} at {_at(entry, path)!r}" for path, _ in moves if _at(entry, path) is not None]
    keep = f"to keep {', '.join(replaced)}, drop {ENTRY_KEY}.{key} instead: {unset}" if replaced else ""
    return " && ".join([*sets, unset]), keep


def _config_value(value) -> str:
    """``value`` as ``hermes config set`` takes it, quoted for the shell: true or false, a number, a list as a YAML
    flow sequence (which Hermes 0.22 reads as a list, 0.19 and 0.20 as its text), text as it is."""
    if isinstance(value, bool):
        text = str(value).lower()
    elif isinstance(value, list):
        text = yaml.safe_dump(value, default_flow_style=True, width=float("inf")).strip()
    else:
        text = str(value)
    return shlex.quote(text)


def _leaves(value, suffix: str):
    """(".a.b", leaf) for each field under ``value`` that is not a mapping (itself when it is not one)."""
    if isinstance(value, dict):
        for name, inner in value.items():
            yield from _leaves(inner, f"{suffix}.{name}")
    else:
        yield suffix, value


def _at(mapping: dict, dotted: str):
    for part in dotted.split("."):
        mapping = mapping.get(part) if isinstance(mapping, dict) else None
    return mapping
