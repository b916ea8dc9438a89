"""The router and its ranking on small synthetic indexes: features, decisions, the floor per message,
and which embedder opens an index."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semantic_skills.embedders.base import Embedder, EmbedderIdentity
from semantic_skills.errors import ConfigError, EmbedderMismatch
from semantic_skills.gates import DEFAULT_FLOOR, FLOOR, FULL, HINT, Gate
from semantic_skills.index.manifest import MANIFEST, Manifest, SkillRecord
from semantic_skills.index.store import write_index
from semantic_skills.ranking import _neighbour_table, _padded_views, _separation
from semantic_skills.router import SkillRouter
from semantic_skills.settings import EmbedderSettings

DIM = 16


def unit(*values: float) -> np.ndarray:
    vector = np.zeros(DIM, dtype=np.float32)
    vector[: len(values)] = values
    return vector / np.linalg.norm(vector)


class TableEmbedder(Embedder):
    """Returns a fixed vector per query text and counts the calls."""

    def __init__(self, table: dict[str, np.ndarray]):
        self.identity = EmbedderIdentity("fake", "table", DIM)
        self.table = table
        self.calls = 0

    def embed_query(self, text: str) -> np.ndarray:
        self.calls += 1
        return self.table[text]


def write_synthetic_index(folder: Path, skills: dict[str, list[np.ndarray]], router: dict | None = None) -> Path:
    """An index whose skill ``name`` has the given vector rows (main first); descriptions repeat the name."""
    records, rows = [], []
    for name, vectors in skills.items():
        records.append(SkillRecord(name, name, f"/skills/{name}/SKILL.md", name, "", f"about {name}", (), (), (),
                                   False, len(rows), len(vectors)))
        rows.extend(vectors)
    manifest = Manifest(EmbedderIdentity("fake", "table", DIM), "test", records, "", len(rows), router=router or {})
    write_index(folder, manifest, np.array(rows, dtype=np.float32))
    return folder


# --------------------------------------------------------------------------- ranking


def separations(main: np.ndarray, eligible: np.ndarray | None = None) -> list[float]:
    neighbours, cosines = _neighbour_table(main)
    eligible = np.ones(len(main), dtype=bool) if eligible is None else eligible
    return [_separation(neighbours[i], cosines[i], eligible) for i in range(len(main))]


def test_separation_is_small_for_a_skill_with_look_alikes():
    separation = separations(np.array([unit(1, 0), unit(1, 0.05), unit(0, 1), unit(0, 0, 1)]))
    assert separation[0] < separation[2] and separation[1] < separation[3]


def test_separation_drops_the_skill_itself_even_among_exact_duplicates():
    separation = separations(np.array([unit(1, 0)] * 3 + [unit(0, 1)]))
    # each duplicate's 3 nearest others: 2 duplicates (cosine 1) and the orthogonal skill (cosine 0)
    assert separation[:3] == pytest.approx([1 - 2 / 3] * 3, abs=1e-5)


def test_separation_counts_only_eligible_neighbours_as_if_the_others_were_absent():
    main = np.array([unit(1, 0), unit(1, 0.05), unit(0, 1), unit(0, 0, 1)])
    without_look_alike = np.array([True, False, True, True])
    assert separations(main, without_look_alike)[0] == pytest.approx(1.0, abs=1e-5)  # only orthogonal ones left
    assert separations(main)[0] < 0.7
    assert separations(main, np.array([True, False, False, False]))[0] == 1.0


def test_a_single_skill_has_separation_one():
    assert separations(np.array([unit(1)])) == [1.0]


def test_padded_views_repeat_the_last_view_and_give_view_less_skills_their_main_vector():
    vectors = np.arange(6 * DIM, dtype=np.float32).reshape(6, DIM)
    starts, counts = np.array([0, 3, 4]), np.array([3, 1, 2])  # skill 0: main + 2 views, skill 1: main only
    views = _padded_views(vectors, starts, counts)
    assert views.shape == (3, 2, DIM)
    assert (views[0] == vectors[[1, 2]]).all()
    assert (views[1] == vectors[[3, 3]]).all()
    assert (views[2] == vectors[[5, 5]]).all()
    assert _padded_views(vectors, np.arange(6), np.ones(6, dtype=np.int64)) is None


# --------------------------------------------------------------------------- routing on a synthetic index


def axis(i: int) -> np.ndarray:
    return unit(*([0.0] * i + [1.0]))


@pytest.fixture()
def table_router(tmp_path):
    """Ten distinct skills s0..s9, two near-duplicates twin-a/twin-b, and "viewed" with a sentence view."""
    skills = {f"s{i}": [axis(i)] for i in range(10)}
    skills["twin-a"] = [axis(10)]
    skills["twin-b"] = [unit(*([0.0] * 10 + [1.0, 0.05]))]
    skills["viewed"] = [axis(12), unit(*([0.0] * 12 + [1.0, 1.0]))]
    embedder = TableEmbedder({
        "about s0": unit(1, 0.1, 0.1),
        "a bit of everything": unit(*[1.0] * 10),
        "the twins": axis(10),
        "faintly s0": unit(*([0.25] + [0.0] * 14 + [1.0])),
        "thanks!": axis(0),
        "half viewed": unit(*([0.0] * 13 + [1.0, 1.0])),
    })
    write_synthetic_index(tmp_path / "index", skills)
    return SkillRouter.open(tmp_path / "index", embedder=embedder), embedder


def test_a_clear_match_is_injected_with_its_features(table_router):
    router, _ = table_router
    decision = router.route("about s0")
    assert decision.skill.name == "s0" and decision.mode == FULL and decision.named == [decision.skill]
    assert decision.features["similarity"] >= decision.gate.floor
    assert decision.features["relative_gap"] >= decision.gate.full_relative_gap
    assert decision.score == decision.candidates[0].score
    line = json.loads(json.dumps(decision.as_dict()))
    assert line["features"]["relative_gap"] > 0 and (line["mode"], line["named"]) == (FULL, ["s0"])


def test_a_message_that_fits_many_skills_equally_injects_nothing(table_router):
    router, _ = table_router
    decision = router.route("a bit of everything", floor=FLOOR)
    assert decision.features["similarity"] >= FLOOR
    assert decision.skill is None and "relative gap" in decision.reason
    assert decision.mode is None and decision.named == [] and decision.as_dict()["mode"] is None
    assert decision.candidates[0].name.startswith("s")


def test_near_duplicates_do_not_block_a_specific_message(table_router):
    router, _ = table_router
    decision = router.route("the twins")
    assert decision.skill is not None and decision.skill.name in {"twin-a", "twin-b"}
    assert decision.mode == FULL  # the runner-up is the top skill's near duplicate: no reason to doubt
    assert {c.name for c in decision.candidates[:2]} == {"twin-a", "twin-b"}


def test_a_different_skill_close_behind_makes_it_a_hint_naming_both(tmp_path):
    skills = {"alpha": [axis(0)], "beta": [unit(0.3, 1.0)], **{f"s{i}": [axis(i)] for i in range(2, 12)}}
    write_synthetic_index(tmp_path / "index", skills)
    router = SkillRouter.open(tmp_path / "index", embedder=TableEmbedder({"close call": unit(1.0, 0.6)}))
    decision = router.route("close call")
    assert decision.features["relative_gap"] >= decision.gate.full_relative_gap  # it stands out from the crowd
    assert decision.features["relative_margin"] < decision.gate.full_relative_margin  # but not from beta
    assert decision.mode == HINT and [c.name for c in decision.named] == ["alpha", "beta"]
    assert decision.skill.name == "alpha" and decision.as_dict()["named"] == ["alpha", "beta"]


def test_a_weak_match_is_below_the_floor(table_router):
    router, _ = table_router
    decision = router.route("faintly s0")
    assert decision.skill is None and "floor" in decision.reason
    assert decision.candidates[0].name == "s0"


def test_small_talk_is_never_injected_but_still_ranked(table_router):
    router, _ = table_router
    decision = router.route("thanks!")
    assert decision.skill is None and decision.reason == "small talk" and decision.features == {}
    assert decision.candidates[0].name == "s0"


def test_route_embeds_the_message_once_and_candidates_match_search(table_router):
    router, embedder = table_router
    decision = router.route("a bit of everything")
    assert embedder.calls == 1
    assert [c.name for c in router.search("a bit of everything", k=5)] == [c.name for c in decision.candidates]


def test_a_skills_best_sentence_view_counts_for_half_its_similarity(table_router):
    router, _ = table_router
    viewed = router.search("half viewed", k=1)[0]
    query = unit(*([0.0] * 13 + [1.0, 1.0]))
    expected = (float(axis(12) @ query) + float(unit(*([0.0] * 12 + [1.0, 1.0])) @ query)) / 2
    assert viewed.name == "viewed" and viewed.similarity == pytest.approx(expected, abs=1e-5)


def test_an_excluded_skill_decides_as_if_it_were_not_in_the_index(tmp_path):
    twin = unit(1, 0.3)
    skills = {"gold": [unit(1, 0)], "twin": [twin], **{f"s{i}": [axis(i + 2)] for i in range(10)}}
    query = unit(1, 0.05)
    write_synthetic_index(tmp_path / "with", skills)
    write_synthetic_index(tmp_path / "without", {n: v for n, v in skills.items() if n != "gold"})

    def open_router(name: str) -> SkillRouter:
        return SkillRouter.open(tmp_path / name, embedder=TableEmbedder({"route me": query}))

    excluded = open_router("with").route("route me", exclude=["gold"])
    absent = open_router("without").route("route me")
    assert excluded.candidates[0].name == absent.candidates[0].name == "twin"
    assert excluded.features["separation"] == pytest.approx(absent.features["separation"], abs=1e-5)
    assert excluded.features["relative_gap"] == pytest.approx(absent.features["relative_gap"], abs=1e-5)
    kept = open_router("with").route("route me")
    assert kept.candidates[0].name == "gold" and kept.features["separation"] < excluded.features["separation"]


@pytest.mark.parametrize(("agent_name", "excluded"), [("gold", True), ("gold" + "-and-more" * 8, False),
                                                      ("go\u200bld", False), ("gold\n", False), ("Gold", False)])
def test_a_skill_is_excluded_by_its_exact_name_cut_as_the_agent_cuts_it(tmp_path, agent_name, excluded):
    long_name = ("gold" + "-and-more" * 8)[:64]  # the agent cuts names to 64 characters; so does the index
    skills = {"gold": [unit(1, 0)], long_name: [unit(0, 1)], **{f"s{i}": [axis(i + 2)] for i in range(10)}}
    write_synthetic_index(tmp_path / "index", skills)
    router = SkillRouter.open(tmp_path / "index", embedder=TableEmbedder({"route me": unit(1, 0.05),
                                                                         "the long one": unit(0, 1)}))
    assert router.route("route me").skill.name == "gold"
    assert (router.route("route me", exclude=[agent_name]).candidates[0].name != "gold") is excluded
    if len(agent_name) > 64:  # a name disabled in full keeps out the skill the agent lists under its first 64
        assert router.route("the long one", exclude=[agent_name]).candidates[0].name != long_name


def test_calibrated_settings_in_the_manifest_drive_the_gate(tmp_path):
    skills = {"alpha": [unit(1, 0)], "beta": [unit(0, 1)]}
    embedder = TableEmbedder({"about alpha": unit(1, 0.1)})
    write_synthetic_index(tmp_path / "index", skills, router={"threshold": 0.35, "min_relative_gap": 5.0})
    router = SkillRouter.open(tmp_path / "index", embedder=embedder)
    assert (router.gate.floor, router.gate.min_relative_gap) == (0.35, 5.0)
    assert router.route("about alpha").skill is None
    data = json.loads((tmp_path / "index" / MANIFEST).read_text())
    assert data["router"]["min_relative_gap"] == 5.0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-1, 1, allow_nan=False), min_size=DIM, max_size=DIM)
       .filter(lambda v: any(abs(x) > 1e-3 for x in v)))
def test_nothing_below_the_floor_is_ever_injected(tmp_path_factory, values):
    folder = tmp_path_factory.mktemp("floor")
    rng = np.random.default_rng(7)
    skills = {f"s{i}": [v / np.linalg.norm(v) for v in rng.standard_normal((2, DIM)).astype(np.float32)]
              for i in range(12)}
    query = np.array(values, dtype=np.float32) / np.linalg.norm(values)
    write_synthetic_index(folder, skills, router={"min_relative_gap": 0.0})
    decision = SkillRouter.open(folder, embedder=TableEmbedder({"q": query})).route("q")
    if decision.skill is not None:
        assert decision.features["similarity"] >= FLOOR
        assert decision.skill == decision.candidates[0]


def test_a_floor_given_with_a_message_applies_to_that_message_only(table_router):
    router, _ = table_router
    raised = router.route("about s0", floor=1.0)

    assert raised.skill is None and "below the floor 1.00" in raised.reason and raised.gate.floor == 1.0
    assert router.route("about s0").skill.name == "s0" and router.gate.floor == DEFAULT_FLOOR


# --------------------------------------------------------------------------- which embedder opens an index


def test_default_embedder_settings_open_an_index_with_the_embedder_that_built_it(tmp_path):
    write_synthetic_index(tmp_path / "index", {"alpha": [unit(1, 0)], "beta": [unit(0, 1)]})

    with pytest.raises(ConfigError, match="unknown embedder backend 'fake'"):  # the index's own: no such backend here
        SkillRouter.from_settings(tmp_path / "index", EmbedderSettings())


def test_embedder_settings_given_by_name_must_match_the_index(tmp_path):
    write_synthetic_index(tmp_path / "index", {"alpha": [unit(1, 0)], "beta": [unit(0, 1)]})

    for chosen, explicit in ((EmbedderSettings(), True), (EmbedderSettings(backend="onnx", batch_size=8), False)):
        with pytest.raises(EmbedderMismatch, match=f"the configured embedder is {chosen.backend}"):
            SkillRouter.from_settings(tmp_path / "index", chosen, explicit=explicit)


def test_an_index_without_a_calibrated_gate_uses_the_gate_shipped_for_its_embedder(tmp_path, monkeypatch):
    from semantic_skills import gates

    fitted = Gate(0.6, 0.4, 0.5, 0.3)
    monkeypatch.setitem(gates.EMBEDDER_GATES, ("fake", "table"), fitted)
    write_synthetic_index(tmp_path / "fitted", {"s0": [axis(0)], "s1": [axis(1)]})
    embedder = TableEmbedder({"faint": unit(0.55, 0.0, 1.0)})
    router = SkillRouter.open(tmp_path / "fitted", embedder=embedder)
    assert router.gate == fitted
    assert "below the floor 0.60" in router.route("faint").reason  # similarity 0.48: the bundled floor would pass it
    calibrated = {"threshold": 0.45, "min_relative_gap": 0.3, "full_relative_gap": 0.35, "full_relative_margin": 0.1}
    write_synthetic_index(tmp_path / "own", {"s0": [axis(0)], "s1": [axis(1)]}, router=calibrated)
    assert SkillRouter.open(tmp_path / "own", embedder=embedder).gate == Gate(0.45, 0.3, 0.35, 0.1)
    monkeypatch.delitem(gates.EMBEDDER_GATES, ("fake", "table"))
    assert SkillRouter.open(tmp_path / "fitted", embedder=embedder).gate == Gate()


def test_the_lexical_bonus_shrinks_with_the_index_separation_and_keeps_its_weight_on_the_bundled_scale():
    from semantic_skills.ranking import FULL_LEXICAL_SEPARATION, LEXICAL_WEIGHT, _lexical_weight

    spread = np.array([[0.5] * 9] * 4)  # median separation 0.5: the bundled model's sets have 0.36 to 0.64
    packed = np.array([[0.9] * 9] * 4)  # 0.1: multilingual-e5's are 0.08 to 0.15
    assert _lexical_weight(spread) == LEXICAL_WEIGHT
    assert _lexical_weight(packed) == pytest.approx(LEXICAL_WEIGHT * 0.1 / FULL_LEXICAL_SEPARATION)
    assert _lexical_weight(np.zeros((1, 0))) == LEXICAL_WEIGHT


def test_on_a_packed_index_word_overlap_does_not_outrank_a_closer_skill(tmp_path):
    near, far = unit(1.0, 0.20), unit(1.0, 0.0, 0.20)  # cosine 0.96 to each other, as e5 packs skills
    skills = {"closer": [near], "same-words": [far]}
    skills.update({f"filler-{i}": [unit(1.0, 0.0, 0.0, 0.2, *([0.0] * i + [0.2]))] for i in range(6)})
    write_synthetic_index(tmp_path / "index", skills)
    query = unit(1.0, 0.25)  # cosine 0.999 to "closer", 0.951 to "same-words", which shares its words
    router = SkillRouter.open(tmp_path / "index", embedder=TableEmbedder({"about same-words": query}))
    top, second = router.search("about same-words", k=2)
    assert (top.name, second.name, second.lexical) == ("closer", "same-words", 1.0)
    assert router._state.lexical_weight < 0.01  # a bonus of 0.05 would put "same-words" first
