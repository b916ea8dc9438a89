"""Which skills a message may be routed to, against Hermes' own rules: real 0.19 where it has them,
contract tests (fakes shaped as upstream main declares) for what only 0.21 has."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from semantic_skills.embedders.base import EmbedderIdentity
from semantic_skills.hermes.host import skills as hermes_skills
from semantic_skills.hermes.offer.rules import Eligibility
from semantic_skills.hermes.prompt import tools_view
from semantic_skills.index.manifest import Manifest, SkillRecord
from semantic_skills.logs import OnceLogger
from semantic_skills.skills.discovery import PROJECT
from semantic_skills.skills.parsing import parse_skill
from semantic_skills.worker.server import gated_skills

from hermes_testkit import resolve_auto_load_skills, set_active_org, wait_until
from support import write_skill

CONDITIONED = {
    "browser-fallback": "metadata:\n  hermes:\n    fallback_for_tools: [browser_navigate]\n",
    "needs-browser": "metadata:\n  hermes:\n    requires_tools: [browser_navigate]\n",
    "needs-web-toolset": "metadata:\n  hermes:\n    requires_toolsets: [web]\n",
    "web-fallback": "metadata:\n  hermes:\n    fallback_for_toolsets: [web]\n",
    "telegram-only": "metadata:\n  hermes:\n    session_platforms: [telegram]\n",
    "plain": "",
}


def write_skills(skills_dir: Path, skills: dict[str, str]) -> list[Path]:
    return [write_skill(skills_dir, f"cat/{name}",
                        f"---\nname: {name}\ndescription: {name} skill\n{extra}---\n# {name}\n")
            for name, extra in skills.items()]


def manifest_of(paths: list[Path], root: Path, root_kinds: dict[str, str] | None = None) -> Manifest:
    records = [SkillRecord.from_skill(parse_skill(p.read_bytes(), p, root), i, 1) for i, p in enumerate(paths)]
    return Manifest(EmbedderIdentity("test", "m", 4), "r", records, "v.faiss", len(records), roots=[str(root)],
                    root_kinds=root_kinds or {})


@pytest.fixture()
def home(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    monkeypatch.delenv("HERMES_SESSION_PLATFORM", raising=False)
    return tmp_path


def hermes_listing(tools: set[str] | None, toolsets: set[str] | None) -> str:
    """Hermes 0.19's own skills listing for the home."""
    import agent.prompt_builder

    agent.prompt_builder.clear_skills_system_prompt_cache(clear_snapshot=True)
    return agent.prompt_builder.build_skills_system_prompt(available_tools=tools, available_toolsets=toolsets)


@pytest.mark.parametrize("tools, toolsets", [(None, None), ({"browser_navigate", "skill_view"}, {"skills"}),
                                             ({"web_search", "skill_view"}, {"web", "skills"})],
                         ids=["no tool information", "browser, no web", "web, no browser"])
def test_conditioned_skills_are_offered_exactly_when_hermes_lists_them(home, tools, toolsets):
    """Real 0.19: agent/prompt_builder.py:_skill_should_show, given the tools the agent built its prompt with."""
    paths = write_skills(home / "skills", CONDITIONED)
    gated = tuple(gated_skills(manifest_of(paths, home / "skills")))
    assert {g["name"] for g in gated} == set(CONDITIONED) - {"plain"}
    if tools is not None:
        tools_view.observe(home, tools, toolsets, "")

    hidden = Eligibility(home, dict, OnceLogger()).offer("", gated).exclude
    listing = hermes_listing(tools, toolsets)
    for name in CONDITIONED:
        assert (name in hidden) is (f"- {name}" not in listing), name
    assert hidden or tools is None  # the control: with tool information some skill is hidden


