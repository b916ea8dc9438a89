"""The Hermes hooks: inject the one skill a message needs, exactly once.

``pre_gateway_dispatch`` runs on the gateway's event loop for every incoming
chat message, before authorization. It waits at most ``route_timeout_ms`` for
the routing worker and, when a skill fits and the session has not had it,
rewrites the message to ``<skill block> + original text``. When the answer
is late (or the worker is still warming up) the message passes through
unchanged and the gateway turn is filed; ``pre_llm_call``, which runs on the
agent's thread just before the model is called, then waits for the answer and
adds the skill as context (Hermes appends it to the user message).

``pre_llm_call`` also serves the paths that never pass the gateway hook (CLI,
TUI, cron, API server): it routes the user message itself.

``post_tool_call`` (a ``skill_manage`` call, every Hermes) and
``on_skill_lifecycle`` (Hermes 0.21+: a skill created, edited, installed or
archived) ask the routing worker to bring the index up to date, so a skill the
agent just wrote can be injected from the next message on.
"""

from __future__ import annotations

import logging

from ..gates import is_small_talk
from ..injection import carries_block, inject, is_injected, skill_block
from ..limits import MAX_MESSAGE_CHARS
from ..worker.pending import result_within
from ..worker.protocol import FAILED, TIMEOUT, WAITING_FOR_INDEX, Reply
from .dedupe import agent_session, gateway_session
from .gateway_state import authorized, awaiting_answer
from .runtime import AGENT_ANSWER_TIMEOUT_SECONDS, PluginRuntime
from .turns import DECIDED, DEFERRED, INJECTED, PENDING, GatewayTurn

SKILL_MANAGE = "skill_manage"


def pre_gateway_dispatch(rt: PluginRuntime, event=None, gateway=None, session_store=None, **_) -> dict | None:
    """Rewrite ``event.text`` with the skill it needs, or return None to leave it alone."""
    if event is None or getattr(event, "internal", False):
        return None
    source = getattr(event, "source", None)
    if source is None or not authorized(gateway, source):
        return None  # the gateway will refuse the sender: spend nothing on it
    session_key = _session_key(gateway, source)
    if session_key is None or awaiting_answer(gateway, session_key):
        return None  # an answer to a pending prompt, or a secret: it reaches Hermes untouched, unseen
    text = event.text if isinstance(getattr(event, "text", None), str) else ""
    platform = getattr(getattr(source, "platform", None), "value", None) or ""
    turn = GatewayTurn(platform=platform, user_id=str(getattr(source, "user_id", None) or ""),
                       session_key=session_key, session_id=_peek_session_id(session_store, session_key),
                       text=text[:MAX_MESSAGE_CHARS], outcome=DECIDED)  # all the worker sees; enough to match
    rewrite = _route_gateway_turn(rt, turn, text) if _wants_routing(text, rt.seal) else None
    rt.turns.record(turn)
    return rewrite


def _route_gateway_turn(rt: PluginRuntime, turn: GatewayTurn, text: str) -> dict | None:
    """Decide ``turn`` within the gateway's budget: the rewrite, or None (and the turn says why)."""
    settings = rt.settings()  # a changed index folder or embedder restarts the worker here
    rt.send_reindex()
    if not rt.client.ready:
        rt.client.start()
        if rt.client.status.state not in (WAITING_FOR_INDEX, FAILED):  # those are logged by the client
            rt.log_once(logging.INFO, "the routing worker is warming up; until it is ready, messages pass "
                                      "through and get their skill just before the model call")
            turn.outcome = DEFERRED
        return None
    offer = rt.offer(turn.platform)
    decision = rt.client.route_async(text, offer.exclude, settings.floor, offer.inactive_environments)
    reply = result_within(decision, rt.route_timeout())
    if reply.status == TIMEOUT:
        rt.log_once(logging.INFO, f"a routing answer took longer than {rt.route_timeout() * 1000:.0f} ms; "
                                  "late skills are added just before the model call")
        turn.outcome, turn.decision = PENDING, decision
        return None
    answer = _routed_skill(rt, reply)
    if answer and rt.injected.claim(gateway_session(turn.session_key, turn.session_id), answer["skill"]):
        turn.outcome, turn.skill = INJECTED, answer["skill"]
        turn.block = _block(rt, answer)
        return {"action": "rewrite", "text": inject(text, turn.block)}
    return None


def pre_llm_call(rt: PluginRuntime, session_id=None, user_message=None, platform=None, sender_id=None,
                 **_) -> dict | None:
    """Return ``{"context": skill block}`` when this turn still needs its skill."""
    if not isinstance(user_message, str) or not user_message.strip():
        return None
    platform, sender_id = platform or "", str(sender_id or "")
    turns = rt.turns.take(platform, sender_id, session_id, user_message)
    if turns:
        return _finish_gateway_turns(rt, turns, session_id, user_message)
    if (rt.turns.is_gateway_session(session_id) or carries_block(user_message, rt.seal)
            or is_small_talk(user_message)):
        return None  # the gateway hook already decided, or the turn carries our block, or needs none
    answer = _routed_skill(rt, _route(rt, user_message, platform))
    return _context(rt, answer, agent_session(session_id or ""))


