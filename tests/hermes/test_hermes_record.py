"""The decision record as the real Hermes 0.19 fills it: one line per routed message, by the hook that decided
it (``GatewayRunner._handle_message`` and a real ``AIAgent`` turn), and ``hermes semantic-skills history`` on it."""

from __future__ import annotations

import json
import logging
import shutil
import time
from datetime import datetime, timezone

import pytest

from semantic_skills.decision_log import ALREADY_LIVE, INJECTED, NOTHING, UNANSWERED, read_record
from semantic_skills.hermes.config import decision_record_path

from fake_llm import make_agent
from hermes_testkit import EXAMPLE_SKILLS, run_hermes, wait_until, write_settings

DOCKER = "My postgres container keeps restarting and the web service can't connect to it"
DOCKER_AGAIN = "The docker compose database service restarts in a loop again and the api cannot reach it"
CLOSE_CALL = "I accidentally pushed our AWS key to GitHub, what do I do?"  # a hint: secret-scan, release-notes
UNMATCHED = "What's a good recipe for banana bread?"
PDF = "Can you turn this scanned contract PDF into markdown with the tables intact?"
PDF_AGAIN = "And the second scanned PDF, the invoice: markdown with its tables too, please."
DOCKER_SKILL = "docker-compose-debug"


@pytest.fixture()
def recorded(runtime):
    """The entries the runtime records from now on (the session's home keeps one record for every test)."""
    runtime.decisions.flush()
    path = decision_record_path(runtime.home)
    before = len(read_record(path, runtime.refresh().record_max_bytes).entries)

    def since_start():
        runtime.decisions.flush()
        return read_record(path, runtime.refresh().record_max_bytes).entries[before:]

    return since_start


def brief(entries) -> list[tuple]:
    return [(e.path, e.platform, e.outcome, e.skill, e.mode) for e in entries]


def test_each_routed_gateway_message_is_recorded_once_by_the_hook_that_decided_it(gateway, recorded, runtime):
    user = gateway.new_user()
    turns = [gateway.send(text, user) for text in (DOCKER, DOCKER_AGAIN, CLOSE_CALL, UNMATCHED, "thanks!", "/help")]

    entries = recorded()
    assert brief(entries) == [
        ("gateway", "whatsapp", INJECTED, DOCKER_SKILL, "full"),     # rewritten by the gateway hook
        ("agent", "whatsapp", ALREADY_LIVE, DOCKER_SKILL, "full"),   # the chat had it: pre_llm_call finished it
        ("gateway", "whatsapp", INJECTED, "secret-scan", "hint"),
        ("gateway", "whatsapp", NOTHING, None, None),                # small talk and commands are not routed
    ]
    assert turns[1].text == DOCKER_AGAIN and turns[1].context == ""  # what the record says is what happened
    assert turns[2].text.startswith('<skill-context name="secret-scan" mode="hint">')
    assert entries[2].named == ("secret-scan", "release-notes") and entries[2].margin < entries[2].full_margin
    assert entries[3].top and entries[3].similarity < entries[3].floor and "below the floor" in entries[3].reason
    assert all(e.text is None and 0 <= e.latency_ms < 10_000 for e in entries)
    kept = decision_record_path(runtime.home).read_text(encoding="utf-8")
    assert not any(text in kept for text in (DOCKER, DOCKER_AGAIN, CLOSE_CALL, UNMATCHED))


def test_a_late_answer_is_recorded_once_by_pre_llm_call_with_the_time_it_took(gateway, recorded, late_gateway_answers):
    user = gateway.new_user()

    late = gateway.send(DOCKER, user)
    gateway.send(DOCKER_AGAIN, user)

    assert late.context.startswith(f'<skill-context name="{DOCKER_SKILL}" mode="full">')
    entries = recorded()
    assert brief(entries) == [("agent", "whatsapp", INJECTED, DOCKER_SKILL, "full"),
                              ("agent", "whatsapp", ALREADY_LIVE, DOCKER_SKILL, "full")]
    assert all(0 < e.latency_ms < 10_000 for e in entries)


def test_gateway_messages_one_model_call_takes_together_are_each_recorded_once(gateway, recorded, plugin_manager,
                                                                              late_gateway_answers):
    """Two messages left open by the gateway hook, then one agent turn carrying both: the first gets the turn's
    one skill block, the second is recorded as not decided, with why."""
    user = gateway.new_user()
    for text in (DOCKER, PDF):
        plugin_manager.invoke_hook("pre_gateway_dispatch", event=gateway.event(text, user), gateway=gateway.runner,
                                   session_store=gateway.runner.session_store)
    [result] = [r for r in plugin_manager.invoke_hook(
        "pre_llm_call", session_id="merged", user_message=f"{DOCKER}\n\n{PDF}", conversation_history=[],
        platform="whatsapp", sender_id=user) if r]

    assert result["context"].startswith(f'<skill-context name="{DOCKER_SKILL}"')
    entries = recorded()
    assert brief(entries) == [("agent", "whatsapp", INJECTED, DOCKER_SKILL, "full"),
                              ("agent", "whatsapp", UNANSWERED, None, None)]
    assert entries[1].reason == "not decided: an earlier message of the same model call took its one skill block"


