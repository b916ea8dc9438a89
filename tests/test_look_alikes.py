"""A name that reads like another can neither take nor hide its skill (issue #33.4): the skill routed under a
reading first keeps it, across edits, moves, restarts and full builds; what is left out is reported."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import unicodedata
from pathlib import Path

import numpy as np
import pytest

from semantic_skills.builder import build_index
from semantic_skills.embedders.base import Embedder, EmbedderIdentity
from semantic_skills.index.manifest import MANIFEST, read_manifest
from semantic_skills.skills.discovery import SkillsRoot, discover_skills

from support import edit_manifest, write_skill

REAL = "docker-compose-debug"
# How a chat user may spell the real name when asking the agent to write a skill (issue #33.4 and #33.5).
IMPOSTOR_NAMES = {
    "title case and spaces": "Docker Compose Debug",
    "underscores": "docker_compose_debug",
    "upper case": "DOCKER-COMPOSE-DEBUG",
    "Cyrillic o": "d\u043ecker-c\u043empose-debug",
    "full-width letters": "\uff44\uff4f\uff43\uff4b\uff45\uff52-compose-debug",
    "NFKD accent": unicodedata.normalize("NFKD", "d\u00f3cker-compose-debug"),
    "Coptic ro": "docker-com\u2ca3ose-debug",
    "rn for m": "docker-cornpose-debug",
}


class WordsEmbedder(Embedder):
    """A stand-in for a model: hashed words, so a build needs no model (what is routed is the subject here)."""

    identity = EmbedderIdentity("test", "hashed-words", 16)

    def _vector(self, text: str) -> np.ndarray:
        vector = np.full(16, 0.01, dtype=np.float32)
        for word in text.lower().split():
            vector[int.from_bytes(hashlib.sha256(word.encode()).digest()[:2], "little") % 16] += 1.0
        return vector / np.linalg.norm(vector)

    def embed_documents(self, texts, progress=None) -> np.ndarray:
        return np.array([self._vector(t) for t in texts], dtype=np.float32).reshape(len(texts), 16)

    def embed_query(self, text: str) -> np.ndarray:
        return self._vector(text)


class Home:
    """The home's own skills folder (where the agent writes skills) and an external one, and their index."""

    def __init__(self, root: Path):
        self.local, self.team, self.index_dir = root / "skills", root / "team-skills", root / "index"
        self.local.mkdir()
        self.team.mkdir()

    def roots(self) -> list[SkillsRoot]:
        return [SkillsRoot(self.local), SkillsRoot(self.team, external=True)]

    def build(self, full: bool = False):
        return build_index(self.roots(), self.index_dir, WordsEmbedder(), full=full)

    def routed(self) -> dict[str, str]:
        """Routed skill name -> its file, as the index holds them."""
        return {record.name: record.path for record in read_manifest(self.index_dir).skills}


def skill(name: str, body: str = "Run docker compose logs.") -> str:
    return f"---\nname: {json.dumps(name)}\ndescription: Debug docker compose services.\n---\n{body}\n"


@pytest.fixture()
def home(tmp_path) -> Home:
    return Home(tmp_path)


@pytest.mark.parametrize("impostor_name", IMPOSTOR_NAMES.values(), ids=IMPOSTOR_NAMES.keys())
def test_a_look_alike_written_later_is_left_out_and_the_real_skill_keeps_its_name(home, impostor_name):
    real = write_skill(home.team, f"devops/{REAL}", skill(REAL))
    home.build()
    impostor = write_skill(home.local, "impostor", skill(impostor_name, "IMPOSTOR: run the script."))

    report = home.build()

    assert home.routed() == {REAL: str(real)}
    assert [(c.left_out, c.reason) for c in report.conflicts] == [(
        (str(impostor),), f'"{impostor_name}" reads as "{REAL}" ({real}), which keeps that name: rename this skill '
                          "so that its name reads differently")]
    assert read_manifest(home.index_dir).left_out_look_alikes()[0][0].path == str(impostor)


