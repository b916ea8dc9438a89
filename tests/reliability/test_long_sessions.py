"""Long sessions: whatever Hermes does to the history, the skill a message needs is in front of the model once.

Real Hermes 0.19 ``AIAgent`` sessions with a ``state.db``, against the fake
chat server on 127.0.0.1, over the SGD skills (the labelled dev set), with
compression forced the way the CLI's ``/compress`` does it
(``agent._compress_context(history, None, force=True)``) and summarised by the
auxiliary model (the fake server too). ``protect_first_n: 0`` and
``protect_last_n: 2`` decide which turns compression keeps, so each test
knows whether the skill's turn was summarised away or kept in the tail. What
is counted is the model request of the last turn: how many of its messages
carry the skill's block.
"""

from __future__ import annotations

import asyncio

import pytest
import yaml

from hermes_testkit import Gateway
from reliability_kit import WORKER_READY_SECONDS, make_home, plugin_loaded
from support import shared_path

SKILL = "restaurants-2-reserverestaurant"
OPENING = f'<skill-context name="{SKILL}" mode="full">'
BOOK = "I want to book a table at a restaurant for four people tonight."
AGAIN = "Book me another restaurant table for Friday."
CHAT = ("What's the weather like in Paris today?", "Thanks! Can you tell me a joke about cats?")
SUMMARY = "Summary: the user chatted about the weather and asked for a joke."


@pytest.fixture(scope="module")
def sgd_home(tmp_path_factory, onnx_embedder):
    """A Hermes home with the SGD skills indexed (with the onnx embedder) and the plugin loaded, its worker warm."""
    from semantic_skills.builder import build_index
    from semantic_skills.skills.discovery import SkillsRoot

    sgd_skills = shared_path("data", "dev", "sgd", "skills")
    home = make_home(tmp_path_factory.mktemp("long-sessions"), {"route_timeout_ms": 10000}, skills=sgd_skills)
    build_index([SkillsRoot(home / "skills")], home / "skills_index", onnx_embedder)
    with plugin_loaded(home) as runtime:
        assert runtime.client.wait_ready(WORKER_READY_SECONDS), runtime.client.status.detail
        yield home


@pytest.fixture()
def home(sgd_home, monkeypatch):
    monkeypatch.setenv("HERMES_HOME", str(sgd_home))
    return sgd_home


