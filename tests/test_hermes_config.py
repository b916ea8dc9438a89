"""Hermes' config.yaml as the plugin and the command line read it: skills roots and disabled skills."""

from __future__ import annotations

from pathlib import Path

from semantic_skills.hermes.config import disabled_skill_names, load_config, skills_roots
from semantic_skills.skills.discovery import discover_skills

from support import write_skill


def roots(home: Path):
    return skills_roots(load_config(home), home)


def disabled(home: Path, platform: str | None = None) -> frozenset[str]:
    return disabled_skill_names(load_config(home), platform)


def test_external_dirs_from_config_become_roots_after_the_local_one(_isolated_hermes_home, tmp_path):
    home = _isolated_hermes_home
    absolute = tmp_path / "abs-skills"
    (home / "config.yaml").write_text(
        f"skills:\n  external_dirs:\n    - {absolute}\n    - team/skills\n    - {absolute}\n    - ''\n"
    )
    write_skill(home / "skills", "local-one", "---\nname: shared\ndescription: local\n---\n")
    write_skill(absolute, "abs-one", "---\nname: from-absolute\n---\n")
    write_skill(home / "team" / "skills", "rel-one", "---\nname: shared\ndescription: team\n---\n")
    write_skill(home / "team" / "skills", "rel-two", "---\nname: from-relative\n---\n")

    found_roots = roots(home)
    assert [(r.path, r.external) for r in found_roots] == [
        ((home / "skills").resolve(), False),
        (absolute.resolve(), True),
        ((home / "team" / "skills").resolve(), True),
    ]
    found = discover_skills(found_roots)
    assert {s.name: s.description for s in found.skills}["shared"] == "local"
    assert sorted(s.name for s in found.skills) == ["from-absolute", "from-relative", "shared"]
    assert [d.name for d in found.duplicates] == ["shared"]


def test_external_dirs_may_be_a_single_string(_isolated_hermes_home, tmp_path):
    (_isolated_hermes_home / "config.yaml").write_text(f"skills:\n  external_dirs: {tmp_path}\n")
    assert [r.path for r in roots(_isolated_hermes_home)][1:] == [tmp_path.resolve()]


def test_disabled_skill_names_read_global_and_per_platform_lists(_isolated_hermes_home):
    (_isolated_hermes_home / "config.yaml").write_text(
        "skills:\n  disabled: [alpha, ' beta ']\n  platform_disabled:\n"
        "    telegram: [gamma]\n    discord: delta\n"
    )
    assert disabled(_isolated_hermes_home) == {"alpha", "beta"}
    assert disabled(_isolated_hermes_home, "telegram") == {"alpha", "beta", "gamma"}
    assert disabled(_isolated_hermes_home, "discord") == {"alpha", "beta", "delta"}
    assert disabled(_isolated_hermes_home, "cli") == {"alpha", "beta"}


def test_missing_or_invalid_config_disables_nothing(_isolated_hermes_home):
    assert disabled(_isolated_hermes_home, "telegram") == frozenset()
    (_isolated_hermes_home / "config.yaml").write_text("skills: [not, a, mapping\n")
    assert disabled(_isolated_hermes_home, "telegram") == frozenset()
    assert [r.external for r in roots(_isolated_hermes_home)] == [False]


def test_a_string_holding_a_list_is_that_list_as_the_newest_hermes_reads_it(_isolated_hermes_home):
    """``hermes config set skills.disabled '["a","b"]'`` stores a string (upstream #86661)."""
    (_isolated_hermes_home / "config.yaml").write_text(
        "skills:\n  disabled: '[\"alpha\", \"beta\"]'\n  platform_disabled:\n    telegram: '[gamma'\n"
    )
    assert disabled(_isolated_hermes_home) == {"alpha", "beta"}
    assert disabled(_isolated_hermes_home, "telegram") == {"alpha", "beta", "[gamma"}  # not a list: one name
