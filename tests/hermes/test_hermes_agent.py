"""Real Hermes agents (``AIAgent`` and ``hermes chat -q``) against a fake chat server on 127.0.0.1."""

from __future__ import annotations

import json
import logging
import os
import shutil
import textwrap
from pathlib import Path

import pytest
import yaml

from semantic_skills.hermes.prompt.stub import COMPACT_SKILLS_PROMPT
from semantic_skills.hermes.tool import PINNED_NOTE

from fake_llm import last_user_content, make_agent
from hermes_testkit import (
    EXAMPLE_SKILLS,
    ONNX,
    WORKER_READY_SECONDS,
    build_index,
    resolve_auto_load_skills,
    run_hermes,
    set_active_org,
    wait_until,
    worker_processes,
    write_settings,
)
from support import write_skill

DOCKER = "My postgres container keeps restarting and the web service can't connect to it"
PDF = "Can you turn this scanned contract PDF into markdown with the tables intact?"
SOURDOUGH = "How often should I feed my sourdough starter? It smells like nail polish remover."
SOURDOUGH_SKILL = """\
    ---
    name: sourdough-starter
    description: Keep a sourdough starter healthy - feeding schedule, hydration, smells and how to revive it.
    ---
    # Sourdough starter care

    Feed it equal weights of flour and water every 12 hours at room temperature.
    An acetone or nail-polish smell means it is hungry: feed it more often.
    """


BONSAI = "How do I repot my juniper bonsai without killing it? The roots are circling the pot."
BONSAI_SKILL = """\
---
name: bonsai-repotting
description: Repot a bonsai tree safely - timing, root pruning, soil mix and aftercare.
---
# Bonsai repotting

Repot junipers in early spring, just before the buds extend. Comb out circling roots and prune at most a third.
"""


def lists_skills(system: str) -> bool:
    """Whether a system prompt carries Hermes' listing: its rows, never its tags, which other text can hold (the
    workspace's git log Hermes adds, a commit message naming them)."""
    return "\n    - docker-compose-debug: " in system


def test_system_prompt_is_byte_identical_across_turns_sessions_and_rebuilds(llm, runtime, hermes_home):
    start = len(llm.chat_requests())
    agent = make_agent(llm, "stable-session-1")
    history = None
    for message in (DOCKER, "thanks!", "What's a good recipe for banana bread?"):
        history = agent.run_conversation(message, conversation_history=history)["messages"]

    skills_before = runtime.client.status.skills
    skill = hermes_home.path / "skills" / "baking" / "sourdough-starter" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text(textwrap.dedent(SOURDOUGH_SKILL), encoding="utf-8")
    build_index(hermes_home.path)
    # the running worker picks the rebuilt index up by itself, with no restart
    assert wait_until(lambda: runtime.client.status.skills == skills_before + 1, timeout=60)
    make_agent(llm, "stable-session-2").run_conversation(SOURDOUGH)

    requests = llm.chat_requests()[start:]
    assert len(requests) == 4
    systems = {request["messages"][0]["content"] for request in requests}
    assert len(systems) == 1
    system = systems.pop()
    assert COMPACT_SKILLS_PROMPT in system and not lists_skills(system)

    first_turn = last_user_content(requests[0])
    assert first_turn.startswith(DOCKER + "\n\n<skill-context name=\"docker-compose-debug\"")
    assert first_turn.count("<skill-context") == 1 and "docker compose logs" in first_turn
    assert "<skill-context" not in last_user_content(requests[1]) + last_user_content(requests[2])
    new_session = last_user_content(requests[3])
    assert '<skill-context name="sourdough-starter"' in new_session and "Feed it equal weights" in new_session


def test_a_skill_the_agent_writes_is_injected_from_the_next_message_with_no_build(llm, runtime, hermes_home):
    """skill_manage create, then delete, in real agent turns: post_tool_call has the worker re-index each time."""
    before = runtime.client.status.skills
    llm.reply_tool_call("skill_manage", {"action": "create", "name": "bonsai-repotting", "category": "gardening",
                                         "content": BONSAI_SKILL})
    llm.reply_text("Saved it as a skill.")
    make_agent(llm, "writes-a-skill").run_conversation("Save what we learnt about repotting bonsai as a skill.")

    assert (hermes_home.path / "skills" / "gardening" / "bonsai-repotting" / "SKILL.md").is_file()
    assert wait_until(lambda: runtime.client.status.skills == before + 1, timeout=120), runtime.client.status.skills
    make_agent(llm, "asks-about-bonsai").run_conversation(BONSAI)
    assert '<skill-context name="bonsai-repotting"' in last_user_content(llm.chat_requests()[-1])

    llm.reply_tool_call("skill_manage", {"action": "delete", "name": "bonsai-repotting"})
    llm.reply_text("Deleted it.")
    make_agent(llm, "deletes-a-skill").run_conversation("Please delete the bonsai skill again.")
    assert wait_until(lambda: runtime.client.status.skills == before, timeout=120), runtime.client.status.skills


