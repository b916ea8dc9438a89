"""On each build, a driver run with the build's Python: Hermes' plugin manager loads the installed plugin, a gateway
message reaches a real agent, and agent turns go on around a compression (drivers/agent_turns.py)."""

from __future__ import annotations

from semantic_skills.hermes.prompt.middleware import section_for

from buildkit import DOCKER, OWN_BUILD, PDF, agent_loop, system_prompt, user_message
from hermes_testkit import PLUGIN


def test_the_plugin_loads_and_leaves_hermes_prompt_builder_its_own(agent_report, installed):
    assert agent_report["loaded"] and agent_report["ready"], agent_report
    assert agent_report["builder_is_hermes_own"], "agent.prompt_builder.build_skills_system_prompt was replaced"
    if installed.build.label != OWN_BUILD:  # the project venv imports this checkout; a user's Hermes the install
        assert agent_report["package"] == str(installed.home / "plugins" / PLUGIN)


def test_a_gateway_message_reaches_a_real_agent_with_one_block_of_its_skill(agent_report):
    sent = agent_loop(agent_report["gateway_requests"])
    assert len(sent) == 1
    content = user_message(sent[0])
    assert content.count("<skill-context") == 1 and DOCKER in content, content[:400]
    assert '<skill-context name="docker-compose-debug" mode="full">' in content
    system = system_prompt(sent[0])  # the stub's variant for the tools this platform offers
    assert section_for(sent[0]) in system and "<available_skills>" not in system


def test_after_a_compression_the_system_prompt_is_the_same_and_the_next_turn_gets_its_skill(agent_report):
    assert agent_report["compression"] == "done", agent_report["compression"]
    assert agent_report["messages_after"] < agent_report["messages_before"]
    requests = agent_report["compression_requests"]
    before, after = agent_loop(requests)
    summaries = [r for r in requests if "messages" in r and not r.get("tools") and len(r["messages"]) == 1]
    assert summaries, "the compression asked the model for no summary"
    assert system_prompt(before) == system_prompt(after)
    assert section_for(after) in system_prompt(after)
    assert '<skill-context name="docker-compose-debug" mode="full">' in user_message(before)
    content = user_message(after)
    assert content.startswith(PDF) and content.count("<skill-context") == 1, content[:400]
    assert '<skill-context name="pdf-to-markdown" mode="full">' in content
