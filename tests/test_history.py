"""``semantic-skills history``: the summary of a decision record (near misses, advice, ``--since``) and the
command on a record of real routing answers."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from semantic_skills.cli import main
from semantic_skills.decision_log import (
    ALREADY_LIVE,
    INJECTED,
    NOTHING,
    UNANSWERED,
    DecisionEntry,
    previous_generation,
    read_record,
)
from semantic_skills.gates import FULL, HINT
from semantic_skills.hermes import record
from semantic_skills.hermes.config import decision_record_path
from semantic_skills.hermes.runtime import PluginRuntime
from semantic_skills.history import calibrate_advice, near_miss, parse_since, summarise

from support import WORKER_READY_SECONDS

PDF = "Can you turn this scanned contract PDF into markdown with the tables intact?"
DOCKER = "My postgres container keeps restarting and the web service can't connect to it"
CLOSE_CALL = "I accidentally pushed our AWS key to GitHub, what do I do?"  # a hint, its margin just under full's
NOW = 1_790_000_000.0


def set_settings(home: Path, **settings) -> None:
    config = {"plugins": {"entries": {"semantic-skills": {"settings": settings}}}}
    (home / "config.yaml").write_text(yaml.safe_dump(config))


def decided(similarity: float | None, gap: float | None, skill: str | None = None, floor: float = 0.38,
            min_gap: float = 0.27, margin: float | None = 0.5, **fields) -> DecisionEntry:
    outcome = fields.pop("outcome", INJECTED if skill else NOTHING)
    mode = fields.pop("mode", "full" if skill else None)
    return DecisionEntry(NOW, "agent", "cli", outcome, skill=skill, mode=mode, top="pdf", similarity=similarity,
                         gap=gap, margin=margin, floor=floor, min_gap=min_gap, full_gap=0.31, full_margin=0.20,
                         **fields)


def hint(gap: float, margin: float, **fields) -> DecisionEntry:
    return decided(0.5, gap, skill="pdf", mode=HINT, margin=margin, **fields)


# --------------------------------------------------------------------------- the summary


@pytest.mark.parametrize("entry, gate", [
    (decided(0.37, 0.50), HINT),                 # similarity just under the floor, gap clear
    (decided(0.50, 0.24), HINT),                 # gap just under its threshold
    (decided(0.36, 0.23), HINT),                 # both just under
    (decided(0.45, 0.30, floor=0.47), HINT),     # a raised floor counts as the floor it was held to
    (decided(0.20, 0.50), None),                 # far under the floor
    (decided(0.50, 0.10), None),                 # far under the gap
    (decided(0.50, 0.50, skill="pdf"), None),    # injected whole
    (decided(None, None), None),                 # small talk: the gate did not run
    (decided(0.37, 0.50, outcome=UNANSWERED), None),
    (hint(0.28, 0.50), FULL),                    # a hint whose gap was just under the full gate's
    (hint(0.50, 0.17), FULL),                    # ... or whose margin was
    (hint(0.27, 0.16), FULL),                    # ... or both
    (hint(0.28, 0.17, outcome=ALREADY_LIVE), FULL),  # the decision counts, live or not
    (hint(0.50, 0.10), None),                    # margin far under
    (hint(0.20, 0.50), None),                    # gap far under
    (hint(0.28, None), None),                    # from a worker that did not say its margin
])
def test_a_near_miss_is_a_decision_just_under_the_thresholds_of_the_next_gate_up(entry, gate):
    assert near_miss(entry) == gate


def test_calibrate_is_advised_for_fixable_near_misses_a_skill_that_takes_everything_or_another_embedder():
    fixable = [decided(0.50, 0.24)] * 5
    below_the_lowest_floor = [decided(0.29, 0.50, floor=0.31)] * 50  # no calibration can go under 0.30
    plain = [decided(0.10, 0.10)] * 45

    assert calibrate_advice(fixable + plain, [], {HINT: fixable}, True)[0].startswith(
        "5 of 50 decisions (10%) injected nothing but fell just short of a hint: if their skills were the right "
        "ones, the gate is stricter")
    assert calibrate_advice(fixable + plain * 3, [], {HINT: fixable}, True) == []  # under 5% of the decisions
    assert calibrate_advice(below_the_lowest_floor, [], {HINT: below_the_lowest_floor}, True) == []

    hints = [hint(0.28, 0.5)] * 5
    assert calibrate_advice(hints + plain, hints, {FULL: hints}, True) == [
        "5 of 50 decisions (10%) got a hint but fell just short of the whole skill: if their skills were the "
        "right ones, the full gate is stricter than your skills need"]

    winner, other = [decided(0.6, 0.6, skill="general-helper")] * 11, [decided(0.6, 0.6, skill="pdf")] * 9
    assert calibrate_advice(winner + other, winner + other, {}, True) == [
        "general-helper took 11 of 20 injections (55%): if many of those messages did not need it, the gate is "
        "looser than your skills need"]
    spread = winner + other + [decided(0.6, 0.6, skill="docker")] * 9
    assert calibrate_advice(spread, spread, {}, True) == []
    assert "the embedder is not the bundled default" in calibrate_advice([], [], {}, False)[0]


def test_the_summary_counts_modes_outcomes_and_orders_skills_and_slow_routes():
    entries = ([decided(0.6, 0.6, skill="pdf", latency_ms=5.0)] * 3
               + [decided(0.6, 0.6, skill="docker", mode="hint", margin=0.1, latency_ms=50.0)]
               + [decided(0.6, 0.6, skill="pdf", outcome=ALREADY_LIVE, latency_ms=7.0)]
               + [decided(0.1, 0.1, latency_ms=1.0), DecisionEntry(NOW, "gateway", "telegram", UNANSWERED,
                                                                   latency_ms=24.0, reason="timeout")])
    summary = summarise(entries)

    assert summary["modes"] == {"full": 4, "hint": 1, "nothing": 1}
    assert summary["outcomes"] == {INJECTED: 4, ALREADY_LIVE: 1, NOTHING: 1, UNANSWERED: 1}
    assert [row["skill"] for row in summary["most_injected"]] == ["pdf", "docker"]
    assert summary["most_injected"][1] == {"skill": "docker", "injected": 1, "full": 0, "hint": 1}
    assert [row["latency_ms"] for row in summary["slowest"]] == [50.0, 24.0, 7.0, 5.0, 5.0]
    assert summary["latency_ms"]["gateway"] == {"median": 24.0, "p95": 24.0, "max": 24.0, "routes": 1}


def test_since_reads_durations_and_dates_in_utc():
    assert parse_since("7d", NOW) == NOW - 7 * 86400 and parse_since(" 30m ", NOW) == NOW - 1800
    assert parse_since("2w", NOW) == NOW - 14 * 86400 and parse_since("12h", NOW) == NOW - 43200
    assert parse_since("2026-11-20", NOW) == 1_795_132_800.0
    assert parse_since("2026-11-20T08:00+01:00", NOW) == 1_795_132_800.0 + 7 * 3600
    for bad in ("yesterday", "7", "-3d", "99999999d", ""):
        with pytest.raises(ValueError):
            parse_since(bad, NOW)


# --------------------------------------------------------------------------- `semantic-skills history`


def history(*args: str):
    return CliRunner().invoke(main, ["history", *args])


def test_history_of_a_home_with_no_record_says_so(_isolated_hermes_home):
    shown, as_json = history(), history("--json")

    assert shown.exit_code == as_json.exit_code == 0
    assert shown.stdout == (f"No decisions recorded yet: {decision_record_path(_isolated_hermes_home)} does not exist. "
                            "Hermes records each message it routes there once the plugin is running.\n")
    summary = json.loads(as_json.stdout)
    assert summary["decisions"] == 0 and summary["files"] == [] and summary["recording"] is True


def test_history_says_when_the_record_is_off(_isolated_hermes_home):
    set_settings(_isolated_hermes_home, record_decisions=False)
    assert history().stdout.startswith("The decision record is off (record_decisions: false under "
                                       "plugins.entries.semantic-skills.settings in "
                                       f"{_isolated_hermes_home / 'config.yaml'}).\n")


@pytest.fixture(scope="module")
def real_record(tmp_path_factory, onnx_examples_index):
    """A Hermes home whose record holds real routing answers from a real worker over the example skills (indexed
    with the onnx embedder, which the worker uses as the settings name none)."""
    home = tmp_path_factory.mktemp("recorded-home")
    set_settings(home, index_dir=str(onnx_examples_index))
    rt = PluginRuntime(home)
    rt.client.start()
    assert rt.client.wait_ready(WORKER_READY_SECONDS), rt.client.status.detail
    pdf = rt.client.route(PDF, (), 60)
    assert pdf.data["skill"] == "pdf-to-markdown"
    just_short = pdf.data["similarity"] + 0.01  # a floor this close above its similarity: a near miss
    messages = [(PDF, None, False)] * 3 + [(PDF, None, True), (DOCKER, None, False), ("thanks!", None, False),
                                           ("What's a good recipe for banana bread?", None, False)]
    messages += [(PDF, just_short, False)] * 6 + [(CLOSE_CALL, None, False)] * 2
    for text, floor, live in messages:
        started = time.monotonic()
        reply = rt.client.route(text, (), 60, floor=floor)
        outcome = NOTHING if reply.data["skill"] is None else ALREADY_LIVE if live else INJECTED
        record.decision(rt, path=record.GATEWAY if live else record.AGENT, platform="telegram", reply=reply,
                        outcome=outcome, started=started, text=text)
    rt.close()
    return home


@pytest.fixture()
def recorded_home(real_record, monkeypatch):
    monkeypatch.setenv("HERMES_HOME", str(real_record))
    return real_record


def test_history_summarises_a_record_of_real_routing_answers(recorded_home):
    shown, as_json = history(), history("--json")

    assert shown.exit_code == as_json.exit_code == 0, shown.output
    summary = json.loads(as_json.stdout)
    assert summary["decisions"] == 15 and summary["paths"] == {"agent": 14, "gateway": 1}
    assert summary["outcomes"] == {INJECTED: 6, ALREADY_LIVE: 1, NOTHING: 8, UNANSWERED: 0}
    assert summary["modes"] == {"full": 5, "hint": 2, "nothing": 8}
    assert summary["most_injected"][:3] == [
        {"skill": "pdf-to-markdown", "injected": 3, "full": 3, "hint": 0},
        {"skill": "secret-scan", "injected": 2, "full": 0, "hint": 2},
        {"skill": "docker-compose-debug", "injected": 1, "full": 1, "hint": 0}]
    short_of_hint, short_of_full = summary["near_misses"]["hint"], summary["near_misses"]["full"]
    assert short_of_hint["count"] == short_of_hint["fixable"] == 6
    assert short_of_hint["skills"][0]["skill"] == "pdf-to-markdown"
    assert short_of_full["count"] == 2 and short_of_full["skills"][0]["skill"] == "secret-scan"
    assert short_of_full["skills"][0]["margin"] < short_of_full["skills"][0]["full_margin"] == 0.20
    assert len(summary["slowest"]) == 5 and summary["latency_ms"]["agent"]["routes"] == 14
    assert len(summary["calibrate"]) == 1 and "6 of 15 decisions" in summary["calibrate"][0]

    text = shown.stdout
    assert "15 routed messages from " in text and "(agent 14, gateway 1)" in text
    assert "  full          5  33.3%  the whole skill\n" in text and "  nothing       8  53.3%  nothing\n" in text
    assert "       3  pdf-to-markdown (full 3, hint 0)" in text
    assert "Near misses: 6 message(s) got nothing but fell just short of a hint:" in text
    assert "Near misses: 2 hint(s) fell just short of the whole skill:\n       2  secret-scan: closest at " in text
    assert "Calibrating the gate on your own messages would help:" in text
    assert "`semantic-skills calibrate --queries FILE.jsonl`" in text
    assert "my secret" not in text and PDF not in text  # the summary never shows message text


def test_history_since_leaves_out_older_decisions(recorded_home):
    entries = read_record(decision_record_path(recorded_home), 4_000_000).entries
    older = [DecisionEntry(**{**e.__dict__, "time": e.time - 10 * 86400}) for e in entries]
    path = previous_generation(decision_record_path(recorded_home))
    path.write_bytes(b"".join(e.to_line() for e in older))
    try:
        everything = json.loads(history("--json").stdout)
        recent = json.loads(history("--since", "3d", "--json").stdout)
        dated = json.loads(history("--since", time.strftime("%Y-%m-%d", time.gmtime(entries[0].time - 86400)),
                                   "--json").stdout)
    finally:
        path.unlink()
    assert (everything["decisions"], recent["decisions"], dated["decisions"]) == (30, 15, 15)


def test_history_rejects_a_since_it_cannot_read_in_one_line(recorded_home):
    shown = history("--since", "yesterday")

    assert shown.exit_code == 2 and shown.stdout == ""
    assert shown.stderr.splitlines()[-1] == ("Error: Invalid value for --since: 'yesterday' is neither a duration "
                                             "such as 7d, 12h or 30m nor a date such as 2026-11-20 or "
                                             "2026-11-20T08:00")


def test_history_skips_damaged_lines_and_says_how_many(recorded_home):
    path = decision_record_path(recorded_home)
    kept = path.read_bytes()
    path.write_bytes(b"[" * 200_000 + b"\n" + kept + bytes(range(11, 256)) + b"\n")
    try:
        shown = history()
    finally:
        path.write_bytes(kept)

    assert shown.exit_code == 0
    assert f"skipped 2 damaged line(s) in {path}\n" in shown.stdout and "15 routed messages" in shown.stdout