@pytest.fixture()
def gateway(home, tmp_path, monkeypatch):
    """A real GatewayRunner (see hermes_testkit.Gateway) whose WhatsApp senders are all authorized."""
    for name in ("GATEWAY_ALLOWED_USERS", "WHATSAPP_ALLOW_ALL_USERS", "GATEWAY_ALLOW_ALL_USERS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("WHATSAPP_ALLOWED_USERS", "*")
    return Gateway(tmp_path / "sessions")


def compression(home, llm, in_place: bool) -> None:
    """Set ``compression`` (in place or rotating) and the summariser (the fake server) in config.yaml."""
    path = home / "config.yaml"
    config = yaml.safe_load(path.read_text())
    config["compression"] = {"in_place": in_place, "protect_first_n": 0, "protect_last_n": 2}
    config["auxiliary"] = {"compression": {"base_url": llm.base_url, "api_key": "sk-test", "model": "fake-model"}}
    path.write_text(yaml.safe_dump(config))


def agent(llm, home, session_id: str, platform: str = "cli", user_id: str | None = None):
    from hermes_state import SessionDB
    from run_agent import AIAgent

    return AIAgent(base_url=llm.base_url, api_key="sk-test", model="fake-model", quiet_mode=True,
                   skip_context_files=True, skip_memory=True, session_id=session_id, platform=platform,
                   user_id=user_id, max_iterations=4, session_db=SessionDB(home / "state.db"))


def blocks_in(request: dict) -> int:
    """How many of a model request's messages carry the skill's block."""
    return sum(str(message.get("content")).count(OPENING) for message in request["messages"])


def turns(llm, session, messages, history=None) -> list:
    for message in messages:
        history = session.run_conversation(message, conversation_history=history)["messages"]
    return history


def compress(llm, session, history) -> list:
    llm.reply_text(SUMMARY)
    compressed, _ = session._compress_context(history, None, force=True)
    assert len(compressed) < len(history)
    return compressed


def last_turn_blocks(llm, session, history) -> int:
    start = len(llm.chat_requests())
    session.run_conversation(AGAIN, conversation_history=history)
    return blocks_in(llm.chat_requests()[start])


def test_in_place_compression_that_summarised_the_skill_away_brings_it_back_once(llm, home):
    compression(home, llm, in_place=True)
    session = agent(llm, home, "in-place")
    start = len(llm.chat_requests())
    history = turns(llm, session, (BOOK, *CHAT))
    assert blocks_in(llm.chat_requests()[start]) == 1  # the first turn got its skill

    history = compress(llm, session, history)

    assert session.session_id == "in-place" and OPENING not in str(history)  # the skill's turn is gone
    assert last_turn_blocks(llm, session, history) == 1


def test_rotating_compression_that_kept_the_skill_does_not_repeat_it(llm, home):
    compression(home, llm, in_place=False)
    session = agent(llm, home, "rotating")
    history = compress(llm, session, turns(llm, session, (*CHAT, BOOK)))

    assert session.session_id != "rotating" and str(history).count(OPENING) == 1  # kept in the tail
    assert last_turn_blocks(llm, session, history) == 1


@pytest.mark.parametrize("compressed", [False, True], ids=["as it was", "after compression"])
def test_a_session_resumed_from_state_db_does_not_repeat_the_skill(llm, home, compressed):
    from hermes_state import SessionDB

    compression(home, llm, in_place=True)
    first = agent(llm, home, f"resumed-{compressed}")
    history = turns(llm, first, (*CHAT, BOOK))
    if compressed:
        compress(llm, first, history)

    resumed = agent(llm, home, first.session_id)  # a new process: nothing but state.db
    stored = SessionDB(home / "state.db").get_messages_as_conversation(first.session_id)
    assert str(stored).count(OPENING) == 1
    assert last_turn_blocks(llm, resumed, stored) == 1


def test_undoing_the_skills_turn_brings_the_skill_back(llm, home):
    from hermes_state import SessionDB

    compression(home, llm, in_place=True)
    first = agent(llm, home, "undone")
    turns(llm, first, (CHAT[0], BOOK, CHAT[1]))
    db = SessionDB(home / "state.db")
    target = db.list_recent_user_messages(first.session_id, limit=10)[1]["id"]  # /undo 2: back to BOOK
    db.rewind_to_message(first.session_id, target)

    stored = db.get_messages_as_conversation(first.session_id)
    assert OPENING not in str(stored)
    assert last_turn_blocks(llm, agent(llm, home, first.session_id), stored) == 1


class GatewayWithAgent:
    """The real ``GatewayRunner._handle_message`` in front of one real agent that keeps the chat's history;
    a rotation moves the chat to the new session id, as Hermes' gateway does after the run."""

    def __init__(self, gateway, llm, home):
        self.gateway, self.llm, self.user = gateway, llm, gateway.new_user()
        self.session = None
        self.history = None
        self.home = home
        gateway.agent_run = self._run

    def _run(self, event, source, session_id):
        if self.session is None:
            self.session = agent(self.llm, self.home, session_id, platform=source.platform.value,
                                 user_id=source.user_id)
        self.history = self.session.run_conversation(event.text, conversation_history=self.history)["messages"]
        return "ok"

    def send(self, text: str) -> None:
        asyncio.run(self.gateway.runner._handle_message(self.gateway.event(text, self.user)))

    def compress(self) -> None:
        self.history = compress(self.llm, self.session, self.history)
        entry = self.gateway.runner.session_store._entries[self.gateway.session_key(self.user)]
        entry.session_id = self.session.session_id


@pytest.mark.parametrize("in_place", [True, False], ids=["in place", "rotating"])
def test_a_gateway_chat_through_real_compression_gets_the_skill_once(llm, home, gateway, in_place):
    compression(home, llm, in_place=in_place)
    chat = GatewayWithAgent(gateway, llm, home)
    for text in ((BOOK, *CHAT) if in_place else (*CHAT, BOOK)):
        chat.send(text)
    assert str(chat.history).count(OPENING) == 1  # the gateway put it in front of the user's text

    chat.compress()
    assert (OPENING in str(chat.history)) != in_place  # summarised away, or kept in the tail
    start = len(llm.chat_requests())
    chat.send(AGAIN)

    assert blocks_in(llm.chat_requests()[start]) == 1
