"""The decision gate: the floor, the relative gap and the verdict."""

from __future__ import annotations

import pytest

from semantic_skills.gates import FLOOR, MIN_SEPARATION, Gate, relative_gap

# --------------------------------------------------------------------------- Gate


def test_the_floor_never_goes_below_0_30():
    assert Gate(0.1, 0.0).floor == FLOOR
    assert Gate.from_router_settings({"threshold": 0.2}).floor == FLOOR
    assert Gate.from_router_settings({}, floor=0.05).floor == FLOOR
    assert Gate.from_router_settings({"threshold": 0.42}).floor == 0.42


def test_router_settings_give_the_gate_and_the_floor_override_wins():
    gate = Gate.from_router_settings({"threshold": 0.4, "min_relative_gap": 0.6}, floor=0.5)
    assert (gate.floor, gate.min_relative_gap) == (0.5, 0.6)


@pytest.mark.parametrize(
    "similarity, gap, inject, words",
    [(0.29, 5.0, False, "below the floor"), (0.8, 0.1, False, "relative gap"), (0.31, 0.26, True, ">=")],
)
def test_the_verdict_needs_both_the_floor_and_the_relative_gap(similarity, gap, inject, words):
    decided, reason = Gate(0.30, 0.25).verdict(similarity, gap)
    assert decided is inject and words in reason


def test_relative_gap_divides_by_the_separation_with_a_lower_bound():
    assert relative_gap(0.8, 0.5, 0.6) == pytest.approx(0.5)
    assert relative_gap(0.8, 0.5, 0.0) == pytest.approx(0.3 / MIN_SEPARATION)
