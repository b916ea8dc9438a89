"""Metrics, calibration and the eval / calibrate commands; document views and lexical scores."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from semantic_skills.calibration import calibrate, save_gate
from semantic_skills.cli import main
from semantic_skills.evaluation import (
    LabelledFileError,
    LabelledQuery,
    RoutedQuery,
    evaluation_report,
    leave_out_quality,
    quality,
    read_labelled,
    route_all,
)
from semantic_skills.gates import Gate
from semantic_skills.index.manifest import read_manifest
from semantic_skills.lexical import LexicalIndex, tokenize
from semantic_skills.recipe import MAX_SENTENCE_VIEWS, body_terms, skill_views
from semantic_skills.router import Candidate, Decision, SkillRouter
from semantic_skills.skills.parsing import Skill


def decision(skill: str | None, *ranked: str) -> dict:
    return {"skill": skill, "candidates": [{"name": n, "score": 0.5} for n in ranked]}


# --------------------------------------------------------------------------- metrics


def test_metrics_follow_skill_and_first_candidate_with_acceptable_alternatives():
    labelled = [
        LabelledQuery("a", ("x",), ("x2",), "one"),  # injected an acceptable alternative
        LabelledQuery("b", ("y",), (), "one"),       # right at rank 2, nothing injected
        LabelledQuery("c", ("z",), (), "two"),       # wrong injection, right skill absent
        LabelledQuery("d", (), (), "two"),           # negative, falsely injected
        LabelledQuery("e", (), (), "two"),           # negative, nothing injected
    ]
    decisions = [
        decision("x2", "x2", "x"),
        decision(None, "q", "y"),
        decision("w", "w", "v"),
        decision("x", "x"),
        decision(None, "x"),
    ]
    metrics = quality(labelled, decisions)
    assert metrics["top1"] == pytest.approx(1 / 3)
    assert metrics["recall_at_5"] == pytest.approx(2 / 3)
    assert metrics["mrr"] == pytest.approx((1 + 1 / 2 + 0) / 3)
    assert metrics["correct_injection"] == pytest.approx(1 / 3)
    assert metrics["wrong_injection"] == pytest.approx(1 / 3)
    assert metrics["false_injection"] == pytest.approx(1 / 2)
    assert metrics["precision"] == pytest.approx(1 / 3)
    assert (metrics["positives"], metrics["negatives"], metrics["injections"]) == (3, 2, 3)


def test_rates_without_messages_are_none():
    metrics = quality([LabelledQuery("d", ())], [decision(None, "x")])
    assert metrics["top1"] is None and metrics["precision"] is None and metrics["false_injection"] == 0


def test_leave_out_counts_every_injection_as_false():
    metrics = leave_out_quality([decision("x", "x"), decision(None, "y"), decision(None, "z"), decision("w", "w")])
    assert metrics == {"messages": 4, "injections": 2, "false_injection": 0.5}
    assert leave_out_quality([])["false_injection"] is None


def test_report_keeps_leave_out_copies_out_of_the_usual_metrics_and_latency():
    def routed_copy(source: str, injected: str | None, left_out: bool, ms: float) -> RoutedQuery:
        chosen = Candidate(injected, 0.6, "", "") if injected else None
        return RoutedQuery(LabelledQuery("m", ("a",), (), source),
                           Decision(chosen, 0.6, "", [Candidate(injected or "a", 0.6, "", "")]), ms, ms, left_out)

    report = evaluation_report([
        routed_copy("one", "a", False, 10.0), routed_copy("one", "b", True, 0.0),
        routed_copy("two", "a", False, 10.0), routed_copy("two", None, True, 0.0),
    ])
    assert report["overall"]["messages"] == 2 and report["overall"]["correct_injection"] == 1.0
    assert report["leave_out"]["overall"] == {"messages": 2, "injections": 1, "false_injection": 0.5}
    assert report["leave_out"]["by_source"]["one"]["false_injection"] == 1.0
    assert report["leave_out"]["by_source"]["two"]["false_injection"] == 0.0
    assert report["latency_ms"]["route_median"] == 10.0
    assert "leave_out" not in evaluation_report([routed_copy("one", "a", False, 10.0)])


def test_route_all_routes_each_message_with_a_skill_again_without_its_right_skills(examples_index, bundled_embedder):
    router = SkillRouter.open(examples_index, embedder=bundled_embedder)
    labelled = [
        LabelledQuery("convert this scanned PDF into markdown", ("pdf-to-markdown",), ("csv-cleanup",)),
        LabelledQuery("What's a good recipe for banana bread?", ()),
    ]
    routed = route_all(router, labelled, leave_out=True)
    assert [r.left_out for r in routed] == [False, True, False]
    assert routed[0].decision.candidates[0].name == "pdf-to-markdown"
    copy = routed[1]
    assert copy.labelled is labelled[0] and copy.route_ms == 0.0
    assert not {c.name for c in copy.decision.candidates} & {"pdf-to-markdown", "csv-cleanup"}
    assert [r.left_out for r in route_all(router, labelled)] == [False, False]


def test_read_labelled_names_the_bad_line(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text('{"query": "ok", "gold": ["a"], "acceptable": ["b"], "source": "s"}\n\n{"gold": []}\n')
    with pytest.raises(LabelledFileError, match="line 3"):
        read_labelled(path)
    path.write_text('{"query": "ok", "gold": ["a"], "acceptable": ["b"], "source": "s"}\n')
    assert read_labelled(path) == [LabelledQuery("ok", ("a",), ("b",), "s")]


# --------------------------------------------------------------------------- calibration


def routed(label: tuple[str, ...], top: str, similarity: float, gap: float, left_out: bool = False) -> RoutedQuery:
    candidate = Candidate(top, similarity, "", "")
    return RoutedQuery(LabelledQuery("m", label), Decision(None, similarity, "", [candidate], 0.3,
                                                           {"similarity": similarity, "relative_gap": gap}), 1.0,
                       left_out=left_out)


def test_calibrate_picks_the_most_injections_at_the_precision_asked_for():
    messages = (
        [routed(("a",), "a", 0.6, 0.8)] * 6      # right, clear
        + [routed(("a",), "b", 0.6, 0.3)] * 2    # wrong top skill, small gap
        + [routed((), "a", 0.35, 0.9)] * 2       # negatives, low similarity
        + [routed(("a",), "a", 0.5, 0.3)] * 2    # right, small gap
    )
    fitted = calibrate(messages, min_precision=0.80)
    assert fitted.meets_target
    assert fitted.chosen.precision >= 0.80
    assert fitted.chosen.correct_injection == pytest.approx(8 / 10)
    assert 0.35 < fitted.chosen.gate.floor <= 0.5 and fitted.chosen.gate.min_relative_gap <= 0.3
    assert all(p.gate.floor == fitted.chosen.gate.floor for p in fitted.floor_table())


def test_calibrate_counts_leave_out_injections_against_precision():
    messages = (
        [routed(("a",), "a", 0.6, 0.8)] * 8                  # right, clear
        + [routed(("a",), "b", 0.6, 0.4, left_out=True)] * 4  # leave-out copies with a fair gap
        + [routed(("a",), "b", 0.6, 0.1, left_out=True)] * 4  # leave-out copies with a small gap
    )
    fitted = calibrate(messages, min_precision=0.9)
    chosen = fitted.chosen
    assert fitted.meets_target and chosen.correct_injection == 1.0
    assert 0.4 < chosen.gate.min_relative_gap <= 0.8
    assert chosen.leave_out_false_injection == 0.0 and chosen.precision == chosen.objective_precision == 1.0
    loose = next(p for p in fitted.floor_table() if p.gate.min_relative_gap == 0.3)
    assert loose.precision == 1.0 and loose.leave_out_false_injection == 0.5
    assert loose.objective_precision == pytest.approx(8 / 12) and loose.wrong_injection == 0.0
    assert calibrate(messages[:8]).chosen.leave_out_false_injection is None


def test_calibrate_reports_when_no_setting_is_precise_enough():
    messages = [routed(("a",), "b", 0.9, 0.9), routed(("a",), "a", 0.9, 0.9)]
    fitted = calibrate(messages, min_precision=0.99)
    assert not fitted.meets_target and fitted.chosen.precision == pytest.approx(0.5)


def test_small_talk_and_other_ungated_decisions_are_never_injected_by_calibration():
    small_talk = Decision(None, 0.9, "small talk", [Candidate("a", 0.9, "", "")])
    talk = RoutedQuery(LabelledQuery("thanks", ()), small_talk, 1.0)
    fitted = calibrate([talk, routed(("a",), "a", 0.9, 0.9)], min_precision=1.0)
    assert fitted.chosen.precision == 1.0 and fitted.chosen.false_injection == 0.0


def test_save_gate_writes_the_router_section_that_the_router_reads(examples_index, tmp_path, bundled_embedder):
    import shutil

    index_dir = tmp_path / "index"
    shutil.copytree(examples_index, index_dir)
    fitted = calibrate([routed(("a",), "a", 0.6, 0.8)], min_precision=0.8)
    saved = save_gate(index_dir, fitted, "labels.jsonl", 1)
    assert read_manifest(index_dir).router == saved
    router = SkillRouter.open(index_dir, embedder=bundled_embedder)
    assert router.gate == Gate(saved["threshold"], saved["min_relative_gap"])


# --------------------------------------------------------------------------- the commands


@pytest.fixture()
def labelled_examples(tmp_path) -> Path:
    rows = [
        {"query": "convert this scanned PDF into markdown", "gold": ["pdf-to-markdown"], "source": "docs"},
        {"query": "my pytest run fails with a fixture error", "gold": ["pytest-failures"], "source": "code"},
        {"query": "What's a good recipe for banana bread?", "gold": [], "source": "none"},
    ]
    path = tmp_path / "labelled.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_eval_prints_metrics_per_source_and_latency(examples_index, labelled_examples):
    result = CliRunner().invoke(main, ["eval", "--queries", str(labelled_examples), "--index-dir", str(examples_index),
                                       "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["overall"]["top1"] == 1.0 and report["overall"]["false_injection"] == 0.0
    assert set(report["by_source"]) == {"docs", "code", "none"}
    assert report["latency_ms"]["route_median"] > 0 and report["latency_ms"]["embed_median"] > 0
    assert "leave_out" not in report
    text = CliRunner().invoke(main, ["eval", "--queries", str(labelled_examples), "--index-dir", str(examples_index)])
    assert text.exit_code == 0 and "precision" in text.stdout and "route / embedding" in text.stdout
    assert "leave-out" not in text.stdout


def test_eval_leave_out_reports_false_injections_per_source(examples_index, labelled_examples):
    args = ["eval", "--queries", str(labelled_examples), "--index-dir", str(examples_index), "--leave-out"]
    report = json.loads(CliRunner().invoke(main, args + ["--json"]).stdout)
    assert report["overall"]["messages"] == 3
    assert report["leave_out"]["overall"]["messages"] == 2
    assert set(report["leave_out"]["by_source"]) == {"docs", "code"}
    text = CliRunner().invoke(main, args)
    assert text.exit_code == 0, text.output
    assert "leave-out" in text.stdout and "2 messages routed without their right skills" in text.stdout


def test_calibrate_writes_only_with_write(examples_index, labelled_examples, tmp_path):
    import shutil

    index_dir = tmp_path / "index"
    shutil.copytree(examples_index, index_dir)
    args = ["calibrate", "--queries", str(labelled_examples), "--index-dir", str(index_dir)]
    dry = CliRunner().invoke(main, args)
    assert dry.exit_code == 0 and "not saved" in dry.stdout and read_manifest(index_dir).router == {}
    written = CliRunner().invoke(main, args + ["--write", "--json"])
    assert written.exit_code == 0, written.output
    answer = json.loads(written.stdout)
    router = read_manifest(index_dir).router
    assert answer["written"] and router["threshold"] == answer["floor"] >= 0.30
    assert router["min_relative_gap"] == answer["min_relative_gap"]
    assert answer["leave_out_false_injection"] is not None and "objective_precision" in router["calibration"]


# --------------------------------------------------------------------------- views and lexical scores


def skill(description: str, body: str, name: str = "demo-skill") -> Skill:
    return Skill(name=name, description=description, category="", path="/x/SKILL.md", folder=name,
                 content_hash="", body=body)


def test_views_are_the_main_text_then_distinct_prose_sentences():
    body = "# Title heading here\n\n```\ncode line that is long enough\n```\n| a | b |\n|---|---|\n" \
           "- Resize images in bulk. Keep the aspect ratio.\nResize images in bulk.\n"
    views = skill_views(skill("Resize and crop images. Use when asked for thumbnails.", body))
    assert views[0].startswith("demo skill\nResize and crop images.")
    assert views[1:] == ["Resize and crop images.", "Use when asked for thumbnails.", "Resize images in bulk.",
                         "Keep the aspect ratio."]


def test_views_are_capped():
    body = " ".join(f"Sentence number {i} is here." for i in range(20))
    assert len(skill_views(skill("A description sentence.", body))) == 1 + MAX_SENTENCE_VIEWS


def test_body_terms_are_the_distinct_words_of_prose_and_headings_without_code():
    body = ("# Setup Steps\n\nInstall the Widget tool. Install it twice.\n"
            "```\npip install secretpkg\n```\n| col | Alpha |\n")
    assert body_terms(skill("d", body)) == "setup steps install widget tool twice col alpha"
    assert body_terms(skill("d", body), limit=2) == "setup steps"


def test_tokenize_splits_identifiers_and_drops_stopwords():
    assert tokenize("Use the GifApi for my_tool and JQL") == ["use", "gif", "api", "my", "tool", "jql"]


def test_lexical_scores_give_the_best_match_one_and_no_overlap_zero():
    index = LexicalIndex([tokenize(t) for t in ("giphy gif search", "weather forecast", "gif maker tool")])
    scores = index.scores("find a gif on giphy")
    assert scores.max() == pytest.approx(1.0) and scores.argmax() == 0 and scores[1] == 0
    assert not index.scores("completely unrelated words").any()
    assert not LexicalIndex([]).scores("anything").any()
    among_the_rest = index.scores("find a gif on giphy", eligible=np.array([False, True, True]))
    assert among_the_rest[2] == pytest.approx(1.0) and among_the_rest[0] > 1.0