ACME = "How do I ship a new release of the billing service with the shipyard CLI?"
ACME_SKILL = """\
---
name: acme-release
description: Ship a release of the billing service with the shipyard CLI - tagging, canary and rollback.
---
# Releasing billing

Tag the release, run `shipyard canary billing`, watch the error rate for ten minutes, then promote.
"""
GLOBEX = "Which greenhouse lamps should I buy for winter tomato seedlings?"
GLOBEX_SKILL = """\
---
name: globex-greenhouse
description: Choose greenhouse grow lamps for seedlings - spectrum, wattage and hours of light in winter.
---
# Greenhouse lamps

Full-spectrum LED panels at about 30 W per square foot, 14-16 hours a day, 30 cm above the seedlings.
"""


def routed_skill(llm, session: str, message: str) -> str:
    make_agent(llm, session).run_conversation(message)
    return last_user_content(llm.chat_requests()[-1])


def test_an_organisation_switch_takes_effect_from_the_next_message(llm, runtime, hermes_home):
    """Hermes 0.21 offers only the active organisation's mirrored skills (``_org/<org>/``, named in
    ``_org/.active_org``): the old organisation's are hidden at once, the new one's come with a re-index."""
    skills = hermes_home.path / "skills"
    for organisation, text in (("acme", ACME_SKILL), ("globex", GLOBEX_SKILL)):
        write_skill(skills / "_org" / organisation, f"ops/{organisation}-skill", text)
    before = runtime.client.status.skills
    try:
        set_active_org(skills, "acme")
        build_index(hermes_home.path)
        assert wait_until(lambda: runtime.client.status.skills == before + 1, timeout=60)
        assert '<skill-context name="acme-release"' in routed_skill(llm, "org-acme", ACME)

        set_active_org(skills, "globex")
        assert '<skill-context name="acme-release"' not in routed_skill(llm, "org-switched", ACME)
        assert wait_until(lambda: "globex-greenhouse" in {g["name"] for g in runtime.client.status.gated},
                          timeout=120)
        assert '<skill-context name="globex-greenhouse"' in routed_skill(llm, "org-globex", GLOBEX)
    finally:
        shutil.rmtree(skills / "_org")
        build_index(hermes_home.path)
        assert wait_until(lambda: runtime.client.status.skills == before, timeout=60)


def test_an_agent_turn_installs_no_package(llm, runtime, monkeypatch):
    """Building an AIAgent runs every tool's check; the tts tool's asks Hermes for edge-tts, which Hermes
    pip-installs when missing unless the home forbids it, as every test home does (NO_RUNTIME_INSTALLS)."""
    import model_tools
    import tools.lazy_deps as lazy_deps
    import tools.registry as registry

    asked, installs = [], []
    ensure = lazy_deps.ensure
    monkeypatch.setattr(lazy_deps, "ensure", lambda feature, **kw: asked.append(feature) or ensure(feature, **kw))
    monkeypatch.setattr(lazy_deps, "feature_missing", lazy_deps.feature_specs)  # every optional backend missing
    monkeypatch.setattr(lazy_deps, "_venv_pip_install", lambda specs, **_: installs.append(specs))
    for cache in ("_check_fn_cache", "_check_fn_last_good"):  # so the checks run again for this agent
        monkeypatch.setattr(registry, cache, {})
    monkeypatch.setattr(model_tools, "_tool_defs_cache", {})
    llm.reply_text("Hello!")

    make_agent(llm, "installs-nothing").run_conversation("Hello there, how are you today?")

    assert "tts.edge" in asked and installs == []


