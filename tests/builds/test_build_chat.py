"""A real one-shot ``hermes chat -q`` on each build, against a fake model: the stub, the block, a quiet log."""

from __future__ import annotations

import difflib

from semantic_skills.hermes.prompt.middleware import section_for

from buildkit import DOCKER, OFF_TOPIC, plugin_problems, printed_warnings, system_prompt, user_message

SKILL = "docker-compose-debug"


def test_both_chats_end_well_and_reach_the_model_once(chats):
    for done in (chats.on_topic, chats.off_topic):
        assert done.returncode == 0, done.explain()
    assert [len(sent) for sent in chats.requests.values()] == [1, 1], chats.requests


def test_the_system_prompt_carries_the_stub_and_not_hermes_listing(chats):
    """The stub's variant for the tools the request offers: a Hermes that defers plugin tools behind tool_search
    offers search_skills on demand, and the stub says how to reach it."""
    for sent in chats.requests.values():
        system = system_prompt(sent[0])
        assert section_for(sent[0]) in system and "<available_skills>" not in system
        assert "search_skills" in section_for(sent[0])  # offered directly or on demand: the stub points to it


def test_the_system_prompt_is_byte_identical_across_two_chats(chats):
    first, second = (system_prompt(sent[0]) for sent in chats.requests.values())
    assert first == second, "\n".join(difflib.unified_diff(first.splitlines(), second.splitlines(), lineterm=""))


def test_an_on_topic_message_carries_one_full_block_of_its_skill(chats):
    content = user_message(chats.requests[DOCKER][0])
    why = f"{content[:400]}\nrecorded: {chats.records[DOCKER]}\n{plugin_problems(chats.log)}"
    assert content.startswith(DOCKER) and content.count("<skill-context") == 1, why
    assert f'<skill-context name="{SKILL}" mode="full">' in content and "docker compose logs" in content


def test_an_off_topic_message_carries_no_block(chats):
    assert user_message(chats.requests[OFF_TOPIC][0]) == OFF_TOPIC


def test_each_chat_records_what_its_request_carried(chats):
    """The decision record says what the model got; each chat's own entries are read (the home's record also
    holds the other steps' turns on the same message)."""
    on_topic, off_topic = chats.records[DOCKER], chats.records[OFF_TOPIC]
    assert [(entry["outcome"], entry["skill"], entry["mode"]) for entry in on_topic] == [
        ("injected", SKILL, "full")], on_topic
    assert [entry["outcome"] for entry in off_topic] == ["nothing"], off_topic


def test_the_plugin_logs_no_warning_or_error(chats):
    printed = chats.on_topic.output + chats.off_topic.output
    assert chats.log.strip(), "the chats logged nothing to agent.log"
    assert not plugin_problems(chats.log + printed), plugin_problems(chats.log + printed)


def test_neither_chat_prints_a_warning(chats):
    """The second chat read the plugin's toolset from the first one's cache before the plugin loaded: Hermes 0.20.1
    printed "Warning: Unknown toolsets: semantic_skills" there while the plugin had a toolset of its own. With
    what Hermes says about this machine turned off (``buildkit.quiet_machine``), any warning is the plugin's."""
    for done in (chats.on_topic, chats.off_topic):
        assert not printed_warnings(done.output), done.explain()
