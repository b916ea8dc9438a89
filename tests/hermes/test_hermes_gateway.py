"""The plugin inside the real ``GatewayRunner._handle_message`` of Hermes 0.19."""

from __future__ import annotations

import logging
from dataclasses import replace

import pytest

from semantic_skills.hermes import runtime as runtime_module
from semantic_skills.injection import NOTE_FULL, SkillBlock, block_digest, skill_block
from semantic_skills.skills.front_matter import strip_front_matter

from hermes_testkit import EXAMPLE_SKILLS

DOCKER = "My postgres container keeps restarting and the web service can't connect to it"
DOCKER_AGAIN = "The docker compose database service restarts in a loop again and the api cannot reach it"
UNMATCHED = "What's a good recipe for banana bread?"
DOCKER_SKILL = "docker-compose-debug"
OPENING = f'<skill-context name="{DOCKER_SKILL}" mode="full">'


def docker_body() -> str:
    text = (EXAMPLE_SKILLS / "devops" / "docker-compose-debug" / "SKILL.md").read_text(encoding="utf-8")
    return strip_front_matter(text).strip("\n")


def test_matching_message_reaches_the_agent_with_the_skill_before_the_original_text(gateway):
    turn = gateway.send(DOCKER, gateway.new_user())

    assert turn.text.startswith(OPENING)
    assert turn.text.endswith("</skill-context>\n\n" + DOCKER)
    assert docker_body() in turn.text
    assert NOTE_FULL in turn.text
    assert turn.context == ""  # injected once: pre_llm_call adds nothing


def test_same_skill_is_not_injected_twice_in_a_session(gateway):
    user = gateway.new_user()
    first = gateway.send(DOCKER, user)
    second = gateway.send(DOCKER_AGAIN, user)

    assert first.text.startswith(OPENING)
    assert second.text == DOCKER_AGAIN and second.context == ""
    assert first.session_id == second.session_id


def test_a_new_session_gets_the_skill_again(gateway):
    """An automatic reset (idle, daily) gives the chat a new session id and no hook: the gateway's record
    cannot vouch for the new session, so the skill arrives just before the model call."""
    user = gateway.new_user()
    assert gateway.send(DOCKER, user).text.startswith(OPENING)
    old_id = gateway.session_id(user)

    new_id = gateway.reset_session(user)
    again = gateway.send(DOCKER_AGAIN, user)

    assert new_id != old_id and again.session_id == new_id
    assert again.text == DOCKER_AGAIN and again.context.startswith(OPENING) and docker_body() in again.context


@pytest.mark.parametrize("text", ["thanks!", "ok 👍", "好的，谢谢", UNMATCHED])
def test_acknowledgements_and_unmatched_messages_pass_through(gateway, text):
    turn = gateway.send(text, gateway.new_user())

    assert turn.text == text and turn.context == ""


@pytest.mark.parametrize("text", ["/help", "/start",
                                  "/etc/hosts lost the db entry, docker compose services can't connect"])
def test_slash_commands_are_left_to_hermes(gateway, routing_requests, text):
    turn = gateway.send(text, gateway.new_user())

    assert routing_requests == []
    if turn is not None:  # Hermes hands unknown commands and paths to the agent as they are
        assert turn.text == text and turn.context == ""


def test_unauthorized_sender_costs_no_routing_request(gateway, routing_requests, monkeypatch):
    monkeypatch.setenv("WHATSAPP_ALLOWED_USERS", "15550000000@s.whatsapp.net")

    assert gateway.send(DOCKER, gateway.new_user()) is None
    assert routing_requests == []


def test_answer_to_a_pending_clarify_is_not_rewritten(gateway, routing_requests):
    from tools import clarify_gateway

    user = gateway.new_user()
    key = gateway.session_key(user)
    clarify_gateway.register("clarify-1", key, "Which service fails?", None)
    try:
        assert gateway.send(DOCKER, user) is None  # Hermes hands the answer to the waiting clarify
        assert routing_requests == []
    finally:
        clarify_gateway.clear_session(key)


def test_answer_to_a_pending_update_prompt_is_not_rewritten(gateway, routing_requests):
    user = gateway.new_user()
    gateway.runner._update_prompt_pending[gateway.session_key(user)] = True

    assert gateway.send(DOCKER, user) is None
    assert routing_requests == []


