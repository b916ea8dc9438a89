"""plugin.yaml against the code and pyproject.toml: what both Hermes generations read from it stays true."""

from __future__ import annotations

import tomllib
from dataclasses import fields

import pytest
import yaml

from semantic_skills.hermes.config import PROMPT_MODES, PluginSettings
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
    assert {"requires_hermes", "python_dependencies", "config_schema"} <= set(MANIFEST)


def test_requires_hermes_admits_the_oldest_supported_hermes():
    """Clauses as upstream main's ``plugins_manifest`` reads them: comparison, version, comma for AND."""
    for clause in MANIFEST["requires_hermes"].split(","):
        operator = clause.strip().rstrip("0123456789.")
        version = tuple(int(p) for p in clause.strip()[len(operator):].split("."))
        assert operator == ">=" and version <= (0, 19, 0)


def test_python_dependencies_are_pyprojects():
    assert MANIFEST["python_dependencies"] == PYPROJECT["project"]["dependencies"]


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