def on_session_reset(rt: PluginRuntime, session_id=None, old_session_id=None, new_session_id=None, **_) -> None:
    """Forget what the reset sessions received."""
    rt.injected.forget_session_ids({str(s) for s in (session_id, old_session_id, new_session_id) if s})


def post_tool_call(rt: PluginRuntime, tool_name=None, **_) -> None:
    """After ``skill_manage`` (create, edit, patch, delete, write_file, remove_file): re-index."""
    if tool_name == SKILL_MANAGE:
        rt.reindex()


def on_skill_lifecycle(rt: PluginRuntime, action=None, **_) -> None:
    """A skill was created, patched, edited, installed, archived or restored: re-index (a use is not a change)."""
    if action != "loaded":
        rt.reindex()


def _finish_gateway_turns(rt: PluginRuntime, turns: list[GatewayTurn], session_id, user_message: str):
    for turn in turns:
        if turn.skill:  # file it under the session the agent really runs (new or auto-reset sessions)
            rt.injected.claim(gateway_session(turn.session_key, session_id), turn.skill)
        if turn.session_id is None:  # the chat's first session now has an id: drop the stand-in key
            rt.injected.forget(gateway_session(turn.session_key, None))
    injected = [turn for turn in turns if turn.outcome == INJECTED]
    if injected:
        if carries_block(user_message, rt.seal):
            return None
        return {"context": injected[0].block}  # another plugin's rewrite replaced ours
    for turn in turns:
        context = _late_context(rt, turn, gateway_session(turn.session_key, session_id))
        if context:
            return context
    return None


def _late_context(rt: PluginRuntime, turn: GatewayTurn, session: str) -> dict | None:
    """The context for a gateway turn whose answer came late, or that was not routed while the worker warmed up."""
    if turn.outcome == PENDING:
        answer = _routed_skill(rt, result_within(turn.decision, rt.settings().warmup_wait_seconds))
        return _context(rt, answer, session)
    if turn.outcome == DEFERRED:
        return _context(rt, _routed_skill(rt, _route(rt, turn.text, turn.platform)), session)
    return None


def _route(rt: PluginRuntime, text: str, platform: str) -> Reply:
    """Route ``text`` from the agent's thread, waiting for a cold worker as long as the settings allow."""
    settings = rt.settings()
    rt.send_reindex()
    offer = rt.offer(platform)
    return rt.client.route(text, offer.exclude, AGENT_ANSWER_TIMEOUT_SECONDS, floor=settings.floor,
                           wait_ready=settings.warmup_wait_seconds, inactive_environments=offer.inactive_environments)


def _context(rt: PluginRuntime, answer: dict | None, session: str) -> dict | None:
    if answer and rt.injected.claim(session, answer["skill"]):
        return {"context": _block(rt, answer)}
    return None


def _routed_skill(rt: PluginRuntime, reply: Reply) -> dict | None:
    """The answer when it names a skill to inject; a failed request is logged (each distinct error once)."""
    if not reply.ok:
        if reply.error != rt.client.status.detail:  # the worker's own state is logged by the client
            rt.log_once(logging.WARNING, f"routing failed ({reply.status}): {reply.error}")
        return None
    skill, body = reply.data.get("skill"), reply.data.get("body")
    return reply.data if isinstance(skill, str) and skill and isinstance(body, str) else None


def _block(rt: PluginRuntime, answer: dict) -> str:
    """The sealed block for a worker's answer: the same bytes on the gateway and the ``pre_llm_call`` paths.

    Capped at ``max_skill_chars`` and at what Hermes passes on as hook context
    unchanged, so the block is never replaced by Hermes' preview.
    """
    return skill_block(answer["skill"], float(answer.get("score") or 0.0), answer["body"], rt.seal,
                       rt.settings().max_skill_chars, int(answer.get("omitted") or 0), rt.block_limit())


def _wants_routing(text: str, seal: str) -> bool:
    """False for what must reach Hermes untouched, already carries our block, or needs no skill."""
    stripped = text.lstrip()
    return (bool(stripped) and not stripped.startswith("/") and not is_injected(stripped, seal)
            and not is_small_talk(text))


def _session_key(gateway, source) -> str | None:
    """The gateway's session key for ``source``; None when the gateway cannot say."""
    try:
        key = gateway._session_key_for_source(source)
    except Exception:  # noqa: BLE001 - no key, no pending-state check: do not route
        return None
    return key if isinstance(key, str) else None


def _peek_session_id(session_store, session_key: str) -> str | None:
    peek = getattr(session_store, "peek_session_id", None)
    value = peek(session_key) if callable(peek) else None
    return value if isinstance(value, str) and value else None