def test_only_the_metadata_hermes_conditions_hide_a_skill_in_hermes(home):
    """Conditions another agent sets under its own namespace travel with the skill but never hide it from
    Hermes (real 0.19, against its own listing); the same condition under metadata.hermes does."""
    skills = {
        "needs-browser": "metadata:\n  hermes:\n    requires_tools: [browser_navigate]\n",
        "needs-browser-elsewhere": "metadata:\n  openclaw:\n    requires_tools: [browser_navigate]\n",
        "web-fallback-elsewhere": "metadata:\n  hermes:\n    requires_tools: [web_search]\n"
                                  "  openclaw:\n    fallback_for_tools: [web_search]\n",
    }
    gated = tuple(gated_skills(manifest_of(write_skills(home / "skills", skills), home / "skills")))
    assert {g["name"] for g in gated} == set(skills)
    tools, toolsets = {"web_search", "skill_view"}, {"web", "skills"}
    tools_view.observe(home, tools, toolsets, "")

    hidden = Eligibility(home, dict, OnceLogger()).offer("", gated).exclude
    assert hidden == {"needs-browser"}
    listing = hermes_listing(tools, toolsets)
    assert [name for name in skills if f"- {name}:" not in listing] == ["needs-browser"]


def test_the_doctor_counts_only_skills_with_metadata_hermes_conditions(home):
    from semantic_skills.hermes.config import PluginSettings
    from semantic_skills.hermes.doctor.report import Setup
    from semantic_skills.hermes.doctor.routing_checks import skills_check

    write_skills(home / "skills", {"needs-browser": CONDITIONED["needs-browser"], "plain": "",
                                   "elsewhere": "metadata:\n  openclaw:\n    requires_tools: [browser_navigate]\n"})
    check = skills_check(Setup(home, {}, PluginSettings(), home / "index", "sentence-transformers", "semantic-skills"))
    assert check.facts["offered"] == 3 and check.facts["conditional"] == 1, check.detail


def test_the_doctor_says_what_the_agent_gets_until_the_first_build(home):
    from semantic_skills.hermes.config import PluginSettings
    from semantic_skills.hermes.doctor.report import Setup
    from semantic_skills.hermes.doctor.routing_checks import index_check

    check = index_check(Setup(home, {}, PluginSettings(), home / "index", "sentence-transformers", "semantic-skills"))
    assert check.status == "fail" and check.fix == f"HERMES_HOME={home} semantic-skills build"  # for this home
    assert "Hermes' own skills listing" in check.detail and "search_skills matches words" in check.detail


def test_skills_disabled_as_a_list_in_a_string_follow_the_running_hermes(home):
    """0.19 reads a string as one name; 0.21 (agent/skill_utils.py:parse_config_string_list) as the list it
    spells. The plugin asks Hermes, so each version gets its own reading."""
    (home / "config.yaml").write_text("skills:\n  disabled: '[\"alpha\", \"beta\"]'\n")
    rules = Eligibility(home, dict, OnceLogger())
    assert rules.disabled("") == {'["alpha", "beta"]'}  # 0.19

    import agent.skill_utils

    def main_get_disabled(platform=None):  # upstream: _normalize_string_set via parse_config_string_list
        return {"alpha", "beta"} - {"hermes-agent"}

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(agent.skill_utils, "get_disabled_skill_names", main_get_disabled)
        assert rules.disabled("") == {"alpha", "beta"}


def test_session_platforms_go_to_hermes_with_the_platform(home, monkeypatch):
    """upstream agent/prompt_builder.py:_skill_should_show(conditions, available_tools, available_toolsets,
    session_platform=None): the channel gate applies even without tool information."""
    import agent.prompt_builder

    calls = []

    def main_should_show(conditions, available_tools, available_toolsets, session_platform=None):
        calls.append(session_platform)
        wanted = [str(p).lower() for p in conditions.get("session_platforms") or []]
        return not (wanted and session_platform and session_platform.lower() not in wanted)

    monkeypatch.setattr(agent.prompt_builder, "_skill_should_show", main_should_show)
    gated = tuple(gated_skills(manifest_of(write_skills(home / "skills", CONDITIONED), home / "skills")))
    rules = Eligibility(home, dict, OnceLogger())

    assert "telegram-only" not in rules.offer("telegram", gated).exclude
    assert "telegram-only" in rules.offer("discord", gated).exclude
    assert "telegram-only" not in rules.offer("", gated).exclude  # unknown platform: Hermes fails open
    assert {"telegram", "discord", None} <= set(calls)


