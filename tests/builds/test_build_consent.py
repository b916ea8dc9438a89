"""A build that asks before preparing a plugin's Python dependencies (0.22's ``plugins install`` prompt and its
``--yes-deps`` / ``--no-deps``): each answer, on a fresh home, with PM's download replaced as
hermes_without_pm.py describes. ``--yes-deps`` is how every other test here installs (test_build_install.py)."""

from __future__ import annotations

import pytest

from buildkit import enabled_plugins, install_args, pm_record, run_on_terminal
from hermes_testkit import PLUGIN

PROMPT = "Prepare these with Hermes through PM now? [y/N]"


@pytest.fixture()
def consenting(build):
    if not build.can("yes_deps"):
        pytest.skip(f"Hermes {build.label} asks no consent for a plugin's Python dependencies")
    return build


@pytest.fixture()
def home(tmp_path):
    path = tmp_path / "home"
    path.mkdir()
    return path


def published(record: list[dict]) -> list[tuple]:
    """What PM was asked to publish: the plugin tree (and whether it was enabled), then each plugin selection."""
    return [("tree", call["active"]) if call["kind"] == "staged" else ("enabled", call["enabled"])
            for call in record]


def test_answering_y_on_a_terminal_prepares_the_dependencies_and_enables_the_plugin(consenting, checkout, elsewhere,
                                                                                   home, tmp_path):
    record = tmp_path / "pm.jsonl"
    argv = consenting.argv("plugins", "install", checkout.as_uri(), "--enable")
    done = run_on_terminal(argv, consenting.env(home, PM_RECORD=str(record)), elsewhere, {"Prepare these": "y"})

    assert done.returncode == 0, done.screen
    assert [q.strip() for q in done.questions] == [PROMPT + ":"], done.screen  # the scan asks nothing
    assert "semantic-skills declares Python dependencies:" in done.screen and "faiss-cpu>=1.8,<2" in done.screen
    assert f"✓ Plugin {PLUGIN} enabled." in done.screen
    assert published(pm_record(record)) == [("tree", False), ("enabled", [PLUGIN])]
    assert enabled_plugins(home) == [PLUGIN]


def test_a_non_interactive_install_stays_disabled_until_plugins_enable(consenting, checkout, elsewhere, home,
                                                                       tmp_path):
    record = str(tmp_path / "pm.jsonl")
    args = [a for a in install_args(consenting, checkout) if a != "--yes-deps"]
    installed = consenting.run(home, *args, cwd=elsewhere, PM_RECORD=record)

    assert installed.returncode == 0, installed.explain()
    assert "Non-interactive install — skipping dependency install." in installed.stdout, installed.explain()
    assert f"✗ Cannot enable {PLUGIN}: dependency install skipped (non-interactive)" in installed.stdout
    assert "The plugin stays installed but disabled" in installed.stdout
    assert (home / "plugins" / PLUGIN / "plugin.yaml").is_file() and PLUGIN not in enabled_plugins(home)

    enabled = consenting.run(home, "plugins", "enable", PLUGIN, cwd=elsewhere, PM_RECORD=record)

    assert enabled.returncode == 0 and f"✓ Plugin {PLUGIN} enabled." in enabled.stdout, enabled.explain()
    assert published(pm_record(tmp_path / "pm.jsonl")) == [("tree", False), ("enabled", [PLUGIN])]
    assert enabled_plugins(home) == [PLUGIN]


def test_no_deps_installs_the_plugin_disabled_until_plugins_enable(consenting, checkout, elsewhere, home, tmp_path):
    record = tmp_path / "pm.jsonl"
    args = [a for a in install_args(consenting, checkout, "--no-deps") if a != "--yes-deps"]
    installed = consenting.run(home, *args, cwd=elsewhere, PM_RECORD=str(record))

    assert installed.returncode == 0, installed.explain()
    assert "--no-deps: skipping dependency consent; the plugin stays disabled." in installed.stdout
    assert (home / "plugins" / PLUGIN / "plugin.yaml").is_file() and PLUGIN not in enabled_plugins(home)
    assert published(pm_record(record)) == [("tree", False)]

    enabled = consenting.run(home, "plugins", "enable", PLUGIN, cwd=elsewhere, PM_RECORD=str(record))

    assert enabled.returncode == 0 and f"✓ Plugin {PLUGIN} enabled." in enabled.stdout, enabled.explain()
    assert published(pm_record(record)) == [("tree", False), ("enabled", [PLUGIN])]
    assert enabled_plugins(home) == [PLUGIN]
