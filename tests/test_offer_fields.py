"""What the index records for the host's offer rules: each skill's conditions and each root's kind.

Both are optional in the manifest, so an index written before them still opens.
"""

from __future__ import annotations

import pytest

from semantic_skills.builder import build_index
from semantic_skills.index.manifest import Manifest, SkillRecord, read_manifest
from semantic_skills.skills.discovery import EXTERNAL, PROJECT, SkillsRoot
from semantic_skills.skills.parsing import parse_skill

from support import edit_manifest, write_skill


@pytest.mark.parametrize("hermes, expected", [
    ("requires_tools: [web_search, terminal]", {"requires_tools": ["web_search", "terminal"]}),
    ("fallback_for_toolsets: browser", {"fallback_for_toolsets": "browser"}),  # a string stays a string, as read
    ("session_platforms: [telegram]\n    requires_toolsets: []", {"session_platforms": ["telegram"]}),
    ("requires_tools: {web: true}", {}),  # not a list or a string: no condition
    ("tags: [x]", {}),
])
def test_offer_conditions_are_read_from_metadata_hermes(tmp_path, hermes, expected):
    text = f"---\nname: x\ndescription: y\nmetadata:\n  hermes:\n    {hermes}\n---\nBody\n"
    skill = parse_skill(text.encode(), tmp_path / "x" / "SKILL.md", tmp_path)
    record = SkillRecord.from_skill(skill, 0, 1)

    assert record.condition_map() == ({"hermes": expected} if expected else {})
    assert SkillRecord.from_dict(record.as_dict()) == record
    assert ("conditions" in record.as_dict()) is bool(expected)


def test_each_agent_namespace_keeps_its_own_conditions(tmp_path):
    text = ("---\nname: x\ndescription: y\nmetadata:\n  tags: [a]\n  author: me\n"
            "  hermes:\n    requires_tools: [browser_navigate]\n"
            "  openclaw:\n    requires_tools: [browser]\n    session_platforms: [slack]\n"
            "  other:\n    colour: blue\n---\nBody\n")
    record = SkillRecord.from_skill(parse_skill(text.encode(), tmp_path / "x" / "SKILL.md", tmp_path), 0, 1)

    assert record.condition_map() == {"hermes": {"requires_tools": ["browser_navigate"]},
                                      "openclaw": {"requires_tools": ["browser"], "session_platforms": ["slack"]}}
    assert SkillRecord.from_dict(record.as_dict()) == record


def test_conditions_in_the_earlier_flat_shape_read_as_none(tmp_path):
    """The first, unreleased shape had no namespaces; such a record opens as one written before conditions."""
    record = SkillRecord.from_skill(parse_skill(b"---\nname: x\n---\nBody\n", tmp_path / "x" / "SKILL.md",
                                                tmp_path), 0, 1)
    flat = {**record.as_dict(), "conditions": {"requires_tools": ["web_search"], "session_platforms": "telegram"}}
    assert SkillRecord.from_dict(flat).conditions == ()


def test_the_index_records_conditions_and_root_kinds(tmp_path, bundled_embedder):
    local, shared, project = tmp_path / "local", tmp_path / "shared", tmp_path / "repo" / ".hermes" / "skills"
    write_skill(local, "a/web-fallback", "---\nname: web-fallback\ndescription: search without a web tool\n"
                                         "metadata:\n  hermes:\n    fallback_for_tools: [web_search]\n---\nUse curl.\n")
    write_skill(shared, "b/shared-one", "---\nname: shared-one\ndescription: a shared skill\n---\nShared.\n")
    write_skill(project, "c/deploy", "---\nname: deploy\ndescription: deploy this project\n---\nRun make deploy.\n")
    roots = [SkillsRoot(project, project=True), SkillsRoot(local), SkillsRoot(shared, external=True)]
    build_index(roots, tmp_path / "index", bundled_embedder)

    manifest = read_manifest(tmp_path / "index")
    assert manifest.root_kinds == {str(project): PROJECT, str(shared): EXTERNAL}
    assert manifest.skills_roots() == roots
    conditions = {r.name: r.condition_map() for r in manifest.skills}
    assert conditions == {"deploy": {}, "web-fallback": {"hermes": {"fallback_for_tools": ["web_search"]}},
                          "shared-one": {}}


def test_an_index_written_before_these_fields_still_opens_with_its_roots_kinds_inferred(examples_index, tmp_path):
    import shutil

    index = tmp_path / "index"
    shutil.copytree(examples_index, index)
    edit_manifest(index, lambda m: m.pop("root_kinds"))
    manifest = read_manifest(index)
    assert manifest.root_kinds == {} and all(r.conditions == () for r in manifest.skills)
    assert [root.kind for root in manifest.skills_roots()] == [""]

    external = Manifest(manifest.embedder, manifest.recipe, [
        SkillRecord.from_dict({**manifest.skills[0].as_dict(), "external": True})], "v", 1, roots=manifest.roots)
    assert [root.kind for root in external.skills_roots()] == [EXTERNAL]
