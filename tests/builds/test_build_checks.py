"""Hermes' own checks of a plugin, where a build has them: ``plugins validate``, ``plugins doctor --ci`` and the
install scanner, each over a clean clone of this checkout."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from buildkit import DRIVERS, MAKE_BUILDS, installed_builds


@pytest.fixture()
def scratch_home(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    return home


def test_plugins_validate_passes_with_no_failure(build, checkout, elsewhere, scratch_home):
    if not build.can("plugins_validate"):
        pytest.skip(f"Hermes {build.label} has no `plugins validate`")
    done = build.run(scratch_home, "plugins", "validate", str(checkout), cwd=elsewhere)
    failed = [line for line in done.stdout.splitlines() if line.startswith("✗")]
    assert done.returncode == 0 and not failed and "Validation passed." in done.stdout, done.explain()
    for check in ("✓ capability probe", "✓ security scan — safe", "✓ no core override", "✓ declared middleware"):
        assert check in done.stdout, done.explain()


def test_the_plugin_imports_no_private_module_of_hermes(build, checkout, elsewhere, scratch_home):
    """validate's advisory "private core imports", kept to Hermes' own modules: the plugin reaches Hermes only
    through its public plugin API and lookups by name (semantic_skills/hermes/host); the benchmarks may import
    Hermes' internals, and are never loaded by Hermes."""
    done = build.run_python(scratch_home, str(DRIVERS / "hermes_imports.py"), str(checkout), cwd=elsewhere)
    assert done.returncode == 0, done.explain()
    found = json.loads(done.stdout)
    if found is None:
        pytest.skip(f"Hermes {build.label} has no private-import check")
    assert not [f for f in found if not f.startswith("benchmarks/")], found


def test_plugins_doctor_ci_prints_no_warning(build, checkout, elsewhere, scratch_home):
    if not build.can("plugins_doctor"):
        pytest.skip(f"Hermes {build.label} has no `plugins doctor`")
    done = build.run(scratch_home, "plugins", "doctor", "--ci", str(checkout), cwd=elsewhere)
    assert done.returncode == 0 and "OK: " in done.stdout, done.explain()
    assert not [line for line in done.output.splitlines() if "WARN" in line.upper() or "ERROR" in line], \
        done.explain()


def test_the_install_scanner_finds_nothing_high_or_critical(checkout, elsewhere, tmp_path):
    """Every installed Hermes with the install scanner: a high finding makes the verdict caution, which blocks a
    non-interactive install and every `hermes plugins update`; a critical one blocks all installs."""
    scanners = [build for build in installed_builds() if build.can("scanner")]
    if not scanners:
        pytest.skip(f"no Hermes with the install scanner (tools.plugin_guard) here: `{MAKE_BUILDS}` makes one")
    for build in scanners:
        done = build.run_python(tmp_path, str(DRIVERS / "scan.py"), str(checkout), cwd=elsewhere)
        assert done.returncode == 0, done.explain()
        scan = json.loads(done.stdout)
        serious = [f for f in scan["findings"] if f["severity"] in ("high", "critical")]
        assert not serious and scan["verdict"] == "safe", (build.label, serious)
        assert Counter(f["severity"] for f in scan["findings"]).keys() <= {"medium", "low", "info"}
