"""Fit the three-way gate to labelled messages: when to inject a skill whole, when a hint, when nothing.

Every labelled message is routed once, and each one with a skill once more
without its right skills (a leave-out copy, which should get nothing); the
gate's features are recorded and the decisions re-judged for every setting on
a grid, so nothing is embedded twice. Two fits, one after the other:

1. **full**: the relative gap and relative margin with the most right full
   injections whose full precision (right full injections over all full
   injections into the labelled messages) is at least ``min_full_precision``;
2. **floor and hint gap**, with that full gate applied above the floor: the
   setting that names the right skill (whole or in a hint) most often whose
   objective precision is at least ``min_precision``. The objective counts
   every injection, hints included, into the leave-out copies as a wrong one:
   a gate that points uncovered messages at look-alikes pays for it.

``save_gate`` stores the chosen gate in the index.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from .evaluation import RoutedQuery, rate
from .gates import DEFAULT_MIN_FULL_PRECISION, DEFAULT_MIN_PRECISION, FLOOR, Gate
from .index.store import write_router_section

FLOOR_GRID = tuple(round(FLOOR + 0.02 * i, 2) for i in range(31))  # 0.30 .. 0.90 (compressed scales sit high)
GAP_GRID = tuple(round(0.01 * i, 2) for i in range(101))  # 0.00 .. 1.00
MARGIN_GRID = tuple(round(0.05 * i, 2) for i in range(11))  # 0.00 .. 0.50


@dataclass(frozen=True)
class GatePoint:
    """What one gate setting does on a labelled set (rates as ``eval`` reports them).

    ``leave_out_full`` / ``leave_out_any`` are over the leave-out copies (None
    without any); ``objective_precision`` is right named skills over every
    injection, those into leave-out copies included.
    """

    gate: Gate
    full_correct: float
    full_precision: float | None
    named_correct: float
    false_full: float | None
    false_any: float | None
    leave_out_full: float | None
    leave_out_any: float | None
    objective_precision: float | None


@dataclass(frozen=True)
class Calibration:
    """The chosen gate, whether it meets both precisions asked for, and every setting tried.

    ``full_points`` are the full gates tried (at the lowest floor, without
    hints), ``points`` the floors and hint gaps tried with the chosen full gate.
    """

    chosen: GatePoint
    meets_target: bool
    min_precision: float
    min_full_precision: float
    full_points: list[GatePoint]
    points: list[GatePoint]

    def full_table(self) -> list[GatePoint]:
        """Every full relative-gap threshold at the chosen relative margin."""
        margin = self.chosen.gate.full_relative_margin
        return [p for p in self.full_points if p.gate.full_relative_margin == margin]

    def floor_table(self) -> list[GatePoint]:
        """Every hint relative-gap threshold at the chosen floor."""
        return [p for p in self.points if p.gate.floor == self.chosen.gate.floor]

    def gap_table(self) -> list[GatePoint]:
        """Every floor at the chosen hint relative-gap threshold."""
        return [p for p in self.points if p.gate.min_relative_gap == self.chosen.gate.min_relative_gap]


@dataclass(frozen=True)
class _Routed:
    """The routed messages as arrays: which kind each is, what the gate saw, and whether the top two are right."""

    positive: np.ndarray
    negative: np.ndarray
    left_out: np.ndarray
    judged: np.ndarray
    similarity: np.ndarray
    gap: np.ndarray
    margin: np.ndarray
    runner_up_margin: np.ndarray
    top_right: np.ndarray
    second_right: np.ndarray

    @classmethod
    def of(cls, routed: Sequence[RoutedQuery]) -> "_Routed":
        left_out = np.array([r.left_out for r in routed], dtype=bool)
        positive = np.array([r.labelled.positive for r in routed], dtype=bool) & ~left_out

        def feature(name: str) -> np.ndarray:
            return np.array([r.decision.features.get(name, 0.0) for r in routed])

        def right(rank: int) -> np.ndarray:
            return np.array([len(r.decision.candidates) > rank and r.decision.candidates[rank].name in r.labelled.right
                             for r in routed], dtype=bool)

        return cls(positive, ~positive & ~left_out, left_out,
                   np.array([bool(r.decision.features) for r in routed], dtype=bool), feature("similarity"),
                   feature("relative_gap"), feature("relative_margin"), feature("runner_up_margin"), right(0), right(1))

    def judge(self, gate: Gate) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(full, hint, pair) masks: ``Gate.verdict`` over every message at once."""
        above = self.judged & (self.similarity >= gate.floor)
        full = above & (self.gap >= gate.full_relative_gap) & (self.margin >= gate.full_relative_margin)
        hint = above & ~full & (self.gap >= gate.min_relative_gap)
        return full, hint, hint & (self.runner_up_margin < gate.full_relative_margin)

    def point(self, gate: Gate) -> GatePoint:
        full, hint, pair = self.judge(gate)
        named = (full & self.top_right) | (hint & (self.top_right | (pair & self.second_right)))
        any_ = full | hint
        labelled = self.positive | self.negative
        positives, negatives, copies = (int(m.sum()) for m in (self.positive, self.negative, self.left_out))
        full_right = int((full & self.positive & self.top_right).sum())
        named_right = int((named & self.positive).sum())
        return GatePoint(
            gate,
            full_right / max(positives, 1),
            rate(full_right, int((full & labelled).sum())),
            named_right / max(positives, 1),
            rate(int((full & self.negative).sum()), negatives),
            rate(int((any_ & self.negative).sum()), negatives),
            rate(int((full & self.left_out).sum()), copies),
            rate(int((any_ & self.left_out).sum()), copies),
            rate(named_right, int((any_ & (labelled | self.left_out)).sum())),
        )


