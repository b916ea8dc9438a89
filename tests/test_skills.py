"""Skill discovery and SKILL.md parsing, including the imperfect files real libraries contain."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from semantic_skills.glyphs import misreading, one_line
from semantic_skills.skills.discovery import SkillsRoot, discover_skills
from semantic_skills.skills.eligibility import environments_allow
from semantic_skills.skills.parsing import SkillFileError, parse_skill

from support import shared_path, write_skill


def discover(*roots: Path, external_from: int = 1):
    """Discover skills under ``roots``; roots from index ``external_from`` on are external."""
    return discover_skills([SkillsRoot(r, external=i >= external_from) for i, r in enumerate(roots)])


def parse(raw: bytes, tmp_path: Path, folder: str = "cat/my-skill"):
    path = tmp_path / folder / "SKILL.md"
    return parse_skill(raw, path, tmp_path)


# --------------------------------------------------------------------------- real files


def test_every_real_skill_file_in_the_corpora_parses():
    corpora = shared_path("data", "corpora")
    files = sorted(corpora.rglob("SKILL.md"))
    assert len(files) > 500, "the shared corpora should hold hundreds of SKILL.md files"
    for path in files:
        skill = parse_skill(path.read_bytes(), path, corpora)
        assert skill.name.strip(), path
        assert skill.description.strip(), path


def test_discovery_over_the_real_corpora_refuses_no_name_and_names_every_skill():
    corpora = shared_path("data", "corpora")
    found = discover(corpora)
    assert found.skipped == []  # no real name holds a character a reader does not see, nor odd spaces
    assert len(found.skills) > 500
    assert all(s.name.strip() for s in found.skills)
    names = [s.name for s in found.skills]
    assert len(names) == len(set(names)), "discovery must keep one skill per name"
    assert {d.name for d in found.duplicates} <= set(names)
    # The corpora as one root hold a few names twice (run, status...): the agent loads neither, nor do we.
    assert found.conflicts and all("refuses to choose" in c.reason for c in found.conflicts)


# --------------------------------------------------------------------------- parsing


IMPERFECT_FILES = {
    "block scalar folded": (
        b"---\nname: folded\ndescription: >-\n  first half\n  second half\n---\nbody\n",
        "folded", "first half second half",
    ),
    "block scalar literal": (
        b"---\nname: literal\ndescription: |\n  line one\n  line two\n---\nbody\n",
        "literal", "line one line two",
    ),
    "quoted values": (
        b"---\nname: 'quoted: name'\ndescription: \"say \\\"hi\\\" twice\"\n---\nbody\n",
        "quoted: name", 'say "hi" twice',
    ),
    "fence inside a quoted value": (
        b"---\nname: dashes\ndescription: \"use --- as a separator\"\n---\nbody\n",
        "dashes", "use --- as a separator",
    ),
    "fence inside an indented block scalar": (
        b"---\nname: block-dashes\ndescription: |\n  before\n  ---\n  after\n---\nbody\n",
        "block-dashes", "before --- after",
    ),
    "BOM and CRLF": (
        b"\xef\xbb\xbf---\r\nname: windows\r\ndescription: saved by notepad\r\n---\r\nBody\r\n",
        "windows", "saved by notepad",
    ),
    "front matter only": (
        b"---\nname: only-front\ndescription: nothing after the fence\n---",
        "only-front", "nothing after the fence",
    ),
    "a number as the description": (
        b"---\nname: \"2048\"\ndescription: 4.5\n---\n",
        "2048", "4.5",
    ),
}


@pytest.mark.parametrize("case", sorted(IMPERFECT_FILES))
def test_imperfect_but_valid_front_matter_parses_cleanly(case, tmp_path):
    raw, name, description = IMPERFECT_FILES[case]
    skill = parse(raw, tmp_path)
    assert (skill.name, skill.description) == (name, description)
    assert skill.warnings == ()
    assert "---" not in skill.body.split("\n")[0]


def test_no_front_matter_uses_folder_name_and_first_paragraph(tmp_path):
    raw = b"# Deploying\n\n```sh\nmake deploy\n```\n\nShip the service\nto production.\n\nMore detail.\n"
    skill = parse(raw, tmp_path, "ops/deploy-service")
    assert skill.name == "deploy-service"
    assert skill.description == "Ship the service to production."
    assert any("no front matter" in w for w in skill.warnings)


def test_invalid_yaml_is_kept_with_a_warning(tmp_path):
    raw = b"---\nname: broken\ndescription: fix: this [unclosed\ntags: [a\n---\nBody.\n"
    skill = parse(raw, tmp_path)
    assert skill.name == "broken"
    assert "this [unclosed" in skill.description
    assert any("invalid YAML" in w for w in skill.warnings)


@pytest.mark.parametrize("front, said", [
    ('name: quoted\ndescription: "an unclosed quote\ntags: [a]\n',
     "at line 3 (while scanning a quoted scalar, found unexpected end of stream at line 5)"),
    ("name: indented\n  description: one space too many\n",
     "at line 3 (mapping values are not allowed in this context)"),
])
def test_invalid_yaml_names_the_line_where_the_fault_starts_and_why(tmp_path, front, said):
    """#34.9: an unclosed quote on line 3 was reported "at line 5" (where YAML gave up), with no reason."""
    skill = parse(f"---\n{front}---\nBody.\n".encode(), tmp_path)
    assert skill.warnings == (f"invalid YAML front matter {said}; read simple 'key: value' lines instead",)


