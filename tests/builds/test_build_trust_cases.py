"""Issue 33's cases 2 to 6 on the newer builds, from the outside: one driver run per build (drivers/trust_cases.py).

The driver's home is a copy of the build's installed home (the plugin as
``hermes plugins install`` put it there, its settings) with no index and no
skills of its own: the example skills are in a team repository given as
``skills.external_dirs``, whose ``_org/.active_org`` is a link to /dev/zero
(as git checks out a committed link) on a build that leaves that marker to
the plugin. Its decision record keeps message text and is a link to a file of
the user's. A second home, whose plugin folder is a link to the first's,
holds one private skill. One Hermes process serves every case's turns and runs the
build's ``hermes semantic-skills build`` in each home. The project venv's
Hermes (0.19.0) runs these cases in tests/reliability and tests/hermes.
"""

from __future__ import annotations

import json
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from buildkit import DOCKER, DRIVERS, OWN_BUILD, once, reads_the_org_marker_itself
from hermes_testkit import EXAMPLE_SKILLS, NO_RUNTIME_INSTALLS, PLUGIN
from support import write_skill

REAL = "docker-compose-debug"
CARD_NUMBER = "4111 1111 1111 1111"  # in the message of the driver's card turn
IMPOSTORS = ("coptic-ro", "title-case")  # the folders of the driver's look-alike skills
NOTE_KEY = "semantic_skills"  # the note the plugin adds to a skill_manage result, as the model reads it
SECRET = "ACME-INTERNAL-7f3c2a"  # in the private home's skill body only
PRIVATE_SKILL = f"""---
name: acme-compose-runbook
description: Debug Acme's docker compose services - a postgres container restarting, a web service not connecting.
---
# Acme compose runbook ({SECRET})

Our postgres container runs on db-7.acme.internal; restart it first, then the web service.
"""
USERS_NOTES = b"the user's own notes\n"


@dataclass
class Trust:
    """Where the driver ran, and what it saw (``report``, see drivers/trust_cases.py)."""

    home: Path  # the driver's home
    team: Path  # its skills.external_dirs repository
    private: Path  # the second home, whose plugin folder is a link to home's
    users_file: Path  # where home's decisions.jsonl was a link to
    dev_zero_marker: bool  # the team repository's _org/.active_org is a link to /dev/zero (case 2 ran)
    report: dict = field(default_factory=dict)

    @property
    def index(self) -> Path:
        return self.home / PLUGIN / "skills_index"


@pytest.fixture(scope="module")
def trust(build, shared, elsewhere, request) -> Trust:
    if build.label == OWN_BUILD:
        pytest.skip("the project venv's Hermes runs these cases in tests/reliability (test_special_files.py, "
                    "test_look_alike_names.py) and tests/hermes/test_hermes_home_index.py")
    installed = request.getfixturevalue("installed")  # only now: installing a build takes a minute or more
    work = shared / f"trust-{build.label}"
    trust = Trust(work / "home", work / "team-skills", work / "private", work / "elsewhere" / "notes.txt",
                  dev_zero_marker=not reads_the_org_marker_itself(build))

    def drive() -> dict:
        prepare(installed.home, trust)
        spec = {"hermes": str(build.hermes), "private_home": str(trust.private), "words": trust.dev_zero_marker}
        done = build.run_python(trust.home, str(DRIVERS / "trust_cases.py"), json.dumps(spec), cwd=elsewhere)
        assert done.returncode == 0, done.explain()
        return json.loads(done.stdout.strip().splitlines()[-1])

    trust.report = once(shared, build.label, "trust_report", drive)
    return trust


def prepare(installed: Path, trust: Trust) -> None:
    """The driver's home, its team repository and the user's file its record links to; the private home."""
    shutil.rmtree(trust.home.parent, ignore_errors=True)  # what a failed run left

    def code_and_settings(folder: str, names: list[str]) -> list[str]:
        if Path(folder) == installed:  # its skills, its state folder (the index with it), its logs and sessions
            return [name for name in names if name in ("skills", PLUGIN, "logs", "sessions")
                    or name.startswith("state.db")]
        return [name for name in names if name == "skills_index"]  # where earlier releases kept the index

    shutil.copytree(installed, trust.home, symlinks=True, ignore=code_and_settings)
    (trust.home / "skills").mkdir()
    shutil.copytree(EXAMPLE_SKILLS, trust.team)
    if trust.dev_zero_marker:
        (trust.team / "_org").mkdir()
        (trust.team / "_org" / ".active_org").symlink_to("/dev/zero")
    config = yaml.safe_load((trust.home / "config.yaml").read_text())
    config.setdefault("skills", {})["external_dirs"] = [str(trust.team)]
    settings = config["plugins"].setdefault("entries", {}).setdefault(PLUGIN, {}).setdefault("settings", {})
    private_settings = dict(settings)  # the embedder the installed home uses
    settings["record_message_text"] = True
    (trust.home / "config.yaml").write_text(yaml.safe_dump(config))
    trust.users_file.parent.mkdir()
    trust.users_file.write_bytes(USERS_NOTES)
    trust.users_file.chmod(0o644)
    (trust.home / PLUGIN).mkdir()
    (trust.home / PLUGIN / "decisions.jsonl").symlink_to(trust.users_file)

    (trust.private / "plugins").mkdir(parents=True)
    (trust.private / "plugins" / PLUGIN).symlink_to(trust.home / "plugins" / PLUGIN, target_is_directory=True)
    write_skill(trust.private / "skills", "ops/acme-compose-runbook", PRIVATE_SKILL)
    (trust.private / "config.yaml").write_text(yaml.safe_dump(
        {"plugins": {"enabled": [PLUGIN], "entries": {PLUGIN: {"settings": private_settings}}}, **NO_RUNTIME_INSTALLS}))