def test_search_skills_dispatches_through_the_tool_registry(llm, runtime):
    start = len(llm.chat_requests())
    llm.reply_tool_call("search_skills", {"query": "turn a PDF into markdown", "limit": 2})
    llm.reply_text("found it")

    result = make_agent(llm, "tool-session").run_conversation("Which of your skills handles documents?")

    requests = llm.chat_requests()[start:]
    assert result["final_response"] == "found it" and len(requests) == 2
    assert "search_skills" in {tool["function"]["name"] for tool in requests[0]["tools"]}
    tool_message = [m for m in requests[1]["messages"] if m["role"] == "tool"][-1]
    payload = json.loads(tool_message["content"])
    assert [r["name"] for r in payload["results"]][0] == "pdf-to-markdown" and len(payload["results"]) == 2
    assert payload["best"]["name"] == "pdf-to-markdown" and "pdftotext" in payload["best"]["content"]
    assert not payload["best"]["content"].startswith("---")  # front matter stripped


def test_gateway_message_reaches_a_real_agent_with_its_skill_exactly_once(llm, gateway):
    start = len(llm.chat_requests())

    def run_real_agent(event, source, session_id):
        agent = make_agent(llm, session_id, platform=source.platform.value, user_id=source.user_id)
        agent.run_conversation(event.text)
        return "ok"

    gateway.agent_run = run_real_agent
    gateway.send(DOCKER, gateway.new_user())

    content = last_user_content(llm.chat_requests()[start])
    assert content.startswith('<skill-context name="docker-compose-debug"') and content.endswith(DOCKER)
    assert content.count("<skill-context") == 1


def test_late_gateway_decision_reaches_a_real_agent_exactly_once(llm, gateway, late_gateway_answers):
    start = len(llm.chat_requests())

    def run_real_agent(event, source, session_id):
        make_agent(llm, session_id, platform=source.platform.value, user_id=source.user_id) \
            .run_conversation(event.text)
        return "ok"

    gateway.agent_run = run_real_agent
    gateway.send(DOCKER, gateway.new_user())

    content = last_user_content(llm.chat_requests()[start])
    assert content.startswith(DOCKER + "\n\n<skill-context name=\"docker-compose-debug\"")
    assert content.count("<skill-context") == 1


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to find the worker processes")
def test_hermes_chat_one_shot_gets_its_skill_and_leaves_no_worker(llm, hermes_home):
    config_path = hermes_home.path / "config.yaml"
    config = yaml.safe_load(config_path.read_text())
    config["model"] = {"default": "fake-model", "provider": "custom", "base_url": llm.base_url, "api_key": "sk-test"}
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    start = len(llm.chat_requests())

    done = run_hermes(hermes_home.path, "chat", "-q", PDF, "-Q", timeout=600)

    assert done.returncode == 0, done.stdout + done.stderr
    content = last_user_content(llm.chat_requests()[start])
    assert content.startswith(PDF + "\n\n<skill-context name=\"pdf-to-markdown\"")
    assert content.count("<skill-context") == 1
    orphans = lambda: {pid for pid, parent in worker_processes(hermes_home.index_dir).items()  # noqa: E731
                       if parent != os.getpid()}
    assert wait_until(lambda: not orphans(), timeout=30), orphans()


def test_a_pinned_skill_is_never_injected_and_search_skills_says_it_is_loaded(llm, runtime, hermes_home, monkeypatch):
    """Hermes 0.21 ``skills.auto_load`` (agent/skill_commands.py:resolve_auto_load_skills, restated in
    test_hermes_eligibility.py) writes the skill in full into every new session's system prompt."""
    import agent.skill_commands

    monkeypatch.setattr(agent.skill_commands, "resolve_auto_load_skills", resolve_auto_load_skills, raising=False)
    config_file = hermes_home.path / "config.yaml"
    saved = config_file.read_text()
    config = yaml.safe_load(saved)
    config.setdefault("skills", {})["auto_load"] = ["pdf-to-markdown"]
    config_file.write_text(yaml.safe_dump(config, sort_keys=False))
    try:
        assert "<skill-context" not in routed_skill(llm, "pinned-pdf", PDF)
        llm.reply_tool_call("search_skills", {"query": "turn a PDF into markdown", "limit": 2})
        llm.reply_text("it is already loaded")
        make_agent(llm, "pinned-search").run_conversation("Which of your skills handles documents?")
        tool_message = [m for m in llm.chat_requests()[-1]["messages"] if m["role"] == "tool"][-1]
        payload = json.loads(tool_message["content"])
    finally:
        config_file.write_text(saved)

    assert payload["results"][0]["name"] == "pdf-to-markdown" and payload["results"][0]["already_loaded"] is True
    assert not any(r.get("already_loaded") for r in payload["results"][1:])
    assert payload["best"] == {"name": "pdf-to-markdown", "already_loaded": True, "content": PINNED_NOTE,
                               "truncated": False}
    assert '<skill-context name="pdf-to-markdown"' in routed_skill(llm, "unpinned-pdf", PDF)  # the control


