"""Metrics, calibration and the eval / calibrate commands; document views and lexical scores."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from semantic_skills.calibration import _Routed, calibrate, save_gate
from semantic_skills.cli import main
from semantic_skills.evaluation import (
    LabelledFileError,
    LabelledQuery,
    RoutedQuery,
    evaluation_report,
    full_block_chars,
    leave_out_quality,
    quality,
    read_labelled,
    route_all,
)
from semantic_skills.gates import FULL, HINT, Gate
from semantic_skills.index.manifest import SkillRecord, read_manifest
from semantic_skills.injection import skill_block
from semantic_skills.lexical import LexicalIndex, tokenize
from semantic_skills.limits import DEFAULT_MAX_SKILL_CHARS, MAX_HINT_CHARS
from semantic_skills.recipe import MAX_SENTENCE_VIEWS, body_terms, skill_views
from semantic_skills.router import Candidate, Decision, SkillRouter
from semantic_skills.skills.parsing import Skill


def decision(skill: str | None, *ranked: str, mode: str | None = FULL, named: tuple[str, ...] = ()) -> dict:
    """A decision as ``route --queries`` prints it; ``mode=None`` gives one from a router without modes."""
    line = {"skill": skill, "candidates": [{"name": n, "score": 0.5} for n in ranked]}
    if mode is not None:
        line.update(mode=mode if skill else None, named=list(named or ([skill] if skill else [])))
    return line


# --------------------------------------------------------------------------- metrics


def test_metrics_count_full_injections_and_every_skill_a_hint_names():
    labelled = [
        LabelledQuery("a", ("x",), ("x2",), "one"),  # an acceptable alternative injected whole
        LabelledQuery("b", ("y",), (), "one"),       # a hint naming the right skill second
        LabelledQuery("c", ("z",), (), "two"),       # a wrong skill injected whole
        LabelledQuery("f", ("u",), (), "two"),       # the right skill, from a router without modes
        LabelledQuery("d", (), (), "two"),           # negative, a hint
        LabelledQuery("e", (), (), "two"),           # negative, injected whole
        LabelledQuery("g", (), (), "two"),           # negative, nothing
    ]
    decisions = [
        decision("x2", "x2", "x"),
        decision("q", "q", "y", mode=HINT, named=("q", "y")),
        decision("w", "w", "v"),
        decision("u", "u", mode=None),
        decision("x", "x", mode=HINT),
        decision("x", "x"),
        decision(None, "x"),
    ]
    metrics = quality(labelled, decisions, block_chars=lambda name: 1000)
    assert metrics["top1"] == pytest.approx(2 / 4)
    assert metrics["recall_at_5"] == pytest.approx(3 / 4)
    assert metrics["mrr"] == pytest.approx((1 + 1 / 2 + 0 + 1) / 4)
    assert metrics["full_precision"] == pytest.approx(2 / 4)
    assert metrics["full_correct"] == pytest.approx(2 / 4)
    assert metrics["named_correct"] == pytest.approx(3 / 4)
    assert metrics["false_full"] == pytest.approx(1 / 3) and metrics["false_any"] == pytest.approx(2 / 3)
    assert metrics["injected_chars"] == pytest.approx((4 * 1000 + 2 * MAX_HINT_CHARS) / 7)
    assert (metrics["positives"], metrics["negatives"], metrics["full_injections"], metrics["hints"]) == (4, 3, 4, 2)
    assert "injected_chars" not in quality(labelled, decisions)


def test_rates_without_messages_are_none():
    metrics = quality([LabelledQuery("d", ())], [decision(None, "x")])
    assert metrics["top1"] is None and metrics["full_precision"] is None and metrics["false_any"] == 0


def test_leave_out_counts_every_injection_as_false_and_full_ones_apart():
    metrics = leave_out_quality([decision("x", "x"), decision("y", "y", mode=HINT), decision(None, "z"),
                                 decision("w", "w", mode=None)])
    assert metrics == {"messages": 4, "full_injections": 2, "injections": 3, "false_full": 0.5, "false_any": 0.75}
    assert leave_out_quality([])["false_any"] is None


def test_report_keeps_leave_out_copies_out_of_the_usual_metrics_and_latency():
    def routed_copy(source: str, injected: str | None, left_out: bool, ms: float) -> RoutedQuery:
        chosen = Candidate(injected, 0.6, "", "") if injected else None
        return RoutedQuery(LabelledQuery("m", ("a",), (), source),
                           Decision(chosen, 0.6, "", [Candidate(injected or "a", 0.6, "", "")],
                                    mode=FULL if chosen else None, named=[chosen] if chosen else []),
                           ms, ms, left_out)

    report = evaluation_report([
        routed_copy("one", "a", False, 10.0), routed_copy("one", "b", True, 0.0),
        routed_copy("two", "a", False, 10.0), routed_copy("two", None, True, 0.0),
    ])
    assert report["overall"]["messages"] == 2 and report["overall"]["full_correct"] == 1.0
    assert report["leave_out"]["overall"]["false_full"] == report["leave_out"]["overall"]["false_any"] == 0.5
    assert report["leave_out"]["by_source"]["one"]["false_any"] == 1.0
    assert report["leave_out"]["by_source"]["two"]["false_any"] == 0.0
    assert report["latency_ms"]["route_median"] == 10.0
    assert "leave_out" not in evaluation_report([routed_copy("one", "a", False, 10.0)])


def test_full_block_chars_are_the_size_of_the_block_a_host_builds_with_the_default_caps(tmp_path):
    long, short = tmp_path / "long.md", tmp_path / "short.md"
    long.write_text("---\nname: long\n---\n" + "word " * 10_000)
    short.write_text("---\nname: short\n---\nOne line.\n")
    records = [SkillRecord(n, n, str(p), n, "", "", (), (), (), False, i, 1)
               for i, (n, p) in enumerate([("long", long), ("short", short), ("gone", tmp_path / "gone.md")])]
    chars = full_block_chars(records)
    assert chars("short") == len(skill_block("short", "One line.").text)
    assert DEFAULT_MAX_SKILL_CHARS < chars("long") < DEFAULT_MAX_SKILL_CHARS + 500
    assert chars("gone") == chars("unknown") == 0


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


def routed(label: tuple[str, ...], top: str, similarity: float, gap: float, margin: float = 1.0,
           second: str = "z", left_out: bool = False) -> RoutedQuery:
    """A routed message whose top two candidates are ``top`` and ``second``, the runner-up ``margin`` behind."""
    features = {"similarity": similarity, "relative_gap": gap, "relative_margin": margin, "runner_up_margin": margin}
    candidates = [Candidate(top, similarity, "", ""), Candidate(second, similarity - 0.01, "", "")]
    return RoutedQuery(LabelledQuery("m", label), Decision(None, similarity, "", candidates, features=features), 1.0,
                       left_out=left_out)


def test_calibrate_injects_whole_only_what_is_precise_enough_and_hints_the_rest():
    messages = (
        [routed(("a",), "a", 0.6, 0.8)] * 6                      # right, clear of every other skill
        + [routed(("a",), "b", 0.6, 0.8, 0.1, second="a")] * 2   # wrong top, the right skill close behind
        + [routed(("a",), "a", 0.6, 0.8, 0.1, second="b")] * 4   # right top, another skill close behind
        + [routed((), "a", 0.35, 0.2)] * 2                       # negatives, low similarity and gap
    )
    fitted = calibrate(messages, min_precision=0.80, min_full_precision=0.9)
    chosen = fitted.chosen
    assert fitted.meets_target and chosen.full_precision == 1.0 and chosen.full_correct == pytest.approx(6 / 12)
    assert 0.1 < chosen.gate.full_relative_margin <= 1.0
    assert chosen.named_correct == 1.0  # the close calls become hints naming both skills
    assert 0.35 < chosen.gate.floor <= 0.6 and chosen.false_any == 0.0
    assert all(p.gate.floor == chosen.gate.floor for p in fitted.floor_table())
    assert all(p.gate.full_relative_margin == chosen.gate.full_relative_margin for p in fitted.full_table())


def test_calibrate_counts_injections_into_leave_out_copies_against_precision():
    messages = (
        [routed(("a",), "a", 0.6, 0.8)] * 8                              # right, clear
        + [routed(("a",), "b", 0.6, 0.4, 0.0, left_out=True)] * 4         # leave-out copies with a fair gap
        + [routed(("a",), "b", 0.6, 0.1, 0.0, left_out=True)] * 4         # leave-out copies with a small gap
    )
    fitted = calibrate(messages, min_precision=0.9)
    chosen = fitted.chosen
    assert fitted.meets_target and chosen.named_correct == chosen.full_correct == 1.0
    assert chosen.leave_out_any == chosen.leave_out_full == 0.0 and chosen.objective_precision == 1.0
    loose = next(p for p in fitted.points if (p.gate.floor, p.gate.min_relative_gap) == (0.3, 0.3))
    assert loose.full_precision == 1.0 and loose.leave_out_any == 0.5 and loose.leave_out_full == 0.0
    assert loose.objective_precision == pytest.approx(8 / 12)
    assert calibrate(messages[:8]).chosen.leave_out_any is None


def test_calibrate_reports_when_no_setting_is_precise_enough():
    messages = [routed(("a",), "b", 0.9, 0.9), routed(("a",), "a", 0.9, 0.9)]
    fitted = calibrate(messages, min_precision=0.99)
    assert not fitted.meets_target and fitted.chosen.full_precision == pytest.approx(0.5)


def test_small_talk_and_other_ungated_decisions_are_never_injected_by_calibration():
    small_talk = Decision(None, 0.9, "small talk", [Candidate("a", 0.9, "", "")])
    talk = RoutedQuery(LabelledQuery("thanks", ()), small_talk, 1.0)
    fitted = calibrate([talk, routed(("a",), "a", 0.9, 0.9)], min_precision=1.0)
    assert fitted.chosen.full_precision == 1.0 and fitted.chosen.false_any == 0.0


def test_calibration_judges_every_message_as_the_router_does(examples_index, bundled_embedder):
    router = SkillRouter.open(examples_index, embedder=bundled_embedder)
    queries = ["convert this scanned PDF into markdown", "my pytest run fails with a fixture error",
               "clean up this csv file", "What's a good recipe for banana bread?", "thanks!", "fix my tests"]
    messages = route_all(router, [LabelledQuery(q, ()) for q in queries])
    for gate in (Gate(), Gate(0.30, 0.0, 0.2, 0.0), Gate(0.30, 0.0, 9.0, 9.0), Gate(0.5, 0.2, 0.3, 0.1)):
        full, hint, pair = _Routed.of(messages).judge(gate)
        verdicts = [gate.verdict(m.decision.features) if m.decision.features else None for m in messages]
        assert list(full) == [v is not None and v.mode == FULL for v in verdicts]
        assert list(hint) == [v is not None and v.mode == HINT for v in verdicts]
        assert list(pair) == [v is not None and v.pair for v in verdicts]


def test_save_gate_writes_the_router_section_that_the_router_reads(examples_index, tmp_path, bundled_embedder):
    import shutil

    index_dir = tmp_path / "index"
    shutil.copytree(examples_index, index_dir)
    fitted = calibrate([routed(("a",), "a", 0.6, 0.8)], min_precision=0.8)
    saved = save_gate(index_dir, fitted, "labels.jsonl", 1)
    assert read_manifest(index_dir).router == saved
    router = SkillRouter.open(index_dir, embedder=bundled_embedder)
    assert router.gate == fitted.chosen.gate == Gate.from_router_settings(saved)
    assert saved["calibration"]["named_correct"] == 1.0


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
    assert report["overall"]["top1"] == 1.0 and report["overall"]["false_any"] == 0.0
    assert report["overall"]["injected_chars"] > 0 and report["full_relative_gap"] == Gate().full_relative_gap
    assert set(report["by_source"]) == {"docs", "code", "none"}
    assert report["latency_ms"]["route_median"] > 0 and report["latency_ms"]["embed_median"] > 0
    assert "leave_out" not in report
    text = CliRunner().invoke(main, ["eval", "--queries", str(labelled_examples), "--index-dir", str(examples_index)])
    assert text.exit_code == 0 and "full prec" in text.stdout and "route / embedding" in text.stdout
    assert "leave-out" not in text.stdout


def test_eval_leave_out_reports_false_injections_per_source(examples_index, labelled_examples):
    args = ["eval", "--queries", str(labelled_examples), "--index-dir", str(examples_index), "--leave-out"]
    report = json.loads(CliRunner().invoke(main, args + ["--json"]).stdout)
    assert report["overall"]["messages"] == 3
    assert report["leave_out"]["overall"]["messages"] == 2
    assert set(report["leave_out"]["by_source"]) == {"docs", "code"}
    text = CliRunner().invoke(main, args)
    assert text.exit_code == 0, text.output
    assert "lo any" in text.stdout and "2 messages routed without their right skills" in text.stdout


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
    assert answer["written"] and router["threshold"] == answer["threshold"] >= 0.30
    assert Gate.from_router_settings(router) == Gate.from_router_settings(answer)
    assert answer["leave_out_any"] is not None and "objective_precision" in router["calibration"]
    assert len(answer["table"]) > 1 and len(answer["full_table"]) > 1


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


def test_chinese_and_japanese_runs_are_cut_into_character_pairs_and_latin_words_stay_whole():
    assert tokenize("用Python做数据分析") == ["用", "python", "做数", "数据", "据分", "分析"]
    assert tokenize("猫の写真") == ["猫の", "の写", "写真"]
    assert tokenize("Ｇｉｆ　ａｐｉ を使って") == ["gif", "api", "を使", "使っ", "って"]


def test_a_chinese_message_finds_the_chinese_skill_that_shares_its_words():
    def record(name: str, description: str, terms: str) -> SkillRecord:
        return SkillRecord(name, name, name, "", "", description, (), (), (), False, 0, 1, terms)

    records = [record("nginx-config", "配置Nginx反向代理和负载均衡", " ".join(tokenize("排查502错误"))),
               record("mysql-slow-query", "MySQL性能", "慢查询日志分析"),  # terms stored whole, by an older build
               record("meeting-minutes", "整理会议纪要", "")]
    index = LexicalIndex.for_skills(records)
    assert index.scores("帮我看看慢查询的日志").argmax() == 1
    assert index.scores("网关返回502错误怎么排查").argmax() == 0
    assert index.scores("写一份会议纪要").argmax() == 2