def test_a_home_without_an_index_records_its_gateway_messages_as_unanswered(gateway, tmp_path):
    """The fallback is unchanged (the message passes untouched); the record says why nothing was decided."""
    import hermes_constants

    from semantic_skills.hermes.runtime import get_runtime
    from semantic_skills.worker.protocol import WAITING_FOR_INDEX

    home = tmp_path / "profiles" / "no-index"
    shutil.copytree(EXAMPLE_SKILLS, home / "skills")
    write_settings(home, route_timeout_ms=10000)
    user = gateway.new_user()
    unindexed = get_runtime(home)
    try:
        assert wait_until(lambda: unindexed.client.status.state == WAITING_FOR_INDEX, timeout=60)
        token = hermes_constants.set_hermes_home_override(str(home))
        try:
            turn = gateway.send(DOCKER, user)
        finally:
            hermes_constants.reset_hermes_home_override(token)
    finally:
        unindexed.close()

    assert turn.text == DOCKER and turn.context == ""
    [entry] = read_record(decision_record_path(home), 4_000_000).entries
    assert (entry.path, entry.outcome, entry.skill) == ("gateway", UNANSWERED, None)
    assert entry.reason.startswith("index_missing: ")


def test_an_agent_turn_is_recorded_and_history_reads_it_through_hermes(llm, recorded, runtime, hermes_home):
    time.sleep(1.0)  # --since is read to the second: what earlier tests recorded is over a second old
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    agent = make_agent(llm, "recorded-agent-session")
    messages = None
    for text in (PDF, "thanks!", UNMATCHED, PDF_AGAIN):
        messages = agent.run_conversation(text, conversation_history=messages)["messages"]

    entries = recorded()
    assert brief(entries) == [("agent", "cli", INJECTED, "pdf-to-markdown", "full"),
                              ("agent", "cli", NOTHING, None, None),
                              ("agent", "cli", ALREADY_LIVE, "pdf-to-markdown", "full")]
    assert all(e.text is None for e in entries)

    shown = run_hermes(hermes_home.path, "semantic-skills", "history", "--since", started, "--json")
    assert shown.returncode == 0, shown.stderr
    summary = json.loads(shown.stdout)
    assert summary["decisions"] == 3 and summary["paths"] == {"agent": 3}
    assert summary["outcomes"] == {INJECTED: 1, ALREADY_LIVE: 1, NOTHING: 1, UNANSWERED: 0}
    assert summary["most_injected"] == [{"skill": "pdf-to-markdown", "injected": 1, "full": 1, "hint": 0}]
    text = run_hermes(hermes_home.path, "semantic-skills", "history", "--since", started).stdout
    assert "3 routed messages from " in text and "(agent 3)" in text and PDF not in text


def test_a_turn_hermes_asks_about_twice_is_routed_and_recorded_once(recorded, routing_requests, plugin_manager):
    """Hermes names each agent turn (``turn_id``): the same turn asked about again gets the same context, with no
    second routing request and no second line in the record; another turn is routed as usual."""
    def ask(turn_id: str) -> list:
        return [r for r in plugin_manager.invoke_hook(
            "pre_llm_call", session_id="turn-ids", turn_id=turn_id, user_message=DOCKER, conversation_history=[],
            platform="cli", sender_id="") if r]

    first, again = ask("turn-ids:task:1"), ask("turn-ids:task:1")
    assert first == again and first[0]["context"].startswith(f'<skill-context name="{DOCKER_SKILL}"')
    assert [op for op, _ in routing_requests] == ["route"] and len(recorded()) == 1
    ask("turn-ids:task:2")
    assert [op for op, _ in routing_requests] == ["route", "route"] and len(recorded()) == 2


def test_a_multimodal_turn_hermes_names_passes_quietly(recorded, routing_requests, plugin_manager, caplog):
    """Hermes passes a multimodal turn's message as a list of parts: nothing is routed, and the hook does not fail
    (a turn id made the hook hash the message before it looked at it)."""
    parts = [{"type": "text", "text": DOCKER}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,"}}]
    with caplog.at_level(logging.WARNING):
        answers = plugin_manager.invoke_hook("pre_llm_call", session_id="parts", turn_id="parts:task:1",
                                             user_message=parts, conversation_history=[], platform="cli",
                                             sender_id="")

    assert [a for a in answers if a] == [] and routing_requests == [] and recorded() == []
    assert [r.getMessage() for r in caplog.records if "pre_llm_call failed" in r.getMessage()] == []