def test_project_skills_are_offered_only_for_their_trusted_project_and_after_a_clean_scan(home, monkeypatch):
    """upstream agent/skill_utils.py: get_project_skills_dirs() for the current project, and
    is_quarantined_project_skill(skill_md) (fail closed); both absent from 0.19."""
    import agent.skill_utils

    project = home / "repo" / ".hermes" / "skills"
    paths = write_skills(project, {"deploy-here": "", "evil-here": ""})
    gated = tuple(gated_skills(manifest_of(paths, project, {str(project): PROJECT})))
    scanned = []

    def quarantined(skill_md):
        scanned.append(str(skill_md))
        return "evil-here" in str(skill_md)

    monkeypatch.setattr(agent.skill_utils, "is_quarantined_project_skill", quarantined, raising=False)
    monkeypatch.setattr(agent.skill_utils, "get_project_skills_dirs", lambda: [project], raising=False)
    rules = Eligibility(home, dict, OnceLogger())

    assert rules.offer("", gated).exclude == {"deploy-here", "evil-here"}  # no verdict yet: hidden
    assert wait_until(lambda: len(scanned) == 2, timeout=10)
    assert wait_until(lambda: rules.offer("", gated).exclude == {"evil-here"}, timeout=10)

    monkeypatch.setattr(agent.skill_utils, "get_project_skills_dirs", lambda: [], raising=False)
    assert rules.offer("", gated).exclude == {"deploy-here", "evil-here"}  # another project (or none) is active


def test_the_skills_roots_are_the_ones_hermes_scans(home, tmp_path):
    """Real 0.19 get_all_skills_dirs (local first, then external); 0.21 adds trusted project dirs first."""
    external = tmp_path / "shared-skills"
    external.mkdir()
    (home / "config.yaml").write_text(f"skills:\n  external_dirs: [{external}]\n")
    (home / "skills").mkdir()
    import agent.skill_utils

    agent.skill_utils._external_dirs_cache_clear()
    roots = hermes_skills.skills_roots()
    assert [(r.path, r.external, r.project) for r in roots] == [
        ((home / "skills").resolve(), False, False), (external.resolve(), True, False)]

    project = tmp_path / "repo" / ".agents" / "skills"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(agent.skill_utils, "get_project_skills_dirs", lambda: [project], raising=False)
        assert [r.project for r in hermes_skills.skills_roots()] == [True, False, False]


def test_an_organisation_mirror_counts_only_when_active(tmp_path):
    """upstream agent/skill_utils.py:iter_skill_index_files walks only ``_org/<active org>``."""
    from semantic_skills.skills.discovery import SkillsRoot, discover_skills

    root = tmp_path / "skills"
    for org in ("acme", "globex"):
        write_skills(root / "_org" / org, {f"{org}-skill": ""})
    write_skills(root, {"mine": ""})
    names = lambda: sorted(s.name for s in discover_skills([SkillsRoot(root)]).skills)  # noqa: E731

    assert names() == ["mine"]
    set_active_org(root, "acme")
    assert names() == ["acme-skill", "mine"]


def test_an_organisation_switch_hides_the_old_organisations_skills_at_once_and_asks_for_a_re_index(home):
    skills = home / "skills"
    paths = write_skills(skills / "_org" / "acme", {"acme-deploy": ""}) + write_skills(skills, {"mine": ""})
    set_active_org(skills, "acme")
    gated = tuple(gated_skills(manifest_of(paths, skills)))
    assert [(g["name"], g["org"]) for g in gated] == [("acme-deploy", "acme")]  # "mine" is nobody's mirror
    rules = Eligibility(home, dict, OnceLogger())

    first = rules.offer("", gated)
    assert first.exclude == frozenset() and first.reindex is False

    set_active_org(skills, "globex")
    switched = rules.offer("", gated)
    assert switched.exclude == {"acme-deploy"} and switched.reindex is True
    settled = rules.offer("", gated)
    assert settled.exclude == {"acme-deploy"} and settled.reindex is False  # one re-index per switch

    (skills / "_org" / ".active_org").unlink()  # no organisation: no mirrored skill
    gone = rules.offer("", gated)
    assert gone.exclude == {"acme-deploy"} and gone.reindex is True