def test_non_utf8_bytes_are_replaced_with_a_warning(tmp_path):
    raw = b"---\nname: latin\ndescription: caf\xe9 cr\xe8me\n---\nbody\n"
    skill = parse(raw, tmp_path)
    assert skill.name == "latin"
    assert skill.description == "caf\ufffd cr\ufffdme"
    assert any("UTF-8" in w for w in skill.warnings)
    assert skill.content_hash == hashlib.sha256(raw).hexdigest()


def test_unclosed_front_matter_is_kept_with_a_warning(tmp_path):
    skill = parse(b"---\nname: never-closed\ndescription: oops\n\nBody text.\n", tmp_path, "x/unclosed")
    assert skill.name == "unclosed"
    assert any("no closing" in w for w in skill.warnings)


def test_front_matter_that_is_not_a_mapping_is_ignored_with_a_warning(tmp_path):
    skill = parse(b"---\n- a\n- b\n---\nThe body paragraph.\n", tmp_path, "x/listy")
    assert (skill.name, skill.description) == ("listy", "The body paragraph.")
    assert any("not a mapping" in w for w in skill.warnings)


@pytest.mark.parametrize(
    "raw, reason",
    [
        (b"", "empty file"),
        (b" \n\r\n\t\n", "empty file"),
        (b"\xef\xbb\xbf\n", "empty file"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary file"),
    ],
)
def test_empty_and_binary_files_are_skipped_with_a_reason(raw, reason, tmp_path):
    with pytest.raises(SkillFileError, match=reason):
        parse(raw, tmp_path)
    write_skill(tmp_path / "root", "bad", raw)
    write_skill(tmp_path / "root", "good", "---\nname: good\ndescription: fine\n---\n")
    found = discover(tmp_path / "root")
    assert [s.name for s in found.skills] == ["good"]
    assert [(Path(s.path).parent.name, reason in s.reason) for s in found.skipped] == [("bad", True)]


def test_metadata_is_recorded(tmp_path):
    raw = (
        b"---\nname: rollout\ndescription: Roll out a deployment\nplatforms: [macos, linux]\n"
        b"tags: [k8s, deploy]\nmetadata:\n  hermes:\n    tags: [ops, k8s]\n---\nBody.\n"
    )
    path = write_skill(tmp_path, "devops/kubernetes/rollout", raw)
    (skill,) = discover(tmp_path).skills
    assert skill.platforms == ("macos", "linux")
    assert skill.tags == ("k8s", "deploy", "ops")
    assert skill.category == "devops/kubernetes"
    assert skill.folder == "rollout"
    assert skill.path == str(path)
    assert skill.content_hash == hashlib.sha256(raw).hexdigest()
    assert skill.body == "Body.\n"


def test_tags_are_read_from_every_agent_namespace(tmp_path):
    raw = (b"---\nname: x\ndescription: y\ntags: [a]\nmetadata:\n  tags: b\n  hermes:\n    tags: 'c, d'\n"
           b"  openclaw:\n    tags: [e, a]\n  author: me\n---\nBody.\n")
    write_skill(tmp_path, "x", raw)
    (skill,) = discover(tmp_path).skills
    assert skill.tags == ("a", "b", "c", "d", "e")


ENVIRONMENTS = {  # front matter line: (Skill.environments, offered when kanban and s6 are inactive)
    "absent": ("", (), True),
    "one string": ("environments: Kanban\n", ("kanban",), False),
    "a list, all inactive": ("environments: [kanban, ' S6 ']\n", ("kanban", "s6"), False),
    "a list with one active": ("environments: [kanban, docker]\n", ("kanban", "docker"), True),
    "an unknown tag": ("environments: [kanban, gpu-cluster]\n", ("kanban", "gpu-cluster"), True),
    "an empty list": ("environments: []\n", (), True),
    "only an empty entry": ("environments: [\"\"]\n", ("",), False),
    "an empty entry beside an inactive one": ("environments: [\"\", kanban]\n", ("", "kanban"), False),
    "a nested list": ("environments: [[kanban]]\n", ("(nested value)",), True),
}


@pytest.mark.parametrize("case", sorted(ENVIRONMENTS))
def test_environments_are_read_and_applied_as_hermes_does(case, tmp_path):
    line, environments, offered = ENVIRONMENTS[case]
    skill = parse(f"---\nname: x\ndescription: y\n{line}---\nBody\n".encode(), tmp_path)
    assert skill.environments == environments
    assert environments_allow(skill.environments, frozenset({"kanban", "s6"})) is offered
    assert environments_allow(skill.environments, frozenset()) is (skill.environments != ("",))  # as in Hermes


# --------------------------------------------------------------------------- discovery


def test_discovery_skips_hidden_dependency_venv_and_support_folders(tmp_path):
    skill = "---\nname: {0}\ndescription: the {0} skill\n---\n"
    for rel in (
        ".hub/quarantine/evil",
        ".hidden/secret",
        ".git/hooks-skill",
        "node_modules/some-pkg",
        "venv/lib/python3.11/site-packages/pkg",
        ".venv/pkg",
        "project-env/lib/python3.11/site-packages/pkg",
        "good/references/old-copy",
        "good/templates/template-skill",
        "good/assets/sample-skill",
        "good/scripts/helper",
    ):
        write_skill(tmp_path, rel, skill.format(Path(rel).name))
    (tmp_path / "project-env" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    write_skill(tmp_path, "good", skill.format("good"))
    write_skill(tmp_path, "scripts/deploy", skill.format("deploy"))
    write_skill(tmp_path, "devops/env", skill.format("env"))

    found = discover(tmp_path)
    assert sorted(s.name for s in found.skills) == ["deploy", "env", "good"]


def test_symlink_loops_terminate_and_each_skill_is_found_once(tmp_path):
    write_skill(tmp_path, "a/first", "---\nname: first\n---\n")
    write_skill(tmp_path, "b/second", "---\nname: second\n---\n")
    (tmp_path / "a" / "first" / "to-root").symlink_to(tmp_path, target_is_directory=True)
    (tmp_path / "b" / "to-a").symlink_to(tmp_path / "a", target_is_directory=True)
    (tmp_path / "self").symlink_to(tmp_path / "self")
    looping_file = tmp_path / "c" / "SKILL.md"
    looping_file.parent.mkdir()
    looping_file.symlink_to(looping_file)

    found = discover(tmp_path)
    assert sorted(s.name for s in found.skills) == ["first", "second"]
    assert found.duplicates == []
    assert [s.path for s in found.skipped] == [str(looping_file)]


def test_symlinks_leading_outside_the_root_are_skipped_with_a_reason(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    write_skill(root, "inside", "---\nname: inside\n---\n")
    write_skill(outside, "elsewhere", "---\nname: elsewhere\n---\n")
    (root / "linked-dir").symlink_to(outside / "elsewhere", target_is_directory=True)
    (root / "linked-file").mkdir()
    (root / "linked-file" / "SKILL.md").symlink_to(outside / "elsewhere" / "SKILL.md")

    found = discover(root)
    assert [s.name for s in found.skills] == ["inside"]
    reasons = {Path(s.path).relative_to(root).parts[0]: s.reason for s in found.skipped}
    assert set(reasons) == {"linked-dir", "linked-file"}
    assert all("outside the skills root" in r for r in reasons.values())
    assert "external_dirs" in reasons["linked-dir"]


def test_the_quarantine_is_never_indexed_however_it_is_reached(tmp_path):
    root = tmp_path / "skills"
    quarantine = root / ".hub" / "quarantine"
    unscanned = {name: write_skill(quarantine, name, f"---\nname: {name}\n---\n")
                 for name in ("by-file-link", "by-folder-link", "by-external-root")}
    write_skill(root, "good", "---\nname: good\n---\n")
    (root / "linked-file").mkdir()
    (root / "linked-file" / "SKILL.md").symlink_to(unscanned["by-file-link"])
    (root / "linked-dir").symlink_to(unscanned["by-folder-link"].parent, target_is_directory=True)
    (root / "linked-hub").symlink_to(root / ".hub", target_is_directory=True)

    found = discover(root, unscanned["by-external-root"].parent)  # an external root inside the quarantine

    assert [s.name for s in found.skills] == ["good"]
    assert {str(root / "linked-file" / "SKILL.md"), str(root / "linked-dir" / "SKILL.md"),
            str(unscanned["by-external-root"])} <= {s.path for s in found.skipped}
    assert all("quarantine" in s.reason for s in found.skipped)


@pytest.mark.parametrize("swapped", ["folder", "file"])
def test_a_folder_or_file_swapped_for_a_link_into_the_quarantine_after_the_check_is_never_read(tmp_path, monkeypatch,
                                                                                             swapped):
    from semantic_skills.skills import discovery

    root = tmp_path / "skills"
    skill = write_skill(root, "devops/docker", "---\nname: docker\n---\nThe real body.\n")
    hidden = write_skill(root / ".hub" / "quarantine", "devops/docker", "---\nname: docker\n---\nUNSCANNED\n")
    checked = discovery.real_path

    def check_then_swap(path):
        real = checked(path)  # the real path is resolved and found outside the quarantine; then the race is lost
        moved = (root / "devops", hidden.parent.parent) if swapped == "folder" else (skill, hidden)
        moved[0].rename(moved[0].with_name("moved-away"))
        moved[0].symlink_to(moved[1], target_is_directory=swapped == "folder")
        return real

    monkeypatch.setattr(discovery, "real_path", check_then_swap)
    found = discover(root)

    assert found.skills == []
    reason = {"folder": "the path changed while it was read: its folder 'devops' is now a symbolic link",
              "file": "a symbolic link, not a regular file"}[swapped]
    assert [(s.path, s.reason) for s in found.skipped] == [(str(skill), f"cannot read file: {reason}")]


def test_symlinked_folder_inside_the_root_is_followed(tmp_path):
    write_skill(tmp_path / "store", "tool", "---\nname: tool\n---\n")
    (tmp_path / "alias").symlink_to(tmp_path / "store", target_is_directory=True)
    found = discover(tmp_path)
    assert [s.name for s in found.skills] == ["tool"]
    assert found.skipped == []


def test_earlier_root_wins_name_clashes_and_duplicates_are_reported(tmp_path):
    local, external = tmp_path / "local", tmp_path / "external"
    kept = write_skill(local, "mine/shared-name", "---\nname: shared-name\ndescription: local\n---\n")
    dropped = write_skill(external, "theirs/shared-name", "---\nname: shared-name\ndescription: ext\n---\n")
    write_skill(external, "only-external", "---\nname: only-external\n---\n")

    found = discover(local, external)
    by_name = {s.name: s for s in found.skills}
    assert by_name["shared-name"].description == "local"
    assert by_name["shared-name"].external is False
    assert by_name["only-external"].external is True
    assert [(d.name, d.kept, d.dropped) for d in found.duplicates] == [("shared-name", str(kept), str(dropped))]


# --------------------------------------------------------------------------- properties


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=st.binary(max_size=400) | st.text(max_size=400).map(lambda t: ("---\n" + t).encode()))
def test_any_bytes_either_parse_or_are_skipped_with_a_reason(tmp_path, raw):
    try:
        skill = parse(raw, tmp_path)
    except SkillFileError as exc:
        assert str(exc)
    else:
        assert skill.name.strip()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.text(min_size=1, max_size=60), description=st.text(max_size=200))
def test_front_matter_written_by_a_yaml_library_reads_back(tmp_path, name, description):
    assume(not misreading(name) and "\x00" not in name + description)
    front = yaml.safe_dump({"name": name, "description": description}, allow_unicode=True)
    skill = parse(f"---\n{front}---\nBody.\n".encode(), tmp_path)
    assert skill.name == name
    assert skill.description == (one_line(description) or "Body.")
    assert skill.body == "Body.\n"


def test_words_match_names_before_descriptions_and_skip_common_words(tmp_path):
    from semantic_skills.skills.words import match_by_words, words

    write_skill(tmp_path, "docs/pdf-to-markdown", "---\nname: pdf-to-markdown\ndescription: Convert documents.\n---\n")
    write_skill(tmp_path, "docs/scanner", "---\nname: scanner\ndescription: OCR for a scanned PDF.\n---\n")
    write_skill(tmp_path, "food/sourdough", "---\nname: sourdough\ndescription: Feed a starter.\n---\n")
    skills = discover_skills([SkillsRoot(tmp_path)]).skills

    assert words("How do I turn a PDF into Markdown?") == {"turn", "pdf", "markdown"}
    found = [(skill.name, score) for skill, score in match_by_words(skills, "turn this PDF into markdown", 5)]
    assert found == [("pdf-to-markdown", 4 / 6), ("scanner", 1 / 6)]  # name words count twice; no match, no entry
    assert match_by_words(skills, "how do I do it?", 5) == []  # nothing but common words
    assert [s.name for s, _ in match_by_words(skills, "pdf", 1)] == ["pdf-to-markdown"]
