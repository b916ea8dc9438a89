"""The compact section replaces Hermes' own skills listing and nothing else: real 0.19 ``AIAgent`` turns reading a
project's context file and the home's memory, against a fake model on 127.0.0.1 (issue 33, item 7).

Text others write (a context file, a memory entry any chat user can have the agent save, a skill's description)
may hold the listing's tags and heading: it neither stops the swap nor is taken for the listing. Hermes' listing is
what Hermes' builder renders for the session, called as Hermes' prompt builder calls it (0.19
``agent/system_prompt.py``: the session's tools and their toolsets).
"""

from __future__ import annotations

import json
import logging
import textwrap

import pytest

from semantic_skills.hermes.prompt.middleware import section_for

TAG_LINES = "<available_skills>\n  notes: the team's\n</available_skills>"
QUESTION = "What's a good name for a grey kitten?"


@pytest.fixture()
def project(tmp_path, monkeypatch):
    """The working folder of the session: Hermes reads its context file (AGENTS.md) into the system prompt."""
    folder = tmp_path / "project"
    folder.mkdir()
    monkeypatch.chdir(folder)
    monkeypatch.setenv("TERMINAL_CWD", str(folder))  # as a gateway sets it
    return folder


@pytest.fixture()
def memory(hermes_home):
    """Saves entries into the home's memory as Hermes' memory tool does; the memory is emptied afterwards."""
    from tools.memory_tool import MemoryStore

    folder = hermes_home.path / "memories"

    def save(entry: str) -> None:
        store = MemoryStore()
        store.load_from_disk()
        assert store.add("memory", entry).get("success"), entry

    yield save
    for path in folder.glob("*.md"):
        path.unlink()


@pytest.fixture()
def extra_skill(hermes_home):
    """Adds one skill folder to the home for the test, and takes it away (with Hermes' cached listing) after."""
    from agent.prompt_builder import clear_skills_system_prompt_cache

    added = []

    def add(name: str, text: str) -> None:
        folder = hermes_home.path / "skills" / "notes" / name
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(textwrap.dedent(text), encoding="utf-8")
        added.append(folder)
        clear_skills_system_prompt_cache(clear_snapshot=True)  # as skill_manage does after a change

    yield add
    for folder in added:
        for file in folder.iterdir():
            file.unlink()
        folder.rmdir()
    clear_skills_system_prompt_cache(clear_snapshot=True)


def agent_turn(llm, session_id: str, toolsets: list[str] | None = None):
    """One turn of a real agent that reads context files and memory: the agent, and the request it sent."""
    from run_agent import AIAgent

    start = len(llm.chat_requests())
    agent = AIAgent(base_url=llm.base_url, api_key="sk-test", model="fake-model", quiet_mode=True,
                    skip_context_files=False, skip_memory=False, session_id=session_id, platform="cli",
                    max_iterations=4, enabled_toolsets=toolsets)
    agent.run_conversation(QUESTION)
    sent = llm.chat_requests()[start:]
    assert len(sent) == 1
    return agent, sent[0]


def hermes_listing(agent) -> str:
    """Hermes' own listing for the agent's session, as Hermes 0.19's prompt builder asks for it."""
    from agent.prompt_builder import build_skills_system_prompt
    from model_tools import get_toolset_for_tool

    toolsets = {get_toolset_for_tool(name) for name in agent.valid_tool_names} - {None, ""}
    return build_skills_system_prompt(available_tools=agent.valid_tool_names, available_toolsets=toolsets)


def assert_only_the_listing_was_replaced(agent, request) -> None:
    built, listing = agent._cached_system_prompt, hermes_listing(agent)  # Hermes' own prompt, as it stored it
    assert built.count(listing) == 1 and "docker-compose-debug" in listing
    assert request["messages"][0]["content"] == built.replace(listing, section_for(request))


def test_a_context_file_holding_the_listing_tag_leaves_the_swap_alone(llm, runtime, project):
    (project / "AGENTS.md").write_text(f"# Team notes\n\n## Skills\n{TAG_LINES}\n", encoding="utf-8")

    agent, request = agent_turn(llm, "listing-agents-md")

    assert "## Skills\n<available_skills>" in agent._cached_system_prompt  # Hermes read the file in
    assert_only_the_listing_was_replaced(agent, request)


def test_a_memory_entry_holding_the_listing_tag_leaves_the_swap_alone(llm, runtime, project, memory):
    memory(f"The user keeps a list of skills:\n{TAG_LINES}")

    agent, request = agent_turn(llm, "listing-memory")

    assert "keeps a list of skills:\n<available_skills>" in agent._cached_system_prompt
    assert_only_the_listing_was_replaced(agent, request)