def test_a_link_to_dev_zero_in_a_team_repository_floods_neither_the_word_search_nor_build(trust):
    """#33.2: ``search_skills``' word search (before the first build) took the Hermes process to 3.1 GB before
    MemoryError, ``build`` to 3 GB. The word search answers within 1 GB more of the process's data and logs the
    marker once; ``build``, under a 2 GB cap, says it in one line and indexes every skill."""
    if not trust.dev_zero_marker:
        pytest.skip("this Hermes reads _org/.active_org of each skills.external_dirs folder itself, so a link to "
                    "/dev/zero there floods it without the plugin")
    marker = trust.team / "_org" / ".active_org"
    said = f"skipped {marker}: a character device, not a regular file; no organisation's mirrored skills are read"
    words = trust.report["words"]
    answer = json.loads(words["tool_results"][-1])
    assert answer.get("matched") == "words" and answer["results"][0]["name"] == REAL, answer
    logged = [line for line in words["log"].splitlines() if str(marker) in line]
    assert len(logged) == 1 and logged[0].endswith(said), logged

    built = trust.report["build"]
    assert built["returncode"] == 0, built
    assert [line for line in built["stdout"].splitlines() if str(marker) in line] == [f"  {said}"], built
    assert f"Indexed {len(list(trust.team.rglob('SKILL.md')))} skills in {trust.index} " in built["stdout"], built


def test_two_homes_linking_one_plugin_folder_never_read_each_others_index(trust):
    """#33.3: the default index followed the linked plugin folder, so after the private home built, the other
    home's chat got its private skill. Each home's build goes into its own home; the other's turn is routed from
    its own index, with nothing of the private skill; the shared folder holds no index."""
    report = trust.report
    assert report["served"], "the driver's home had no index to route with"
    delivered = report["card"]
    assert SECRET not in delivered and "acme-compose-runbook" not in delivered, delivered
    assert delivered.startswith(DOCKER) and delivered.count("<skill-context") == 1, delivered[:400]
    assert f'{CARD_NUMBER}\n\n<skill-context name="{REAL}"' in delivered, delivered[:400]

    private_build = report["private_build"]
    assert private_build["returncode"] == 0, private_build
    assert f"Indexed 1 skills in {trust.private / PLUGIN / 'skills_index'} " in private_build["stdout"], private_build
    assert f" skills in {trust.index} " in report["build"]["stdout"], report["build"]
    assert not (trust.home / "plugins" / PLUGIN / "skills_index").exists()


@pytest.mark.parametrize("folder", IMPOSTORS)
def test_a_skill_the_agent_writes_under_a_look_alike_name_neither_takes_nor_hides_the_real_one(trust, folder):
    """#33.4, #33.5: the agent's ``skill_manage create`` of a look-alike of the real skill in ``external_dirs``
    left the real one neither injected nor returned. The result of that call says the new skill will not be
    routed and why; after the automatic re-index the real skill is injected and returned first, the impostor
    neither, and ``search_skills`` names it as not routed."""
    seen = trust.report["look_alikes"][folder]
    assert seen["reindexed"], "the plugin's re-index after skill_manage did not reach search_skills"
    routed = seen["routed"]
    assert routed.startswith(f'{DOCKER}\n\n<skill-context name="{REAL}"'), routed[:400]
    assert "docker compose ps -a" in routed and "IMPOSTOR" not in routed
    found = json.loads(seen["search_skills"][-1])
    names = [result["name"] for result in found["results"]]
    impostors = {trust.report["look_alikes"][other]["name"] for other in IMPOSTORS}
    assert names[0] == REAL and names.count(REAL) == 1 and not impostors & set(names), found
    assert "docker compose ps -a" in found["best"]["content"]

    assert {"name": seen["name"], "reads_as": REAL} in found["not_routed"]["skills"], found
    wrote = json.loads(seen["skill_manage"][-1])
    assert wrote["success"] is True and f'reads as "{REAL}"' in wrote.get(NOTE_KEY, ""), wrote


def test_the_decision_record_as_a_link_is_set_aside_and_its_target_never_touched(trust):
    """#33.6: with ``record_message_text`` on, ``decisions.jsonl`` as a link sent the message text (a card number)
    to a 0644 file outside the state folder. The link is moved aside with one line in agent.log, the record is
    written afresh in the state folder (0600, the message in it), and the user's file keeps its bytes and mode."""
    users_file = trust.users_file
    assert users_file.read_bytes() == USERS_NOTES and stat.S_IMODE(users_file.stat().st_mode) == 0o644
    record = trust.home / PLUGIN / "decisions.jsonl"
    info = record.lstat()
    assert stat.S_ISREG(info.st_mode) and info.st_nlink == 1 and stat.S_IMODE(info.st_mode) == 0o600
    assert CARD_NUMBER.encode() in record.read_bytes()
    log = (trust.home / "logs" / "agent.log").read_text(errors="replace")
    said = [line for line in log.splitlines() if str(record) in line]
    assert len(said) == 1 and "a symbolic link, not a regular file" in said[0], said
    assert "decisions.jsonl.damaged" in said[0], said