def test_skip_from_another_plugin_drops_the_message_untouched(gateway, plugin_manager):
    def skip_everything(**_):
        return {"action": "skip", "reason": "handled elsewhere"}

    hooks = plugin_manager._hooks["pre_gateway_dispatch"]
    hooks.insert(0, skip_everything)
    try:
        event = gateway.event(DOCKER, gateway.new_user())
        import asyncio

        asyncio.run(gateway.runner._handle_message(event))
    finally:
        hooks.remove(skip_everything)

    assert gateway.turns == [] and event.text == DOCKER


def test_rewrite_by_an_earlier_plugin_still_gets_the_skill_once(gateway, plugin_manager):
    def shout(event=None, **_):
        return {"action": "rewrite", "text": event.text.upper()}

    hooks = plugin_manager._hooks["pre_gateway_dispatch"]
    hooks.insert(0, shout)
    try:
        turn = gateway.send(DOCKER, gateway.new_user())
    finally:
        hooks.remove(shout)

    assert turn.text == DOCKER.upper()
    assert turn.context.startswith(OPENING) and turn.context.count("<skill-context") == 1


def test_a_failing_hook_leaves_the_message_intact_and_logs_once(gateway, runtime, monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise RuntimeError("routing exploded")

    monkeypatch.setattr(runtime.client, "route_async", broken)
    with caplog.at_level(logging.WARNING, logger="semantic_skills"):
        first = gateway.send(DOCKER, gateway.new_user())
        second = gateway.send(DOCKER, gateway.new_user())

    assert first.text == DOCKER and second.text == DOCKER
    failures = [r for r in caplog.records if "routing exploded" in r.getMessage()]
    assert len(failures) == 2  # one per hook (pre_gateway_dispatch, pre_llm_call), never one per message
    assert {f.getMessage().split(" failed")[0] for f in failures} == {
        "semantic-skills: pre_gateway_dispatch", "semantic-skills: pre_llm_call"}


def test_late_decision_arrives_through_pre_llm_call_exactly_once(gateway, late_gateway_answers):
    user = gateway.new_user()

    late = gateway.send(DOCKER, user)
    again = gateway.send(DOCKER_AGAIN, user)

    assert late.text == DOCKER
    assert late.context.startswith(OPENING) and docker_body() in late.context
    assert again.text == DOCKER_AGAIN and again.context == ""


def test_what_a_chat_holds_survives_a_clean_gateway_restart(gateway, runtime, hermes_home):
    user = gateway.new_user()
    first = gateway.send(DOCKER, user)
    assert first.text.startswith(OPENING)
    key, session_id = gateway.session_key(user), gateway.session_id(user)
    row = runtime.trust.ledger.get(block_digest(first.text[: -len(DOCKER) - 2]))
    docker = SkillBlock(first.text[: -len(DOCKER) - 2], row.mode, row.names, row.versions)
    runtime.trust.flush(clean=True)  # what a gateway that stops saves

    restarted = runtime_module.PluginRuntime(hermes_home.path)  # what the next gateway process builds
    try:
        assert restarted.trust.wait_loaded(10)
        assert not restarted.trust.claim_rewrite(key, session_id, docker)
        assert restarted.trust.claim_rewrite(key, session_id, replace(docker, versions=("edited since",)))
        assert restarted.trust.claim_rewrite(key, session_id, skill_block("pdf-to-markdown", "another skill"))
    finally:
        restarted.close()


def test_after_new_the_skill_is_rewritten_in_at_once(gateway, plugin_manager):
    """``/new`` fires on_session_reset with the old and the new session id: the new session is known empty."""
    user = gateway.new_user()
    gateway.send(DOCKER, user)
    old_id = gateway.session_id(user)
    assert gateway.send(DOCKER_AGAIN, user).text == DOCKER_AGAIN  # the session has the skill

    new_id = gateway.reset_session(user)
    plugin_manager.invoke_hook("on_session_reset", session_id=new_id, platform="whatsapp", reason="new_session",
                               old_session_id=old_id, new_session_id=new_id)

    again = gateway.send(DOCKER_AGAIN, user)
    assert again.text.startswith(OPENING) and again.text.endswith(DOCKER_AGAIN) and again.context == ""


PDF = "Can you turn this scanned contract PDF into markdown with the tables intact?"


def test_a_senders_group_chat_and_direct_chat_keep_their_turns_apart(gateway, runtime, plugin_manager):
    """#27.12: the gateway hook files a turn per message, and the agent call that takes it must be the one of the
    same chat. The same sender writes in a group and in their direct chat, and the group's agent run has not
    started when the direct chat's does (Hermes runs chats apart): the direct chat's call took the group's turns
    by sender and text, so it got the group's block, confirmed the group's record for its own session, and the
    group's own call then added its block a second time. A turn is matched by its chat's session now."""
    user, group = gateway.new_user(), f"group-{gateway.new_user()}"

    def filed_in_the_group(text: str) -> str:
        """The group's message through the gateway hook: what Hermes will hand the group's agent run."""
        results = plugin_manager.invoke_hook("pre_gateway_dispatch", event=gateway.event(text, user, group),
                                             gateway=gateway.runner, session_store=gateway.runner.session_store)
        return next((r["text"] for r in results if isinstance(r, dict) and r.get("action") == "rewrite"), text)

    group_docker, group_pdf = filed_in_the_group(DOCKER), filed_in_the_group(PDF)
    assert group_docker.startswith(OPENING) and group_pdf.startswith('<skill-context name="pdf-to-markdown"')

    direct = gateway.send(DOCKER, user)  # the same words in the sender's direct chat
    path = gateway.send(f"/tmp/asked-in-the-group.txt says: {PDF}", user)  # unrouted; the group's words inside
    assert direct.text.startswith(OPENING) and direct.context == ""
    assert path.context == ""  # was: the group's pdf block

    source = gateway.event("", user, group).source
    group_session = gateway.runner.session_store.get_or_create_session(source).session_id  # the group's run starts
    history: list[dict] = []
    for text in (group_docker, group_pdf):
        history.append({"role": "user", "content": text})
        results = plugin_manager.invoke_hook("pre_llm_call", session_id=group_session, user_message=text,
                                             platform="whatsapp", sender_id=user, conversation_history=list(history),
                                             is_first_turn=len(history) == 1)
        assert not [r for r in results if r], results  # its block is in its message: never a second copy
        history.append({"role": "assistant", "content": "ok"})
    records = dict(runtime.trust.chats.rows())
    assert records[gateway.session_key(user, group)].session_id == group_session  # was the direct chat's session
    assert records[gateway.session_key(user)].session_id == direct.session_id


def test_slash_commands_are_not_filed_as_turns_and_a_prompt_built_from_one_is_still_matched(gateway, runtime,
                                                                                             plugin_manager):
    """#27.13: 1,024 slash commands through the registered gateway hook (Hermes answers most itself, so no agent
    call takes them) were 1,024 turns that each later call of the sender read against its message. Now the chat
    keeps only its latest command; the agent run of a prompt Hermes builds from it still takes it, and so leaves
    the prompt unrouted (the skill it names is Hermes' to load)."""
    user = gateway.new_user()
    held = len(runtime.turns)
    for number in range(1024):
        plugin_manager.invoke_hook("pre_gateway_dispatch", event=gateway.event(f"/status {number}", user),
                                   gateway=gateway.runner, session_store=gateway.runner.session_store)
    plugin_manager.invoke_hook("pre_gateway_dispatch", event=gateway.event("/docker-compose-debug fix my db", user),
                               gateway=gateway.runner, session_store=gateway.runner.session_store)
    assert len(runtime.turns) - held == 1  # was 1,025

    session = gateway.runner.session_store.get_or_create_session(gateway.event("", user).source).session_id
    prompt = f"[Skill docker-compose-debug loaded by the user]\n\n{DOCKER}\n\n" + "log line\n" * 6_000
    results = plugin_manager.invoke_hook("pre_llm_call", session_id=session, user_message=prompt, platform="whatsapp",
                                         sender_id=user, conversation_history=[{"role": "user", "content": prompt}],
                                         is_first_turn=True)
    assert not [r for r in results if r] and len(runtime.turns) == held  # taken, and nothing added to the prompt