def test_the_active_organisation_is_the_one_the_running_hermes_reads(home, monkeypatch):
    """upstream agent/skill_utils.py:read_active_org_id(skills_dir) -> Optional[str]; absent from 0.19."""
    import agent.skill_utils

    skills = home / "skills"
    paths = write_skills(skills / "_org" / "acme", {"acme-deploy": ""})
    set_active_org(skills, "acme")
    gated = tuple(gated_skills(manifest_of(paths, skills)))
    asked = []

    def read_active_org_id(skills_dir):
        asked.append(Path(skills_dir))
        return None  # this Hermes finds no active organisation, whatever the file says

    monkeypatch.setattr(agent.skill_utils, "read_active_org_id", read_active_org_id, raising=False)

    assert Eligibility(home, dict, OnceLogger()).offer("", gated).exclude == {"acme-deploy"}
    assert asked == [skills]


def test_pinned_skills_are_never_routed_and_only_where_hermes_pins_them(home, monkeypatch):
    """upstream agent/skill_commands.py:build_auto_load_prompt loads each ``skills.auto_load`` entry by name or
    path and skips disabled ones; agent/system_prompt.py writes them into every new session's system prompt
    unless HERMES_IGNORE_RULES is set. Real 0.19 has no such setting: nothing is pinned there."""
    import yaml

    from semantic_skills.hermes.config import load_config

    (home / "config.yaml").write_text(yaml.safe_dump({"skills": {
        "auto_load": ["weekly-report", " weekly-report ", "ops/deploy-check", str(home / "skills/x/pdf-tool"), 7],
        "disabled": ["deploy-check"]}}))
    rules = Eligibility(home, lambda: load_config(home), OnceLogger())
    assert rules.offer("", ()).pinned == frozenset() and rules.offer("", ()).exclude == {"deploy-check"}  # 0.19

    import agent.skill_commands

    monkeypatch.setattr(agent.skill_commands, "resolve_auto_load_skills", resolve_auto_load_skills,
                        raising=False)
    offer = rules.offer("", ())
    assert offer.pinned == {"weekly-report", "pdf-tool"}  # disabled: Hermes does not load it, routing skips it anyway
    assert offer.exclude == {"weekly-report", "pdf-tool", "deploy-check"}

    monkeypatch.setenv("HERMES_IGNORE_RULES", "true")  # --ignore-rules: Hermes pins nothing
    assert rules.offer("", ()).pinned == frozenset()


def test_the_word_search_lists_only_skills_hermes_offers_in_every_session(home):
    """With no index, search_skills matches words in the skill files (fallback.py): real 0.19 rules for
    skills.disabled, platforms: and environments: (kanban is inactive here); a skill whose offer depends on the
    session (metadata.hermes conditions, an organisation mirror) is left out rather than guessed."""
    import json

    import yaml

    from semantic_skills.hermes import tool
    from semantic_skills.hermes.runtime import PluginRuntime

    other_os = "windows" if not sys.platform.startswith("win") else "linux"
    write_skills(home / "skills", {
        "pdf-plain": "", "pdf-disabled": "", "pdf-other-os": f"platforms: [{other_os}]\n",
        "pdf-kanban": "environments: [kanban]\n",
        "pdf-browser": "metadata:\n  hermes:\n    requires_tools: [browser_navigate]\n"})
    write_skills(home / "skills" / "_org" / "acme", {"pdf-acme": ""})
    set_active_org(home / "skills", "acme")
    (home / "config.yaml").write_text(yaml.safe_dump({"skills": {"disabled": ["pdf-disabled"]}}))
    rt = PluginRuntime(home)
    try:
        answer = json.loads(tool.search_skills(rt, {"query": "pdf skill", "limit": 10}))
    finally:
        rt.close()

    assert answer["matched"] == "words" and [r["name"] for r in answer["results"]] == ["pdf-plain"]
    assert answer["best"]["name"] == "pdf-plain" and answer["best"]["content"] == "# pdf-plain"
