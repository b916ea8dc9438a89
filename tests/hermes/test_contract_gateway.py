"""Contract tests: the gateway hook against Hermes 0.21's gateway shapes (upstream main, not installable here).

A fake gateway carries only what upstream's inbound pipeline declares
(``_is_user_authorized_for_source(source)``, ``_session_key_for_source(source)``,
``_peek_session_state(key).persistent.update_prompt_pending``), and a fake
``tools.secret_capture_gateway`` module the functions upstream declares. Each
test has a control in which the same message is routed, so it can fail.
"""

from __future__ import annotations

import itertools
import logging
import sys
import types

import pytest

from semantic_skills.hermes import hooks

DOCKER = "My postgres container keeps restarting and the web service can't connect to it"
SECRET = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c docker compose postgres keeps restarting"
_keys = itertools.count()


class MainGateway:
    """The methods of upstream main's ``GatewayRunner`` that the hook may use, and nothing else."""

    def __init__(self, authorized: bool = True, update_pending: bool = False):
        self.authorized = authorized
        self.update_pending = update_pending
        self.key = f"agent:main:telegram:dm:{next(_keys)}"

    def _is_user_authorized_for_source(self, source) -> bool:  # gateway inbound mixin, one positional argument
        return self.authorized

    def _session_key_for_source(self, source) -> str:
        return self.key

    def _peek_session_state(self, key):  # upstream: SessionState or None
        return types.SimpleNamespace(persistent=types.SimpleNamespace(update_prompt_pending=self.update_pending))


def secret_capture_module() -> types.ModuleType:
    """``tools/secret_capture_gateway.py`` (upstream main): ``register(secret_id, session_key, env_var, prompt)``,
    ``get_pending_for_session(session_key, source=None)`` and ``has_pending(session_key)``."""
    module = types.ModuleType("tools.secret_capture_gateway")
    entries: dict[str, list] = {}

    def register(secret_id, session_key, env_var, prompt):
        entries.setdefault(session_key, []).append(types.SimpleNamespace(secret_id=secret_id, env_var=env_var))

    def get_pending_for_session(session_key, source=None):
        return (entries.get(session_key) or [None])[0]

    def has_pending(session_key):
        return get_pending_for_session(session_key) is not None

    module.register, module.get_pending_for_session, module.has_pending = register, get_pending_for_session, has_pending
    return module


def event(text: str):
    source = types.SimpleNamespace(platform=types.SimpleNamespace(value="telegram"), user_id="42", chat_id="42")
    return types.SimpleNamespace(text=text, source=source, internal=False)


def texts(requests: list[tuple]) -> list[str]:
    return [text for _op, text in requests]


def dispatch(runtime, gateway, text: str):
    return hooks.pre_gateway_dispatch(runtime, event=event(text), gateway=gateway, session_store=None)


def test_the_0_21_authorization_method_is_asked(runtime, routing_requests):
    """upstream gateway inbound mixin: ``self._is_user_authorized_for_source(source)``; 0.19's
    ``_is_user_authorized`` is gone there."""
    assert dispatch(runtime, MainGateway(), DOCKER)["action"] == "rewrite"  # the control
    assert dispatch(runtime, MainGateway(authorized=False), DOCKER) is None
    assert texts(routing_requests) == [DOCKER]


def test_the_newest_verdict_wins_and_a_failing_check_refuses(runtime, routing_requests):
    both = MainGateway(authorized=False)
    both._is_user_authorized = lambda source: True  # an older method left beside it must not overrule it
    assert dispatch(runtime, both, DOCKER) is None

    broken = MainGateway()
    broken._is_user_authorized_for_source = lambda source: 1 / 0
    assert dispatch(runtime, broken, DOCKER) is None

    neither = MainGateway()
    neither._is_user_authorized_for_source = None
    assert dispatch(runtime, neither, DOCKER) is None
    assert texts(routing_requests) == []


def test_an_update_answer_in_the_session_state_is_left_alone(runtime, routing_requests):
    """upstream ``GatewayInboundMixin._hm_update_prompt_reply``: ``_peek_session_state(key).persistent
    .update_prompt_pending`` replaces 0.19's ``gateway._update_prompt_pending`` dict."""
    assert dispatch(runtime, MainGateway(update_pending=True), DOCKER) is None
    assert dispatch(runtime, MainGateway(update_pending=False), DOCKER)["action"] == "rewrite"
    assert texts(routing_requests) == [DOCKER]


