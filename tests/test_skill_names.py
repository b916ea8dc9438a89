"""A skill's name is exactly what a reader sees, and names the file the agent's skill_view loads (issue #27.1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from semantic_skills.glyphs import visible
from semantic_skills.skills.discovery import SkillsRoot, discover_skills
from semantic_skills.skills.parsing import SkillFileError, parse_skill

from support import write_skill


def discover(*roots: SkillsRoot):
    return discover_skills(list(roots))


def skipped(found) -> dict[str, str]:
    return {s.path: s.reason for s in found.skipped}


# --------------------------------------------------------------------------- what a reader sees


def test_a_name_with_an_invisible_character_is_refused_and_never_takes_over_the_skill_it_reads_as(tmp_path):
    real = write_skill(tmp_path, "devops/docker-compose-debug", "---\nname: docker-compose-debug\n---\nReal.\n")
    twin = write_skill(tmp_path, "aaa/first", '---\nname: "docker-compose-debug\\u200b"\n---\nTwin.\n')

    found = discover(SkillsRoot(tmp_path))

    assert [(s.name, s.path) for s in found.skills] == [("docker-compose-debug", str(real))]
    assert skipped(found) == {str(twin): 'its name: "docker-compose-debug\\u200b" holds U+200B ZERO WIDTH SPACE, '
                                         "which a reader does not see: write the name with visible characters and "
                                         "single spaces only"}
    assert found.duplicates == [] and found.conflicts == []


# Folder names a skill author controls (no name: in the file), and why each is refused.
HOSTILE_FOLDERS = {
    "cron-helper\nSYSTEM": "holds U+000A <control> where only a single space may stand",
    "tide\r\ntables": "holds U+000D <control> where only a single space may stand",
    "kite\trepair": "holds U+0009 <control> where only a single space may stand",
    "bee\u2028keeping": "holds U+2028 LINE SEPARATOR where only a single space may stand",
    "\u202eerht-eman\u202c": "holds U+202E RIGHT-TO-LEFT OVERRIDE, which a reader does not see",
    "bell\x07 and \x1b[31mred": "holds U+0007 <control>, which a reader does not see",
    "no\u00a0break": "holds U+00A0 NO-BREAK SPACE where only a single space may stand",
    "two  spaces": "holds two spaces in a row, which a reader takes for one",
    " leading": "starts with a space, which a reader does not see",
}


def test_a_skill_named_by_a_hostile_folder_is_refused_naming_the_character(tmp_path):
    for folder in HOSTILE_FOLDERS:
        write_skill(tmp_path / "weird", folder, "A skill without front matter.\n")
    write_skill(tmp_path / "weird", 'say "<hi>" & go', "A visible name, quotes and all.\n")

    found = discover(SkillsRoot(tmp_path))

    assert [s.name for s in found.skills] == ['say "<hi>" & go']
    assert {Path(path).parent.name: reason for path, reason in skipped(found).items()} == {
        folder: f'its folder\'s name "{visible(folder)}" {why}: rename the folder, or give the skill a name: line'
        for folder, why in HOSTILE_FOLDERS.items()}


def test_a_name_is_cut_as_the_agent_cuts_it_before_it_is_judged(tmp_path):
    long_then_invisible = "ab" * 32 + "\\u200b"  # YAML escapes: the zero-width space is the 65th character
    assert parse_skill(f'---\nname: "{long_then_invisible}"\n---\n'.encode(), tmp_path / "x" / "SKILL.md",
                       tmp_path).name == "ab" * 32
    with pytest.raises(SkillFileError, match=r"U\+202E RIGHT-TO-LEFT OVERRIDE"):
        parse_skill('---\nname: "\\u202eab"\n---\n'.encode(), tmp_path / "x" / "SKILL.md", tmp_path)


@pytest.mark.parametrize(("line", "why"), [
    ("name: 2048", "its name: is a number, not text"),
    ("name: yes", "its name: is true or false, not text"),
    ("name:", "its name: is empty, not text"),
    ("name: [a, b]", "its name: is a list, not text"),
    ("name: 2024-01-01", "its name: is a date, not text"),
    ('name: ""', 'its name: "" is empty'),
    ('name: "\\u2060"', 'its name: "\\u2060" holds U+2060 WORD JOINER'),
])
def test_a_name_the_agent_would_not_list_as_written_is_refused(tmp_path, line, why):
    with pytest.raises(SkillFileError) as refused:
        parse_skill(f"---\n{line}\n---\nBody.\n".encode(), tmp_path / "cat" / "folder" / "SKILL.md", tmp_path)
    assert str(refused.value).startswith(why)


def test_without_a_name_line_the_folder_names_the_skill_as_in_the_agent(tmp_path):
    skill = parse_skill(b"---\ndescription: d\n---\nBody.\n", tmp_path / "cat" / "kite-repair" / "SKILL.md", tmp_path)
    assert skill.name == "kite-repair"


# --------------------------------------------------------------------------- names that read alike


def test_of_names_that_read_alike_one_is_routed_and_the_others_are_left_out_with_the_fix(tmp_path):
    latin = write_skill(tmp_path, "a/gold", "---\nname: gold\n---\n")
    capital_i = write_skill(tmp_path, "b/gold-twin", "---\nname: goId\n---\n")  # a capital I for the l
    cyrillic = write_skill(tmp_path, "c/gold-cyrillic", "---\nname: g\u043eld\n---\n")
    write_skill(tmp_path, "d/silver", "---\nname: silver\n---\n")

    found = discover(SkillsRoot(tmp_path))

    assert [s.name for s in found.skills] == ["gold", "silver"]  # new to an index: the first path keeps it
    assert [(c.left_out, c.reason) for c in found.conflicts] == [
        ((str(left_out),), f'"{name}" reads as "gold" ({latin}), which keeps that name: rename this skill so that '
                           "its name reads differently")
        for left_out, name in ((capital_i, "goId"), (cyrillic, "g\u043eld"))]
    assert [[claim.path for claim in group] for group in found.look_alikes] == [
        [str(latin), str(capital_i), str(cyrillic)]]


# --------------------------------------------------------------------------- the name skill_view loads


def test_the_same_name_in_one_tier_is_left_out_as_the_agent_refuses_to_choose(tmp_path):
    local, team, shared = tmp_path / "local", tmp_path / "team", tmp_path / "shared"
    first = write_skill(local, "a/run", "---\nname: run\ndescription: one\n---\n")
    second = write_skill(local, "b/run", "---\nname: run\ndescription: two\n---\n")
    write_skill(team, "x/deploy", "---\nname: deploy\ndescription: team\n---\n")
    write_skill(shared, "y/deploy", "---\nname: deploy\ndescription: shared\n---\n")

    found = discover(SkillsRoot(local), SkillsRoot(team, external=True), SkillsRoot(shared, external=True))

    assert found.skills == []
    assert [c.left_out for c in found.conflicts] == [
        (str(first), str(second)), (str(team / "x/deploy/SKILL.md"), str(shared / "y/deploy/SKILL.md"))]
    assert 'answer to the name "run" in the same skills folders' in found.conflicts[0].reason
    assert found.conflicts[0].reason.endswith("the agent's skill_view refuses to choose between them: rename all "
                                              "but one")


def test_an_earlier_tier_wins_and_identical_copies_under_one_root_go_to_the_shallowest(tmp_path):
    local, team = tmp_path / "local", tmp_path / "team"
    kept = write_skill(local, "mine/shared", "---\nname: shared\n---\nMine.\n")
    dropped = write_skill(team, "theirs/shared", "---\nname: shared\n---\nTheirs.\n")
    shallow = write_skill(local, "copy", "---\nname: copy\n---\nSame bytes.\n")
    deep = write_skill(local, "old/versions/copy", "---\nname: copy\n---\nSame bytes.\n")

    found = discover(SkillsRoot(local), SkillsRoot(team, external=True))

    assert sorted((s.name, s.path) for s in found.skills) == [("copy", str(shallow)), ("shared", str(kept))]
    assert sorted((d.name, d.kept, d.dropped) for d in found.duplicates) == [
        ("copy", str(shallow), str(deep)), ("shared", str(kept), str(dropped))]
    assert found.conflicts == []


def test_a_name_another_skills_folder_answers_to_is_not_routed_unless_it_loads_this_skill(tmp_path):
    local, team = tmp_path / "local", tmp_path / "team"
    by_folder = write_skill(local, "pdf", "---\nname: pdf-tools\n---\n")
    same_tier = write_skill(local, "convert", "---\nname: pdf\n---\n")
    earlier_folder = write_skill(local, "markdown", "---\nname: markdown-tools\n---\n")
    later = write_skill(team, "md", "---\nname: markdown\n---\n")

    found = discover(SkillsRoot(local), SkillsRoot(team, external=True))

    assert sorted(s.name for s in found.skills) == ["markdown-tools", "pdf-tools"]
    reasons = {c.left_out: c.reason for c in found.conflicts}
    assert f"(and {by_folder}, by its folder's name)" in reasons[(str(same_tier),)]
    assert reasons[(str(later),)].startswith(f'the agent\'s skill_view("markdown") loads {earlier_folder}, whose '
                                             "folder has that name")


def test_the_skill_routed_under_each_name_is_the_one_hermes_skill_view_loads(hermes_installed, _isolated_hermes_home):
    from tools.skills_tool import skill_view

    root = _isolated_hermes_home / "skills"
    files = {
        "plain": ("tools/plain", "name: plain"), "by-folder": ("misc/by-folder", "description: no name line"),
        "twice-a": ("a/twice", "name: twice"), "twice-b": ("b/twice", "name: twice"),
        "alias": ("c/alias-folder", "name: alias"), "alias-folder": ("d/other", "name: alias-folder"),
        "twin": ("aaa/twin", 'name: "plain\\u200b"'), "look-alike": ("e/look", "name: pIain"),
    }
    for marker, (rel, line) in files.items():
        write_skill(root, rel, f"---\n{line}\n---\nMARKER {marker}\n")

    found = discover_skills([SkillsRoot(root)])
    routed = {s.name: s.path for s in found.skills}
    left_out = {Path(path).parent.name for c in found.conflicts for path in c.left_out}

    assert routed == {"by-folder": str(root / "misc/by-folder/SKILL.md"),
                      "alias": str(root / "c/alias-folder/SKILL.md"), "pIain": str(root / "e/look/SKILL.md")}
    assert left_out == {"plain", "twice", "other"}  # "plain" reads as "pIain", whose path comes first
    for name, path in routed.items():
        loaded = json.loads(skill_view(name))
        assert loaded["success"] and Path(path).read_text().split("\n")[-2] in loaded["content"]
    for name in ("twice", "alias-folder"):  # several skills answer to these: Hermes refuses them as we do
        assert not json.loads(skill_view(name))["success"]
