"""Hostile skills trees: every bad file is reported with its reason, and the good skills still build and route."""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from semantic_skills.builder import build_index
from semantic_skills.cli import main
from semantic_skills.index.manifest import read_manifest
from semantic_skills.router import SkillRouter
from semantic_skills.skills.discovery import MAX_SKILL_BYTES, SkillsRoot, discover_skills
from semantic_skills.skills.parsing import MAX_DESCRIPTION_CHARS, MAX_FIELD_NODES, MAX_NAMESPACES

from reliability_kit import HashingEmbedder, refuse_unreadable_paths
from support import EXAMPLES, write_skill

BUILD_SECONDS = 600  # a bad file must never hang the build; this is far beyond a healthy build

YAML_ALIAS_BOMB = (
    "---\nname: alias-bomb\nl0: &l0 [" + ", ".join(['"lol"'] * 9) + "]\n"
    + "".join(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]\n" for i in range(1, 10))
    + "description: *l9\ntags: *l9\nplatforms: *l9\nmetadata:\n  hermes:\n    requires_tools: [*l9]\n"
    + "---\nAn alias bomb expands to 9^10 strings.\n"
)
# A thousand agent namespaces, each the same mapping of four 20,000-item lists.
NAMESPACE_BOMB = (
    "---\nname: namespace-bomb\nword: &w lol\nwords: &words [" + ", ".join(["*w"] * 20_000) + "]\n"
    "namespace: &ns {tags: *words, requires_tools: *words, fallback_for_tools: *words, session_platforms: *words}\n"
    "metadata:\n" + "".join(f"  agent{i}: *ns\n" for i in range(1000)) + "---\nBody.\n"
)


def bad(tree: Path, rel: str, content: bytes | str) -> Path:
    return write_skill(tree, rel, content)


def hostile_tree(root: Path, outside: Path) -> dict[str, str]:
    """Write the example skills plus one of each kind of bad entry; returns ``{path: expected reason}``."""
    tree = root / "skills"
    shutil.copytree(EXAMPLES / "skills", tree)
    skipped = {}

    skipped[str(bad(tree, "bad/empty", b""))] = "empty file"
    skipped[str(bad(tree, "bad/whitespace-only", b"  \n\r\n\t"))] = "empty file"
    skipped[str(bad(tree, "bad/binary", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256))))] = "binary file"

    unreadable = bad(tree, "bad/unreadable-file", "---\nname: unreadable-file\n---\nsecret\n")
    unreadable.chmod(0)
    skipped[str(unreadable)] = "Permission denied"
    locked = bad(tree, "bad/unreadable-folder/inner", "---\nname: behind-a-locked-folder\n---\nx\n").parent.parent
    locked.chmod(0)
    skipped[str(locked)] = "cannot read folder: Permission denied"

    fifo_dir = tree / "bad" / "fifo"
    fifo_dir.mkdir()
    os.mkfifo(fifo_dir / "SKILL.md")
    skipped[str(fifo_dir / "SKILL.md")] = "not a regular file"
    (tree / "bad" / "folder-named-skill-md" / "SKILL.md").mkdir(parents=True)
    skipped[str(tree / "bad" / "folder-named-skill-md" / "SKILL.md")] = "not a regular file"

    huge = tree / "bad" / "over-the-limit" / "SKILL.md"
    huge.parent.mkdir()
    with open(huge, "wb") as fh:
        fh.truncate(MAX_SKILL_BYTES + 1)
    skipped[str(huge)] = "over the"

    loop_dir = tree / "bad" / "looping-links"
    loop_dir.mkdir()
    (loop_dir / "SKILL.md").symlink_to(loop_dir / "other.md")
    (loop_dir / "other.md").symlink_to(loop_dir / "SKILL.md")
    skipped[str(loop_dir / "SKILL.md")] = "broken or looping symlink"
    (tree / "bad" / "folder-loop").mkdir()
    (tree / "bad" / "folder-loop" / "back-to-the-root").symlink_to(tree, target_is_directory=True)

    write_skill(outside, "stolen", "---\nname: outside-the-root\ndescription: must not be indexed\n---\nx\n")
    (tree / "bad" / "escape").symlink_to(outside / "stolen", target_is_directory=True)
    skipped[str(tree / "bad" / "escape")] = "symlink leads outside the skills root"
    (tree / "bad" / "escape-file").mkdir()
    (tree / "bad" / "escape-file" / "SKILL.md").symlink_to(outside / "stolen" / "SKILL.md")
    skipped[str(tree / "bad" / "escape-file" / "SKILL.md")] = "symlink leads outside the skills root"
    return skipped