def calibrate(routed: Sequence[RoutedQuery], min_precision: float = DEFAULT_MIN_PRECISION,
              min_full_precision: float = DEFAULT_MIN_FULL_PRECISION) -> Calibration:
    """Fit the gate (see the module's docstring). Decisions are re-judged from the features the router
    recorded, so no message is embedded twice. Where no setting is precise enough, the most precise one
    is chosen and ``meets_target`` is False."""
    arrays = _Routed.of(routed)
    full_points = [arrays.point(Gate(FLOOR, math.inf, gap, margin)) for gap in GAP_GRID for margin in MARGIN_GRID]
    full, full_met = _best(full_points, lambda p: p.full_precision, min_full_precision, lambda p: p.full_correct)
    gap, margin = full.gate.full_relative_gap, full.gate.full_relative_margin
    points = [arrays.point(Gate(floor, hint_gap, gap, margin)) for floor in FLOOR_GRID for hint_gap in GAP_GRID]
    chosen, met = _best(points, lambda p: p.objective_precision, min_precision, lambda p: p.named_correct)
    return Calibration(chosen, full_met and met, min_precision, min_full_precision, full_points, points)


def _best(points: list[GatePoint], precision, target: float, gain) -> tuple[GatePoint, bool]:
    """The point with the most ``gain`` whose ``precision`` is >= ``target``, and True; else the most precise
    point and False. Ties go to the more precise, then the stricter gate (it injects less where labels are
    missing)."""
    def strictness(p: GatePoint) -> tuple:
        return p.gate.floor, p.gate.min_relative_gap, p.gate.full_relative_gap, p.gate.full_relative_margin

    measured = [p for p in points if precision(p) is not None]
    precise = [p for p in measured if precision(p) >= target]
    if precise:
        return max(precise, key=lambda p: (gain(p), precision(p), strictness(p))), True
    return max(measured, key=lambda p: (precision(p), gain(p), strictness(p)), default=points[0]), False


def save_gate(index_dir: str | Path, calibration: Calibration, queries_file: str, messages: int) -> dict:
    """Store the chosen gate in the index manifest's ``router`` section; returns that section."""
    point = calibration.chosen
    router = {
        **point.gate.as_router_settings(),
        "calibration": {
            "queries": queries_file,
            "messages": messages,
            "min_precision": calibration.min_precision,
            "min_full_precision": calibration.min_full_precision,
            "full_precision": point.full_precision,
            "full_correct": point.full_correct,
            "named_correct": point.named_correct,
            "leave_out_full": point.leave_out_full,
            "leave_out_any": point.leave_out_any,
            "objective_precision": point.objective_precision,
            "calibrated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
    }
    write_router_section(Path(index_dir), router)
    return router
