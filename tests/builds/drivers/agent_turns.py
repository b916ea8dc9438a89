"""Run with a Hermes build's own Python: a gateway message and two agent turns around a compression, through the
plugin as Hermes loads it from ``$HERMES_HOME/plugins``; prints one JSON line of what it saw.

``python agent_turns.py SESSIONS_DIR``. The model is a fake chat server on 127.0.0.1
(tests/hermes/fake_llm.py) whose requests the report carries. What differs between builds (the agent's
constructor, its compression method) is detected by what a build has, never by its version.
"""

import inspect
import json
import os
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[2]

DOCKER = "My postgres container keeps restarting and the web service can't connect to it"
PDF = "Can you turn this scanned contract PDF into markdown with the tables intact?"
FILLER = "lorem ipsum dolor sit amet " * 40


def load_plugin() -> dict:
    """Hermes' plugin manager loads the home's plugins; whether ours loaded, where its package came from, and
    whether Hermes' skills-listing builder is still Hermes' own function (the plugin wraps nothing)."""
    import agent.prompt_builder as prompt_builder
    from hermes_cli.plugins import get_plugin_manager

    builder = prompt_builder.build_skills_system_prompt
    manager = get_plugin_manager()
    manager.discover_and_load(force=True)
    sys.path[:0] = [str(TESTS / "hermes"), str(TESTS)]  # only now: the plugin imports semantic_skills itself
    import semantic_skills
    from semantic_skills.hermes.runtime import current_runtime

    loaded = manager._plugins.get("semantic-skills")
    return {"loaded": bool(loaded and loaded.enabled and loaded.error is None),
            "ready": current_runtime().client.wait_ready(240),
            "package": str(Path(semantic_skills.__file__).parent.parent),
            "builder_is_hermes_own": prompt_builder.build_skills_system_prompt is builder
            and builder.__module__ == "agent.prompt_builder" and not hasattr(builder, "__wrapped__")}


def make_agent(base_url: str, session_id: str, **options):
    """A real AIAgent on the fake model (``options`` over the defaults), given the options this build's constructor
    accepts."""
    from run_agent import AIAgent

    wanted = dict(base_url=base_url, api_key="sk-test", model="fake-model", quiet_mode=True, skip_context_files=True,
                  skip_memory=True, skip_background_review=True, session_id=session_id, max_iterations=4) | options
    accepted = inspect.signature(AIAgent.__init__).parameters
    return AIAgent(**{name: value for name, value in wanted.items() if name in accepted})


def gateway_message(base_url: str, sessions: Path) -> None:
    """One message through the real ``GatewayRunner._handle_message``, answered by a real agent."""
    from hermes_testkit import Gateway

    gateway = Gateway(sessions)
    gateway.agent_run = lambda event, source, session_id: make_agent(
        base_url, session_id, platform=source.platform.value, user_id=source.user_id).run_conversation(event.text)
    gateway.send(DOCKER, gateway.new_user())


def turns_around_a_compression(base_url: str) -> dict:
    """A turn, a long history compressed the way ``/compress`` does it (``force``), and a turn after it."""
    from hermes_state import SessionDB

    home = Path(os.environ["HERMES_HOME"])
    agent = make_agent(base_url, "compressed-session", platform="cli", session_db=SessionDB(home / "state.db"))
    history = list(agent.run_conversation(DOCKER)["messages"])
    for n in range(12):
        history += [{"role": "user", "content": f"question {n}: {FILLER}"},
                    {"role": "assistant", "content": f"answer {n}: {FILLER}"}]
    compress = getattr(agent, "_compress_context", None)
    if compress is None or "force" not in inspect.signature(compress).parameters:
        return {"compression": "this Hermes' agent has no forced compression"}
    compressed, _ = compress(history, None, approx_tokens=50_000, force=True)
    agent.run_conversation(PDF, conversation_history=compressed)
    return {"compression": "done", "messages_before": len(history), "messages_after": len(compressed)}


def use_model(base_url: str) -> None:
    """The home's model is the fake one, so Hermes' side calls (the compression's summary) reach it too."""
    import yaml

    path = Path(os.environ["HERMES_HOME"]) / "config.yaml"
    config = yaml.safe_load(path.read_text()) if path.exists() else {}
    config["model"] = {"default": "fake-model", "provider": "custom", "base_url": base_url, "api_key": "sk-test"}
    path.write_text(yaml.safe_dump(config, sort_keys=False))


def main() -> None:
    sessions = Path(sys.argv[1])
    report = load_plugin()
    from fake_llm import FakeChatServer

    with FakeChatServer() as llm:
        use_model(llm.base_url)
        gateway_message(llm.base_url, sessions)
        report["gateway_requests"], start = llm.requests[:], len(llm.requests)
        report |= turns_around_a_compression(llm.base_url)
        report["compression_requests"] = llm.requests[start:]
    print(json.dumps(report))


if __name__ == "__main__":
    main()