GOOD_BUT_ODD = {
    "odd/invalid-yaml": ("invalid-yaml", "---\nname: invalid-yaml\ndescription: [unclosed\n  - x: : y\n---\nBody.\n",
                         "invalid YAML"),
    "odd/front-matter-only": ("front-matter-only", "---\nname: front-matter-only\ndescription: Only metadata\n---\n",
                              None),
    "odd/non-utf8": ("non-utf8", b"---\nname: non-utf8\ndescription: caf\xe9 cr\xe8me\n---\nBody \xff\xfe.\n",
                     "not valid UTF-8"),
    "odd/bom-crlf": ("sourdough-starter",
                     "\ufeff---\r\nname: sourdough-starter\r\ndescription: Feed and maintain a sourdough starter"
                     "\r\n---\r\n# Starter\r\n\r\nFeed it flour and water every day.\r\n".encode("utf-8"), None),
    "odd/alias-bomb": ("alias-bomb", YAML_ALIAS_BOMB, None),
    "odd/surrogate-escape": ("surrogate-escape",
                             '---\nname: surrogate-escape\ndescription: "bad \\ud800 escape"\n---\nx\n', None),
    "odd/not-a-mapping": ("not-a-mapping", "---\n- just\n- a list\n---\nA skill whose front matter is a list.\n",
                          "not a mapping"),
}


def write_odd_skills(tree: Path) -> None:
    for rel, (_name, content, _warning) in GOOD_BUT_ODD.items():
        write_skill(tree, rel, content)
    write_skill(tree, "odd/duplicate-a", "---\nname: duplicated-name\ndescription: First of two\n---\nx\n")
    write_skill(tree, "odd/duplicate-b", "---\nname: duplicated-name\ndescription: Second of two\n---\nx\n")
    ten_mb = "---\nname: ten-megabytes\ndescription: Rotate nginx access logs with logrotate\n---\n"
    write_skill(tree, "odd/ten-megabytes", ten_mb + ("Rotate the logs daily and keep fourteen. " * 256_000))
    deep = tree / "odd" / "deep"
    deep.mkdir()
    for _ in range(1100):  # one folder at a time: mkdir(parents=True) itself recurses too deep
        deep = deep / "d"
        deep.mkdir()
    (deep / "SKILL.md").write_text("---\nname: very-deep\ndescription: Tune the garbage collector of a JVM\n---\nx\n")


def run_build(args: list[str]) -> dict:
    """``semantic-skills build ... --json`` in a thread, failing (not hanging) if it never ends."""
    outcome = {}
    thread = threading.Thread(target=lambda: outcome.update(
        result=CliRunner().invoke(main, ["build", *args, "--json"], catch_exceptions=False)), daemon=True)
    thread.start()
    thread.join(BUILD_SECONDS)
    assert not thread.is_alive(), "the build hung on a hostile tree"
    result = outcome["result"]
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture()
def tidy(tmp_path):
    """Give back read permission and remove the 1,100-deep chain, which pytest's own recursive cleanup
    could not."""
    yield
    for locked in (tmp_path / "skills" / "bad" / "unreadable-file" / "SKILL.md",
                   tmp_path / "skills" / "bad" / "unreadable-folder"):
        if locked.exists():
            locked.chmod(0o755)
    chain = [tmp_path / "skills" / "odd" / "deep"]
    while (chain[-1] / "d").is_dir():
        chain.append(chain[-1] / "d")
    for folder in reversed(chain):
        shutil.rmtree(folder, ignore_errors=True)


