"""Fit the decision gate to labelled messages: the precision / correct-injection trade-off.

Every labelled message is routed once (and, for leave-out copies, once more
without its right skills); the gate's features are recorded and re-judged
for every floor and relative-gap threshold on a grid, so nothing is embedded
twice. The objective counts each leave-out copy as one more message that must
get nothing: a gate that injects look-alike skills into uncovered messages
pays for it in precision. ``save_gate`` stores the chosen setting in the index.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from .evaluation import RoutedQuery, rate
from .gates import FLOOR, Gate
from .index.store import write_router_section

DEFAULT_MIN_PRECISION = 0.65
FLOOR_GRID = tuple(round(FLOOR + 0.02 * i, 2) for i in range(26))  # 0.30 .. 0.80
GAP_GRID = tuple(round(0.01 * i, 2) for i in range(101))  # 0.00 .. 1.00


@dataclass(frozen=True)
class GatePoint:
    """What one gate setting does on a labelled set.

    ``precision`` is over the labelled messages, as ``eval`` reports it;
    ``leave_out_false_injection`` is over the leave-out copies (None without
    any); ``objective_precision`` counts those false injections too, and is
    what calibration holds to ``min_precision``.
    """

    gate: Gate
    correct_injection: float
    wrong_injection: float
    false_injection: float | None
    precision: float | None
    injections: int
    leave_out_false_injection: float | None = None
    objective_precision: float | None = None


@dataclass(frozen=True)
class Calibration:
    """The chosen gate, whether it meets the precision asked for, and every setting tried."""

    chosen: GatePoint
    meets_target: bool
    min_precision: float
    points: list[GatePoint]

    def floor_table(self) -> list[GatePoint]:
        """Every relative-gap threshold at the chosen floor."""
        return [p for p in self.points if p.gate.floor == self.chosen.gate.floor]

    def gap_table(self) -> list[GatePoint]:
        """Every floor at the chosen relative-gap threshold."""
        return [p for p in self.points if p.gate.min_relative_gap == self.chosen.gate.min_relative_gap]


def calibrate(routed: Sequence[RoutedQuery], min_precision: float = DEFAULT_MIN_PRECISION,
              floors: Iterable[float] = FLOOR_GRID, gaps: Iterable[float] = GAP_GRID) -> Calibration:
    """Fit the gate: the setting with the most correct injections whose objective precision is >= ``min_precision``.

    The objective precision is right injections over all injections, those
    into leave-out copies included: each copy is one more message that must
    get nothing. Decisions are re-judged from the features the router
    recorded, so no message is embedded twice. When no setting is that
    precise, the most precise one is chosen and ``meets_target`` is False.
    """
    left_out = np.array([r.left_out for r in routed], dtype=bool)
    positive = np.array([r.labelled.positive for r in routed], dtype=bool) & ~left_out
    negative = ~positive & ~left_out
    top_right = np.array([bool(r.decision.candidates) and r.decision.candidates[0].name in r.labelled.right
                          for r in routed], dtype=bool)
    judged = np.array([bool(r.decision.features) for r in routed], dtype=bool)
    similarity = np.array([r.decision.features.get("similarity", 0.0) for r in routed])
    gap = np.array([r.decision.features.get("relative_gap", 0.0) for r in routed])
    points = []
    for floor in floors:
        for min_gap in gaps:
            gate = Gate(floor, min_gap)
            inject = judged & (similarity >= gate.floor) & (gap >= gate.min_relative_gap)
            points.append(_gate_point(gate, inject, positive, negative, left_out, top_right))
    precise = [p for p in points if p.objective_precision is not None and p.objective_precision >= min_precision]
    if precise:
        chosen = max(precise, key=lambda p: (p.correct_injection, p.objective_precision, -p.gate.floor))
    else:
        chosen = max((p for p in points if p.objective_precision is not None),
                     key=lambda p: (p.objective_precision, p.correct_injection), default=points[0])
    return Calibration(chosen, bool(precise), min_precision, points)


def _gate_point(gate: Gate, inject: np.ndarray, positive: np.ndarray, negative: np.ndarray,
                left_out: np.ndarray, top_right: np.ndarray) -> GatePoint:
    correct = int((inject & positive & top_right).sum())
    wrong = int((inject & positive & ~top_right).sum())
    false = int((inject & negative).sum())
    leave_out_false = int((inject & left_out).sum())
    labelled_injections = correct + wrong + false
    all_injections = labelled_injections + leave_out_false
    return GatePoint(
        gate,
        correct / max(int(positive.sum()), 1),
        wrong / max(int(positive.sum()), 1),
        rate(false, int(negative.sum())),
        rate(correct, labelled_injections),
        labelled_injections,
        rate(leave_out_false, int(left_out.sum())),
        rate(correct, all_injections),
    )


def save_gate(index_dir: str | Path, calibration: Calibration, queries_file: str, messages: int) -> dict:
    """Store the chosen gate in the index manifest's ``router`` section; returns that section."""
    point = calibration.chosen
    router = {
        "threshold": point.gate.floor,
        "min_relative_gap": point.gate.min_relative_gap,
        "calibration": {
            "queries": queries_file,
            "messages": messages,
            "min_precision": calibration.min_precision,
            "precision": point.precision,
            "leave_out_false_injection": point.leave_out_false_injection,
            "objective_precision": point.objective_precision,
            "correct_injection": point.correct_injection,
            "calibrated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
    }
    write_router_section(Path(index_dir), router)
    return router