def test_before_the_first_build_the_agent_still_finds_skills_and_a_session_keeps_its_prompt(
        llm, plugin_manager, tmp_path, monkeypatch, caplog):
    """Plugin enabled, no index built yet: Hermes' own listing stays in the system prompt and search_skills
    answers from the skill files. Hermes builds the prompt once per session (0.19
    agent/conversation_loop.py:_restore_or_build_system_prompt; a fresh agent restores it from the session
    database), so a build in mid-session changes nothing there; the next session gets the compact stub."""
    from hermes_state import SessionDB

    from semantic_skills.hermes.runtime import get_runtime
    from semantic_skills.worker.protocol import WAITING_FOR_INDEX

    home = tmp_path / "fresh-home"
    shutil.copytree(EXAMPLE_SKILLS, home / "skills")
    write_settings(home, embedder=ONNX)
    monkeypatch.setenv("HERMES_HOME", str(home))
    start = len(llm.chat_requests())
    try:
        with caplog.at_level(logging.WARNING, logger="semantic_skills"):
            llm.reply_tool_call("search_skills", {"query": "turn a PDF into markdown", "limit": 2})
            llm.reply_text("pdf-to-markdown it is")
            sessions = SessionDB(home / "state.db")
            first = make_agent(llm, "before-build", session_db=sessions).run_conversation(PDF)
            build_index(home)
            client = get_runtime(home).client  # its worker looks for the index once a second
            assert wait_until(lambda: client.status.state != WAITING_FOR_INDEX, timeout=30), client.status.detail
            assert client.wait_ready(WORKER_READY_SECONDS), client.status.detail
            history = make_agent(llm, "before-build", session_db=sessions).run_conversation(  # the gateway's way:
                "And keep the tables?", conversation_history=first["messages"])["messages"]  # a fresh agent
            make_agent(llm, "after-build").run_conversation(PDF)
    finally:
        get_runtime(home).close()

    requests = llm.chat_requests()[start:]
    assert len(requests) == 4 and len(history) > len(first["messages"])
    before, same_session, next_session = requests[0], requests[2], requests[3]
    listing = before["messages"][0]["content"]
    assert "<available_skills>" in listing and "pdf-to-markdown" in listing  # Hermes' own listing
    tool_message = [m for m in requests[1]["messages"] if m["role"] == "tool"][-1]
    found = json.loads(tool_message["content"])
    assert found["matched"] == "words" and found["results"][0]["name"] == "pdf-to-markdown"
    assert f"build one with: HERMES_HOME={home} hermes semantic-skills build" in found["note"]
    assert same_session["messages"][0]["content"] == listing  # byte for byte, though the index now exists
    assert not lists_skills(next_session["messages"][0]["content"])
    assert '<skill-context name="pdf-to-markdown"' in last_user_content(next_session)
    warned = [r.getMessage() for r in caplog.records if "Hermes' own skills listing" in r.getMessage()]
    assert len(warned) == 1 and "hermes semantic-skills build" in warned[0]


def test_the_stub_keeps_hermes_prompt_cache_markers_and_parts_as_they_were(llm, runtime):
    """With prompt caching on (as Hermes does for Claude routes), Hermes marks the system message's parts with
    cache_control before the middleware runs; the stub goes into the part that held the listing, and the
    parts, their markers and the rest of the request reach the model as Hermes built them."""
    start = len(llm.chat_requests())
    agent = make_agent(llm, "cached-session")
    agent._use_prompt_caching = True  # what Hermes decides itself for a provider that caches
    history = agent.run_conversation(DOCKER)["messages"]
    agent.run_conversation("thanks!", conversation_history=history)

    systems = [request["messages"][0]["content"] for request in llm.chat_requests()[start:]]
    assert len(systems) == 2 and systems[0] == systems[1]  # the same bytes on every turn
    parts = systems[0]
    assert isinstance(parts, list) and all(part.get("cache_control") for part in parts)
    text = "".join(part["text"] for part in parts)
    assert COMPACT_SKILLS_PROMPT in text and not lists_skills(text)