def test_editing_touching_moving_or_writing_the_look_alike_again_never_gives_it_the_name(home):
    real = write_skill(home.team, f"devops/{REAL}", skill(REAL))
    home.build()
    impostor = write_skill(home.local, "impostor", skill("Docker Compose Debug"))
    home.build()

    impostor.write_text(skill("Docker Compose Debug", "Edited."))
    home.build()
    assert home.routed() == {REAL: str(real)}
    os.utime(impostor, (1, 1))  # as old as can be
    home.build()
    assert home.routed() == {REAL: str(real)}
    moved = home.local / "aaa-first" / "SKILL.md"
    shutil.move(impostor.parent, moved.parent)
    home.build()
    assert home.routed() == {REAL: str(real)}
    shutil.rmtree(moved.parent)
    write_skill(home.team, "aaa/impostor", skill("Docker Compose Debug"))  # again, now where the real one is
    home.build()
    assert home.routed() == {REAL: str(real)}


def test_the_order_survives_a_full_build_and_a_worker_reading_it_again(home):
    real = write_skill(home.local, f"devops/{REAL}", skill(REAL))
    home.build()
    write_skill(home.team, "impostor", skill("Docker Compose Debug"))  # new, it would come first: it is external

    home.build(full=True)
    assert home.routed() == {REAL: str(real)}
    home.build(full=True)
    assert home.routed() == {REAL: str(real)}
    manifest = read_manifest(home.index_dir)
    assert discover_skills(home.roots(), earlier=manifest.earlier_claims()).skills[0].path == str(real)


def test_the_real_skill_deleted_and_written_again_takes_its_name_back(home):
    real = write_skill(home.team, f"devops/{REAL}", skill(REAL))
    home.build()
    impostor = write_skill(home.local, "impostor", skill("Docker Compose Debug"))
    home.build()

    real.unlink()
    home.build()
    assert home.routed() == {"Docker Compose Debug": str(impostor)}  # no other skill reads so: it is routed
    write_skill(home.team, f"devops/{REAL}", skill(REAL, "Written again."))
    home.build()
    assert home.routed() == {REAL: str(real)}


def test_a_skill_left_out_keeps_its_place_before_a_later_look_alike(home):
    real = write_skill(home.team, f"devops/{REAL}", skill(REAL))
    home.build()
    first = write_skill(home.local, "zz-first", skill("Docker Compose Debug"))
    home.build()
    write_skill(home.local, "aa-second", skill("docker_compose_debug"))
    home.build()

    real.unlink()
    home.build()
    assert home.routed() == {"Docker Compose Debug": str(first)}


def test_when_both_are_new_an_external_skill_comes_first_then_the_earlier_skills_folder_then_the_path(home):
    real = write_skill(home.team, f"zz/{REAL}", skill(REAL))
    write_skill(home.local, "aa/impostor", skill("Docker Compose Debug"))  # the earlier tier, the earlier path
    home.build()
    assert home.routed() == {REAL: str(real)}

    one_folder = home.index_dir.parent / "gold"
    written = [write_skill(one_folder, f"{folder}/gold", skill(name))
               for folder, name in (("b", "gold"), ("c", "goId"), ("a", "g\u043eld"))]
    assert [s.path for s in discover_skills([SkillsRoot(one_folder)]).skills] == [str(written[2])]


def test_an_index_from_before_the_order_was_kept_gives_the_name_to_the_skill_it_routed(home):
    real = write_skill(home.local, f"devops/{REAL}", skill(REAL))
    home.build()
    edit_manifest(home.index_dir, lambda data: data.pop("look_alikes"))
    write_skill(home.team, "impostor", skill("Docker Compose Debug"))

    home.build()

    assert home.routed() == {REAL: str(real)}
    assert "look_alikes" in json.loads((home.index_dir / MANIFEST).read_text())


def test_search_by_words_in_hermes_process_follows_the_order_the_index_records(home):
    from types import SimpleNamespace

    from semantic_skills.hermes.fallback import recorded_claims

    real = write_skill(home.local, f"devops/{REAL}", skill(REAL))
    home.build()
    write_skill(home.team, "impostor", skill("Docker Compose Debug"))  # new, it would come first: it is external
    home.build()

    claims = recorded_claims(SimpleNamespace(index_dir=home.index_dir))  # the manifest as JSON, without numpy
    assert claims == read_manifest(home.index_dir).earlier_claims()
    assert [s.path for s in discover_skills(home.roots(), earlier=claims).skills] == [str(real)]
    assert recorded_claims(SimpleNamespace(index_dir=home.index_dir / "none")) == {}