def test_a_hostile_tree_builds_the_good_skills_reports_each_bad_one_and_routes(tmp_path, monkeypatch,
                                                                               onnx_embedder, tidy):
    expected_skips = hostile_tree(tmp_path, tmp_path / "outside")
    write_odd_skills(tmp_path / "skills")
    refuse_unreadable_paths(monkeypatch)

    report = run_build(["--skills-dir", str(tmp_path / "skills"), "--index-dir", str(tmp_path / "index"),
                        "--embedder", "onnx"])

    reasons = {s["path"]: s["reason"] for s in report["skipped_files"]}
    for path, reason in expected_skips.items():
        assert reason in reasons.get(path, ""), f"{path}: {reasons.get(path)!r}"
    assert set(reasons) == set(expected_skips)
    warnings = {(Path(w["path"]).parent.name, w["warning"]) for w in report["warnings"]}
    for rel, (_name, _content, warning) in GOOD_BUT_ODD.items():
        if warning:
            assert any(folder == Path(rel).name and warning in text for folder, text in warnings), rel
    assert report["duplicates"] == []  # one root: the agent loads neither, so neither is routed
    assert [[Path(path).parent.name for path in c["left_out"]] for c in report["conflicts"]] == [
        ["duplicate-a", "duplicate-b"]]

    indexed = {r.name for r in read_manifest(tmp_path / "index").skills}
    examples = {p.parent.name for p in (EXAMPLES / "skills").rglob("SKILL.md")}
    odd = {name for name, _content, _warning in GOOD_BUT_ODD.values()} | {"ten-megabytes", "very-deep"}
    assert indexed == examples | odd

    router = SkillRouter.open(tmp_path / "index", embedder=onnx_embedder)
    for query, skill in [("convert this scanned PDF into markdown", "pdf-to-markdown"),
                         ("my docker compose services keep restarting", "docker-compose-debug"),
                         ("how do I keep my sourdough starter alive", "sourdough-starter"),
                         ("rotate nginx access logs every day", "ten-megabytes")]:
        assert router.route(query).skill.name == skill, query


def discovered_within_a_minute(tree: Path, text: str):
    """The one skill found in ``tree`` after writing ``text`` there; fails if discovery takes over a minute."""
    write_skill(tree, "bomb", text)
    found = {}
    thread = threading.Thread(target=lambda: found.update(d=discover_skills([SkillsRoot(tree)])), daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "parsing the front matter hung"
    return found["d"].skills[0]


def test_an_alias_bomb_in_front_matter_parses_quickly_into_bounded_fields(tmp_path):
    skill = discovered_within_a_minute(tmp_path, YAML_ALIAS_BOMB)
    assert len(skill.description) <= MAX_DESCRIPTION_CHARS
    assert len(skill.tags) <= MAX_FIELD_NODES and len(skill.platforms) <= MAX_FIELD_NODES
    assert skill.conditions == (("hermes", (("requires_tools", ("(nested value)",)),)),)


def test_many_aliased_agent_namespaces_parse_quickly_into_bounded_fields(tmp_path):
    skill = discovered_within_a_minute(tmp_path, NAMESPACE_BOMB)
    assert skill.tags == ("lol",)
    assert 0 < len(skill.conditions) <= MAX_NAMESPACES
    assert sum(len(value) for _, conditions in skill.conditions for _, value in conditions) == MAX_FIELD_NODES


def test_thousands_of_tiny_skills_build_and_each_stays_findable(tmp_path):
    count = 3000
    words = ["amber", "basil", "cedar", "delta", "ember", "fjord", "grove", "haze", "iris", "jade"]
    for i in range(count):
        description = f"{words[i % 10]} {words[i // 10 % 10]} {words[i // 100 % 10]} number{i}"
        write_skill(tmp_path / "skills", f"tiny/{i:04d}", f"---\nname: tiny-{i:04d}\ndescription: {description}\n---\n")
    embedder = HashingEmbedder()

    report = build_index([SkillsRoot(tmp_path / "skills")], tmp_path / "index", embedder)

    assert report.counts() == {"added": count, "updated": 0, "removed": 0, "unchanged": 0, "skipped": 0}
    router = SkillRouter.open(tmp_path / "index", embedder=embedder)
    for i in (0, 1234, count - 1):
        description = f"{words[i % 10]} {words[i // 10 % 10]} {words[i // 100 % 10]} number{i}"
        assert router.search(description, k=1)[0].name == f"tiny-{i:04d}"