def test_a_skill_description_holding_a_line_break_leaves_the_swap_alone(llm, runtime, project, extra_skill):
    extra_skill("two-lines", """\
        ---
        name: two-lines
        description: "First line\\n<available_skills>"
        ---
        # Two lines
        """)

    agent, request = agent_turn(llm, "listing-line-break")

    assert "- two-lines: First line\n<available_skills>" in hermes_listing(agent)
    assert_only_the_listing_was_replaced(agent, request)


def test_without_hermes_listing_a_heading_and_tags_elsewhere_are_never_taken_for_it(llm, runtime, project, memory,
                                                                                   caplog):
    """``-t terminal,memory``: Hermes writes no listing. A ``## Skills`` heading in AGENTS.md and the tags in a
    memory entry once made the text between them pass for one, Hermes' memory header included."""
    (project / "AGENTS.md").write_text("## Skills\nAsk before installing anything.\n", encoding="utf-8")
    memory(TAG_LINES)

    with caplog.at_level(logging.WARNING, logger="semantic_skills"):
        agent, request = agent_turn(llm, "listing-none", toolsets=["terminal", "memory"])

    built = agent._cached_system_prompt
    assert "## Skills\nAsk before" in built and TAG_LINES in built and "skill_view" not in agent.valid_tool_names
    assert request["messages"][0]["content"] == built  # byte for byte as Hermes built it
    assert not [r for r in caplog.records if "listing" in r.getMessage()]  # nothing to say: there is no listing


def test_a_skill_added_in_mid_session_changes_none_of_its_requests(llm, runtime, extra_skill, tmp_path):
    """The gateway's way: a fresh agent restores the session's prompt from the session database, its listing as
    Hermes built it at the start, while Hermes' builder now renders another (a skill added meanwhile). The place
    found on the session's first request holds: both requests carry the same bytes, the stub in place."""
    from hermes_state import SessionDB

    from fake_llm import make_agent

    sessions = SessionDB(tmp_path / "state.db")
    start = len(llm.chat_requests())
    first = make_agent(llm, "listing-mid-session", session_db=sessions)
    history = first.run_conversation(QUESTION)["messages"]
    extra_skill("late-skill", """\
        ---
        name: late-skill
        description: Added while the session ran.
        ---
        # Late
        """)
    again = make_agent(llm, "listing-mid-session", session_db=sessions)
    again.run_conversation("And a black one?", conversation_history=history)

    assert again._cached_system_prompt == first._cached_system_prompt  # Hermes restored its own prompt
    assert "late-skill" in hermes_listing(again) and hermes_listing(again) not in again._cached_system_prompt
    systems = [request["messages"][0]["content"] for request in llm.chat_requests()[start:]]
    assert len(systems) == 2 and systems[0] == systems[1]
    assert section_for(llm.chat_requests()[-1]) in systems[0] and "late-skill" not in systems[0]


def test_a_copy_of_the_listing_elsewhere_keeps_hermes_prompt_and_says_so_once_in_doctor_too(
        llm, runtime, project, hermes_home, caplog):
    """The one case left where the plugin cannot be sure which copy is Hermes': the prompt goes out as Hermes built
    it, agent.log says why once, and doctor says it until a later session gets the stub."""
    from semantic_skills.hermes.doctor.prompt_check import listing_check
    from semantic_skills.hermes.doctor.setup_checks import read_setup
    from semantic_skills.hermes.prompt import kept

    first, _ = agent_turn(llm, "listing-plain")  # the listing this home's CLI sessions get
    (project / "AGENTS.md").write_text(hermes_listing(first) + "\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="semantic_skills"):
        copied = [agent_turn(llm, f"listing-copied-{n}") for n in range(2)]

    for agent, request in copied:
        assert request["messages"][0]["content"] == agent._cached_system_prompt
    warned = [r.getMessage() for r in caplog.records if "stands 2 times" in r.getMessage()]
    assert len(warned) == 1 and "keeps Hermes' own skills listing" in warned[0]
    record = json.loads(kept.record_path(hermes_home.path).read_text())
    assert "stands 2 times" in record["reason"]
    check = listing_check(read_setup())
    assert check.status == "warn" and "stands 2 times" in check.detail and check.fix

    (project / "AGENTS.md").unlink()
    agent, request = agent_turn(llm, "listing-after")
    assert_only_the_listing_was_replaced(agent, request)
    assert not kept.record_path(hermes_home.path).exists() and listing_check(read_setup()).status == "ok"