def test_a_message_awaited_as_a_secret_is_never_routed_embedded_or_logged(runtime, routing_requests, monkeypatch,
                                                                          caplog):
    """upstream tools/secret_capture_gateway.py: a pending capture makes the next typed message the secret."""
    module = secret_capture_module()
    monkeypatch.setitem(sys.modules, "tools.secret_capture_gateway", module)
    gateway = MainGateway()
    assert dispatch(runtime, MainGateway(), SECRET)["action"] == "rewrite"  # the control: nothing pending
    assert runtime.turns.take("telegram", "42", None, SECRET)  # ... and its turn is filed for pre_llm_call

    module.register("secret-1", gateway.key, "OPENAI_API_KEY", "Paste your OpenAI key")
    with caplog.at_level(logging.DEBUG):
        assert dispatch(runtime, gateway, SECRET) is None

    assert texts(routing_requests) == [SECRET]  # the control's request only
    assert SECRET not in caplog.text and "sk-live" not in caplog.text
    assert not runtime.turns.take("telegram", "42", None, SECRET)  # not even filed for pre_llm_call


@pytest.mark.parametrize("present", [("has_pending",), ()], ids=["has_pending only", "neither function"])
def test_a_secret_capture_module_of_another_shape_still_holds_messages_back(runtime, routing_requests, monkeypatch,
                                                                            present):
    module = secret_capture_module()
    gateway = MainGateway()
    module.register("secret-1", gateway.key, "OPENAI_API_KEY", "Paste your key")
    for name in ("get_pending_for_session", "has_pending"):
        if name not in present:
            delattr(module, name)
    monkeypatch.setitem(sys.modules, "tools.secret_capture_gateway", module)

    assert dispatch(runtime, gateway, SECRET) is None
    assert texts(routing_requests) == []


# --------------------------------------------------------------------------- profiles in one gateway

KITE = "One spar of my stunt kite snapped mid-flight: how do I splice in a new carbon rod?"
KITE_SKILL = """\
---
name: kite-spar-repair
description: Repair a stunt kite - splice a broken carbon spar, replace fittings, re-tension the sail.
---
# Kite spar repair

Cut the broken rod square, slide a 10 cm carbon sleeve over both ends and epoxy it.
""" + "Check every fitting and the bridle knots before the next flight.\n" * 40
PDF = "Can you turn this scanned contract PDF into markdown with the tables intact?"


def test_a_multiplexing_gateway_routes_each_profile_with_its_own_settings_index_and_record(gateway, runtime,
                                                                                           tmp_path):
    """Upstream main's gateway/run_adapters.py runs ``_handle_message`` (which fires ``pre_gateway_dispatch``)
    inside ``_async_profile_runtime_scope(profile_home)``, both for a secondary profile's own adapter
    (``_make_profile_message_handler``) and for a message the default adapter routes to a profile
    (``_make_default_profile_message_handler``); the scope sets ``hermes_constants.set_hermes_home_override``,
    which 0.19 has too, and ``hermes_cli/plugins.py:get_plugin_manager`` keeps one plugin manager per home.
    Here the real 0.19 ``GatewayRunner._handle_message`` runs under that override for a second home."""
    import shutil

    import hermes_constants

    from semantic_skills.hermes.runtime import get_runtime

    from hermes_testkit import EXAMPLE_SKILLS, ONNX, WORKER_READY_SECONDS, build_index, write_settings
    from support import write_skill

    work = tmp_path / "profiles" / "work"
    shutil.copytree(EXAMPLE_SKILLS, work / "skills")
    write_skill(work / "skills", "outdoors/kite-spar-repair", KITE_SKILL)
    write_settings(work, route_timeout_ms=10000, max_skill_chars=500, embedder=ONNX)
    with (work / "config.yaml").open("a") as config:
        config.write("skills:\n  disabled: [docker-compose-debug]\n")
    build_index(work)
    user = gateway.new_user()

    def in_work(text: str):
        token = hermes_constants.set_hermes_home_override(str(work))
        try:
            return gateway.send(text, user)
        finally:
            hermes_constants.reset_hermes_home_override(token)

    try:
        assert get_runtime(work).client.wait_ready(WORKER_READY_SECONDS), get_runtime(work).client.status.detail
        default_docker, default_kite, default_pdf = (gateway.send(text, user) for text in (DOCKER, KITE, PDF))
        work_docker, work_kite, work_pdf = in_work(DOCKER), in_work(KITE), in_work(PDF)
        work_record = get_runtime(work).trust
    finally:
        get_runtime(work).close()

    delivered = lambda turn: turn.text + turn.context  # noqa: E731
    assert '<skill-context name="docker-compose-debug"' in delivered(default_docker)
    assert 'name="docker-compose-debug"' not in delivered(work_docker)  # disabled in the work profile only
    assert '<skill-context name="kite-spar-repair"' in delivered(work_kite)  # only the work index has it
    assert "kite-spar-repair" not in delivered(default_kite)
    assert len(delivered(work_kite)) < len(KITE_SKILL)  # the work profile's max_skill_chars: 500
    # the same chat got pdf-to-markdown in each profile: each home keeps its own "already injected" record
    assert '<skill-context name="pdf-to-markdown"' in delivered(default_pdf)
    assert '<skill-context name="pdf-to-markdown"' in delivered(work_pdf)
    assert work_record is not runtime.trust and runtime.home != work
