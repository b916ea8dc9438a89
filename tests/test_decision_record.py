"""The decision record of a Hermes home: what a runtime records, with which settings, and that no record
can stop or hold up start."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import pytest
import yaml

from semantic_skills.decision_log import (
    ALREADY_LIVE,
    INJECTED,
    MAX_TEXT_CHARS,
    NOTHING,
    UNANSWERED,
    DecisionEntry,
    previous_generation,
    read_record,
)
from semantic_skills.errors import ConfigError
from semantic_skills.hermes import record
from semantic_skills.hermes.config import PluginSettings, decision_record_path
from semantic_skills.hermes.runtime import PluginRuntime
from semantic_skills.worker.protocol import OK, TIMEOUT, Reply

GATE = {"threshold": 0.38, "min_relative_gap": 0.27, "full_relative_gap": 0.31, "full_relative_margin": 0.20}


def set_settings(home: Path, **settings) -> None:
    config = {"plugins": {"entries": {"semantic-skills": {"settings": settings}}}}
    (home / "config.yaml").write_text(yaml.safe_dump(config))


def answer(skill: str | None, **extra) -> Reply:
    data = {"ok": True, "skill": skill, "score": 0.6, "reason": "because", "top": skill or "pdf-to-markdown",
            "similarity": 0.58, "relative_gap": 0.41, "relative_margin": 0.22, **GATE}
    if skill:
        data.update(body="the body", omitted=0, named=[{"name": skill, "description": "d"}])
    data.update(extra)
    return Reply(OK, data)


def recorded(home: Path) -> list[DecisionEntry]:
    return read_record(decision_record_path(home), 4_000_000).entries


@pytest.fixture()
def runtime(_isolated_hermes_home):
    rt = PluginRuntime(_isolated_hermes_home)  # never started: these tests need no routing worker
    yield rt
    rt.close()


# --------------------------------------------------------------------------- what a runtime records


def test_each_kind_of_decision_is_recorded_without_the_message_text(runtime, _isolated_hermes_home):
    hint = answer("commit-messages", mode="hint", named=[{"name": "commit-messages", "description": "d"},
                                                           {"name": "release-notes", "description": "d"}])
    cases = [
        (record.GATEWAY, answer("pdf-to-markdown"), INJECTED),
        (record.AGENT, answer("pdf-to-markdown"), ALREADY_LIVE),
        (record.GATEWAY, hint, INJECTED),
        (record.AGENT, answer(None, similarity=0.29, reason="similarity 0.290 below the floor 0.30"), NOTHING),
        (record.GATEWAY, Reply(TIMEOUT, error="no answer within 24 ms"), UNANSWERED),
        (record.AGENT, answer("pdf-to-markdown", mode="mystery"), UNANSWERED),  # an answer the hook cannot use
    ]
    for path, reply, outcome in cases:
        # 12.34 ms: the clock's float arithmetic moves it by far less than its distance to a rounding boundary
        # (12.25 ms, half-way between the tenths, came out as 12.2 or 12.3 depending on the clock's value)
        record.decision(runtime, path=path, platform="telegram", reply=reply, outcome=outcome,
                        started=reply.at - 0.01234, text="my secret message")
    runtime.decisions.close()

    entries = recorded(_isolated_hermes_home)
    assert [(e.path, e.outcome, e.skill, e.mode) for e in entries] == [
        ("gateway", INJECTED, "pdf-to-markdown", "full"), ("agent", ALREADY_LIVE, "pdf-to-markdown", "full"),
        ("gateway", INJECTED, "commit-messages", "hint"), ("agent", NOTHING, None, None),
        ("gateway", UNANSWERED, None, None), ("agent", UNANSWERED, None, None)]
    assert entries[2].named == ("commit-messages", "release-notes")
    assert (entries[3].top, entries[3].similarity, entries[3].gap, entries[3].margin) == (
        "pdf-to-markdown", 0.29, 0.41, 0.22)
    assert (entries[3].floor, entries[3].min_gap, entries[3].full_gap, entries[3].full_margin) == (
        0.38, 0.27, 0.31, 0.20)
    assert entries[4].reason == "timeout: no answer within 24 ms" and entries[4].similarity is None
    assert entries[5].top == "pdf-to-markdown"
    assert entries[5].reason == "an answer this plugin cannot use ('mystery' for 'pdf-to-markdown')"
    assert all(e.latency_ms == 12.3 and e.platform == "telegram" and e.text is None for e in entries)
    assert b"secret" not in decision_record_path(_isolated_hermes_home).read_bytes()


def decide(rt: PluginRuntime, reply: Reply | None, outcome: str = INJECTED, **extra) -> None:
    rt.refresh()  # as each hook call does first
    record.decision(rt, path=record.AGENT, platform="cli", reply=reply, outcome=outcome, started=time.monotonic(),
                    **extra)


def test_an_answer_without_mode_from_an_older_worker_is_recorded_as_full(runtime, _isolated_hermes_home):
    old = Reply(OK, {"ok": True, "skill": "pdf-to-markdown", "score": 0.6, "reason": "r", "body": "b"})
    decide(runtime, old)
    runtime.decisions.close()

    [entry] = recorded(_isolated_hermes_home)
    assert (entry.mode, entry.outcome, entry.similarity, entry.top) == ("full", INJECTED, None, None)


def test_no_reply_is_recorded_with_the_reason_given(runtime, _isolated_hermes_home):
    decide(runtime, None, UNANSWERED, reason="not decided: another message took its block")
    runtime.decisions.close()

    [entry] = recorded(_isolated_hermes_home)
    assert (entry.outcome, entry.skill, entry.reason) == (UNANSWERED, None, "not decided: another message took "
                                                                             "its block")
    assert 0 <= entry.latency_ms < 1000


def test_message_text_is_kept_only_when_the_setting_is_on(_isolated_hermes_home):
    set_settings(_isolated_hermes_home, record_message_text=True)
    rt = PluginRuntime(_isolated_hermes_home)
    decide(rt, answer(None), NOTHING, text="x" * 5000)
    rt.close()

    assert [e.text for e in recorded(_isolated_hermes_home)] == ["x" * MAX_TEXT_CHARS]


def test_turning_the_record_off_applies_from_the_next_message(runtime, _isolated_hermes_home):
    decide(runtime, answer("pdf-to-markdown"))
    set_settings(_isolated_hermes_home, record_decisions="off")
    decide(runtime, answer("pdf-to-markdown"))
    set_settings(_isolated_hermes_home, record_decisions=True, record_max_bytes=100_000)
    decide(runtime, answer("image-resize"))
    runtime.decisions.close()

    assert [e.skill for e in recorded(_isolated_hermes_home)] == ["pdf-to-markdown", "image-resize"]
    assert runtime.decisions.max_bytes == 100_000


def test_a_malformed_answer_is_recorded_as_far_as_it_goes_and_never_raises(runtime, _isolated_hermes_home):
    junk = Reply(OK, {"skill": ["not", "a", "name"], "similarity": "high", "relative_gap": 10**400, "named": "x",
                      "top": 7, "threshold": True, "reason": None})
    decide(runtime, junk)
    record.decision(runtime, path=record.AGENT, platform="cli", reply=junk, outcome=INJECTED, started="soon")
    runtime.decisions.close()

    [entry] = recorded(_isolated_hermes_home)
    assert (entry.outcome, entry.skill, entry.similarity, entry.gap, entry.floor, entry.top) == (
        NOTHING, None, None, None, None, None)


def test_record_settings_are_checked_and_read_as_yaml_or_words():
    assert PluginSettings.from_mapping({"record_decisions": "off", "record_message_text": "yes"}) == PluginSettings(
        record_decisions=False, record_message_text=True)
    assert PluginSettings.from_mapping({"record_decisions": 0}).record_decisions is False
    with pytest.raises(ConfigError, match="^record_decisions 'maybe' is not true or false$"):
        PluginSettings.from_mapping({"record_decisions": "maybe"})
    with pytest.raises(ConfigError, match="^record_max_bytes 1000 is not a whole number from 100000 to 1000000000$"):
        PluginSettings.from_mapping({"record_max_bytes": 1000})


DAMAGED = {
    "deep nesting": b"[" * 200_000,
    "a 400-digit number": b'{"time": ' + b"9" * 400 + b"}\n",
    "binary garbage": bytes(range(256)) * 4000,
}


@pytest.mark.parametrize("damage", DAMAGED.values(), ids=DAMAGED.keys())
def test_a_damaged_record_neither_stops_nor_holds_up_start_and_recording_goes_on(_isolated_hermes_home, damage):
    path = decision_record_path(_isolated_hermes_home)
    path.parent.mkdir(parents=True)
    path.write_bytes(damage)
    with open(previous_generation(path), "wb") as fh:  # and a 61 MB previous generation
        fh.truncate(61_000_000)

    started = time.monotonic()
    rt = PluginRuntime(_isolated_hermes_home)
    assert time.monotonic() - started < 1.0  # the bound for start-up (nothing reads the record then)
    decide(rt, answer("pdf-to-markdown"))
    rt.close()

    found = read_record(path, PluginSettings().record_max_bytes)
    assert [e.skill for e in found.entries] == ["pdf-to-markdown"] and found.damaged_lines >= 1


def test_a_record_that_cannot_be_read_never_blocks_start(_isolated_hermes_home, caplog):
    path = decision_record_path(_isolated_hermes_home)
    path.parent.mkdir(parents=True)
    os.mkfifo(path)  # reading it, or writing it blindly, would block forever

    with caplog.at_level(logging.WARNING, logger="semantic_skills"):
        rt = PluginRuntime(_isolated_hermes_home)
        decide(rt, answer(None), NOTHING)
        rt.close()

    assert [r.getMessage() for r in caplog.records] == [
        f"semantic-skills: the decision record {path} is a FIFO (named pipe), not a regular file; moved it to "
        "decisions.jsonl.damaged; decisions are recorded afresh"]
