"""Routing quality on fixed slices of the dev sets, so that regressions show.

Each slice is every k-th labelled message of ``../shared/data/dev/<set>``,
routed against an index of all that set's skills, with the defaults and the
bundled model; every message with a skill is also routed without its right
skills (the leave-out evaluation). ``EXPECTED`` is what this router measured
on the slice; ``BASELINE`` is the foundation router on the same slice (one
vector per skill, inject the top skill whole when its cosine is >= 0.30), kept
for comparison: the gate injects a skill whole only when it is sure, and a
hint when it is plausible (see docs/quality.md).
"""

from __future__ import annotations

import pytest

from semantic_skills.builder import build_index
from semantic_skills.evaluation import leave_out_quality, quality, read_labelled
from semantic_skills.router import SkillRouter
from semantic_skills.skills.discovery import SkillsRoot

from support import shared_path

EVERY = {"metatool": 20, "sgd": 10}
TOLERANCE = 0.03
HIGHER_IS_BETTER = ("top1", "recall_at_5", "mrr", "full_precision", "full_correct", "named_correct")
LOWER_IS_BETTER = ("false_full", "false_any", "leave_out_false_full", "leave_out_false_any")

# The foundation router injects every decision whole: its precision is a full precision.
BASELINE = {
    "metatool": {"top1": 0.585, "recall_at_5": 0.755, "mrr": 0.659, "full_precision": 0.611, "full_correct": 0.544,
                 "false_full": 0.414},
    "sgd": {"top1": 0.725, "recall_at_5": 0.950, "mrr": 0.809, "full_precision": 0.728, "full_correct": 0.692,
            "false_full": 0.033},
}
EXPECTED = {
    "metatool": {"top1": 0.660, "recall_at_5": 0.789, "mrr": 0.717, "full_precision": 0.915, "full_correct": 0.367,
                 "named_correct": 0.463, "false_full": 0.069, "false_any": 0.069, "leave_out_false_full": 0.041,
                 "leave_out_false_any": 0.143},
    "sgd": {"top1": 0.817, "recall_at_5": 0.983, "mrr": 0.887, "full_precision": 0.978, "full_correct": 0.375,
            "named_correct": 0.700, "false_full": 0.000, "false_any": 0.000, "leave_out_false_full": 0.258,
            "leave_out_false_any": 0.558},
}


@pytest.fixture(scope="module", params=sorted(EVERY))
def slice_metrics(request, tmp_path_factory, bundled_embedder) -> tuple[str, dict]:
    """(set name, metrics of its slice), the index built once per set."""
    name = request.param
    dev = shared_path("data", "dev", name)
    index_dir = tmp_path_factory.mktemp(f"{name}_index")
    build_index([SkillsRoot(dev / "skills")], index_dir, bundled_embedder)
    router = SkillRouter.open(index_dir, embedder=bundled_embedder)
    labelled = read_labelled(dev / "queries.jsonl")[:: EVERY[name]]
    metrics = quality(labelled, [router.route(q.query).as_dict() for q in labelled])
    left_out = leave_out_quality([router.route(q.query, exclude=q.right).as_dict() for q in labelled if q.positive])
    metrics.update(leave_out_false_full=left_out["false_full"], leave_out_false_any=left_out["false_any"])
    return name, metrics


@pytest.mark.parametrize("metric", HIGHER_IS_BETTER)
def test_no_drop_below_what_this_router_measured(slice_metrics, metric):
    name, measured = slice_metrics
    assert measured[metric] >= EXPECTED[name][metric] - TOLERANCE, (
        f"{name} {metric} fell to {measured[metric]:.3f} "
        f"(measured {EXPECTED[name][metric]:.3f}{_baseline(name, metric)})"
    )


@pytest.mark.parametrize("metric", LOWER_IS_BETTER)
def test_no_rise_above_what_this_router_measured(slice_metrics, metric):
    name, measured = slice_metrics
    assert measured[metric] <= EXPECTED[name][metric] + TOLERANCE, (
        f"{name} {metric} rose to {measured[metric]:.3f} "
        f"(measured {EXPECTED[name][metric]:.3f}{_baseline(name, metric)})"
    )


def _baseline(name: str, metric: str) -> str:
    return f", baseline {BASELINE[name][metric]:.3f}" if metric in BASELINE[name] else ""


@pytest.mark.parametrize("metric", ("top1", "recall_at_5", "mrr", "full_precision", "false_full"))
def test_ranking_and_precision_are_no_worse_than_the_baseline(slice_metrics, metric):
    name, measured = slice_metrics
    sign = -1 if metric in LOWER_IS_BETTER else 1
    assert sign * measured[metric] >= sign * BASELINE[name][metric] - TOLERANCE
