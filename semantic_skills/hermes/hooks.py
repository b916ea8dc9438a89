"""The Hermes hooks: put the one skill a message needs in front of the model, exactly once.

``pre_gateway_dispatch`` runs on the gateway's event loop for every incoming
chat message, before authorization. It waits at most ``route_timeout_ms`` for
the routing worker and, when a skill fits and the chat's record is certain the
model does not have it yet (see trust/chats.py), rewrites the message to
``<skill block> + blank line + original text``. When the answer is late, the
worker is warming up or the record cannot tell (after a compression that
rotated the session, ``/resume``, a restart...), the message passes through
unchanged and the gateway turn is filed.

``pre_llm_call`` runs on the agent's thread just before the model is called,
with the history Hermes is about to send. It finishes the filed gateway turns,
and routes the messages of the paths that never pass the gateway hook (CLI,
TUI, cron, API server) itself. Either way it adds the block as context
(Hermes appends it to the user message) only if the history does not already
carry it (see trust/live.py): whatever compression, a resumed session or ``/undo``
did, the skill is in front of the model once, and these paths need no memory
of their own. All its waits together stay within one budget
(:meth:`~.budget.Deadline.for_agent_hook`).

Each routed message is recorded once (see record.py), by the hook that
finished it: the gateway hook for what it decided (a queue put on the loop),
``pre_llm_call`` for the rest.

``post_tool_call`` (a ``skill_manage`` call, every Hermes) and
``on_skill_lifecycle`` (Hermes 0.21+: a skill created, edited, installed or
archived) ask the routing worker to bring the index up to date, so a skill the
agent just wrote can be injected from the next message on; and
``transform_tool_result`` tells the agent, in that call's result, when the
skill it wrote is left out because its name reads as a routed skill's.
"""

from __future__ import annotations

import logging
import time

from .. import decision_log
from ..gates import is_small_talk
from ..injection import SkillBlock, inject
from ..limits import MAX_MESSAGE_CHARS
from ..worker.pending import result_within
from ..worker.protocol import FAILED, TIMEOUT, WAITING_FOR_INDEX, Reply, status_for_state
from . import names_note, record
from .budget import AGENT_ANSWER_TIMEOUT_SECONDS, Deadline
from .host.gateway import authorized, awaiting_answer
from .host.session import current_session_key, peek_session_id, session_key, session_lookup
from .runtime import PluginRuntime
from .trust import blocks
from .trust.live import Live, LiveContext, add_block, block_keys, covered
from .turns import GatewayTurn, TurnState

SKILL_MANAGE = "skill_manage"


def pre_gateway_dispatch(rt: PluginRuntime, event=None, gateway=None, session_store=None, **_) -> dict | None:
    """Rewrite ``event.text`` with the skill it needs, or return None to leave it alone."""
    if event is None or getattr(event, "internal", False):
        return None
    source = getattr(event, "source", None)
    if source is None or not authorized(gateway, source):
        return None  # the gateway will refuse the sender: spend nothing on it
    key = session_key(gateway, source)
    if key is None or awaiting_answer(gateway, key):
        return None  # an answer to a pending prompt, or a secret: it reaches Hermes untouched, unseen
    text = event.text if isinstance(getattr(event, "text", None), str) else ""
    platform = getattr(getattr(source, "platform", None), "value", None) or ""
    turn = GatewayTurn(platform=platform, user_id=str(getattr(source, "user_id", None) or ""),
                       session_key=key, session_id=peek_session_id(session_store, key),
                       text=text[:MAX_MESSAGE_CHARS], state=TurnState.DECIDED,  # all the worker sees; enough to match
                       session_now=session_lookup(session_store, key))
    if _is_command(text):
        rt.turns.record_command(turn)  # most never reach the agent; a prompt Hermes builds from one is matched
        return None
    rewrite = _route_gateway_turn(rt, turn, text) if _wants_routing(text) else None
    rt.turns.record(turn)
    return rewrite


def _route_gateway_turn(rt: PluginRuntime, turn: GatewayTurn, text: str) -> dict | None:
    """Decide ``turn`` within the gateway's budget: the rewrite, or None (and the turn says why).

    A turn decided here is recorded here (a queue put); one left to
    ``pre_llm_call`` (late answer, cold worker, a chat that may carry the
    skill) is recorded there.
    """
    settings = rt.refresh()  # a changed index folder or embedder restarts the worker here
    rt.send_reindex()
    if not rt.client.ready:
        rt.client.start()
        status = rt.client.status
        if status.state in (WAITING_FOR_INDEX, FAILED):  # those are logged by the client
            _record_turn(rt, turn, Reply(status_for_state(status.state), error=status.detail), decision_log.UNANSWERED)
        else:
            rt.log_once(logging.DEBUG, "the routing worker is warming up; until it is ready, messages pass "
                                       "through and get their skill just before the model call")
            turn.state = TurnState.DEFERRED
        return None
    offer = rt.offer(turn.platform)
    turn.decision = rt.client.route_async(text, offer.exclude, settings.floor, offer.inactive_environments)
    timeout = rt.route_timeout()
    reply = result_within(turn.decision, timeout)
    if reply.status == TIMEOUT:
        rt.log_once(logging.DEBUG, f"a routing answer took longer than {timeout * 1000:.0f} ms; "
                                   "late skills are added just before the model call")
        turn.state = TurnState.PENDING
        return None
    block, outcome = _decided_block(rt, reply)
    if block is not None and not rt.trust.claim_rewrite(turn.session_key, turn.session_id, block):
        turn.state = TurnState.PENDING  # the chat may carry it already: pre_llm_call looks at the history
        return None
    _record_turn(rt, turn, reply, outcome)
    if block is None:
        return None
    turn.state, turn.block = TurnState.REWRITTEN, block
    return {"action": "rewrite", "text": inject(text, block.text)}


def pre_llm_call(rt: PluginRuntime, session_id=None, user_message=None, platform=None, sender_id=None,
                 conversation_history=None, turn_id=None, **_) -> dict | None:
    """Return ``{"context": skill block}`` when this turn needs a skill the history does not carry.

    A turn Hermes names (``turn_id``) is answered once: asked about again, the hook gives the same answer,
    and the message is neither routed nor recorded a second time.
    """
    if not isinstance(user_message, str) or not user_message.strip():
        return None  # nothing to route (a multimodal turn's message is a list)
    if isinstance(turn_id, str) and turn_id:
        turn = (str(session_id), turn_id, hash(user_message))  # a turn id reused for another message is another turn
        answered, answer = rt.answered.get(turn)
        if not answered:
            answer = _answer_turn(rt, session_id, user_message, platform, sender_id, conversation_history)
            rt.answered.keep(turn, answer)
        return answer
    return _answer_turn(rt, session_id, user_message, platform, sender_id, conversation_history)


def _answer_turn(rt: PluginRuntime, session_id, user_message: str, platform, sender_id,
                 conversation_history) -> dict | None:
    rt.refresh()
    deadline = rt.hook_deadline()
    platform, sender_id = platform or "", str(sender_id or "")
    turns = rt.turns.take(platform, sender_id, session_id, user_message, current_session_key())
    if turns:
        return _finish_gateway_turns(rt, turns, session_id, user_message, conversation_history, deadline)
    if rt.turns.is_gateway_session(session_id) or is_small_talk(user_message):
        return None  # the gateway hook already decided, or the turn needs none
    started = time.monotonic()
    reply = _route(rt, user_message, platform, deadline)
    block, outcome = _decided_block(rt, reply)
    if block is not None and covered(_live_context(rt, conversation_history, user_message, deadline).before, block):
        block, outcome = None, decision_log.ALREADY_LIVE
    record.decision(rt, path=record.AGENT, platform=platform, reply=reply, outcome=outcome, started=started,
                    text=user_message)
    return {"context": block.text} if block is not None else None


def on_session_reset(rt: PluginRuntime, old_session_id=None, new_session_id=None, **_) -> None:
    """A gateway ``/new`` or ``/reset``: the chat's new session starts with an empty context."""
    rt.trust.session_reset(old_session_id, new_session_id)


def post_tool_call(rt: PluginRuntime, tool_name=None, **_) -> None:
    """After ``skill_manage`` (create, edit, patch, delete, write_file, remove_file): re-index."""
    if tool_name == SKILL_MANAGE:
        rt.reindex()


def transform_tool_result(rt: PluginRuntime, tool_name=None, result=None, **_) -> str | None:
    """After ``skill_manage`` wrote a skill whose name reads as a routed skill's: the result says it is left out
    of routing, and the fix (see names_note.py); None leaves every other result as it is."""
    return names_note.skill_manage_note(rt, result) if tool_name == SKILL_MANAGE else None


def on_skill_lifecycle(rt: PluginRuntime, action=None, **_) -> None:
    """A skill was created, patched, edited, installed, archived or restored: re-index (a use is not a change)."""
    if action != "loaded":
        rt.reindex()


def _finish_gateway_turns(rt: PluginRuntime, turns: list[GatewayTurn], session_id, user_message: str, history,
                          deadline: Deadline) -> dict | None:
    """The context these gateway turns still need, given the history; refreshes their chats' records."""
    live = _live_context(rt, history, user_message, deadline)
    have = dict(live.before)  # what the model will read: the history, then what this turn adds
    context: SkillBlock | None = None
    for turn in turns:
        if turn.state == TurnState.REWRITTEN and turn.block.text in user_message:
            add_block(have, turn.block.mode, block_keys(turn.block))  # the rewrite reached the agent as it was
            continue
        if context is not None:
            _record_unfinished(rt, turn)
            continue
        context = _late_block(rt, turn, have, deadline)
        if context is not None:
            add_block(have, context.mode, block_keys(context))
    for key, mode in live.current.items():  # real blocks pasted into this message: history from the next turn
        add_block(have, mode, (key,))
    for key in {turn.session_key for turn in turns}:
        rt.trust.confirm(key, session_id, have)
    return {"context": context.text} if context is not None else None


def _late_block(rt: PluginRuntime, turn: GatewayTurn, live: Live, deadline: Deadline) -> SkillBlock | None:
    """The block a gateway turn the gateway did not rewrite (or whose rewrite another plugin replaced) still
    needs, given what is ``live``; records the decision of a turn the gateway hook left open."""
    if turn.state == TurnState.REWRITTEN:  # recorded by the gateway hook
        return None if covered(live, turn.block) else turn.block
    if turn.state == TurnState.PENDING:
        started, reply = turn.received, result_within(turn.decision, deadline.for_answer())
    elif turn.state == TurnState.DEFERRED:
        started, reply = time.monotonic(), _route(rt, turn.text, turn.platform, deadline)
    else:
        return None  # decided, and recorded if routed, by the gateway hook
    block, outcome = _decided_block(rt, reply)
    if block is not None and covered(live, block):
        block, outcome = None, decision_log.ALREADY_LIVE
    _record_turn(rt, turn, reply, outcome, path=record.AGENT, started=started)
    return block


def _record_unfinished(rt: PluginRuntime, turn: GatewayTurn) -> None:
    """Record a gateway turn left open when an earlier message of the same model call took its one block."""
    if turn.state in (TurnState.PENDING, TurnState.DEFERRED):
        _record_turn(rt, turn, None, decision_log.UNANSWERED, path=record.AGENT,
                     reason="not decided: an earlier message of the same model call took its one skill block")


def _record_turn(rt: PluginRuntime, turn: GatewayTurn, reply: Reply | None, outcome: str, path: str = record.GATEWAY,
                 started: float | None = None, reason: str | None = None) -> None:
    record.decision(rt, path=path, platform=turn.platform, reply=reply, outcome=outcome,
                    started=turn.received if started is None else started, text=turn.text, reason=reason)


def _live_context(rt: PluginRuntime, history, user_message: str, deadline: Deadline) -> LiveContext:
    rt.trust.wait_loaded(deadline.within(AGENT_ANSWER_TIMEOUT_SECONDS))  # the blocks of earlier processes
    return LiveContext.of(history, user_message, rt.trust.ledger)


def _route(rt: PluginRuntime, text: str, platform: str, deadline: Deadline) -> Reply:
    """Route ``text`` from the agent's thread, waiting for a cold worker as long as the settings and budget allow."""
    settings = rt.settings
    if not rt.client.ready:
        rt.client.wait_ready(deadline.within(settings.warmup_wait_seconds))
    rt.send_reindex()
    offer = rt.offer(platform)  # after the wait: a ready worker has said which skills are for the host to decide
    decision = rt.client.route_async(text, offer.exclude, settings.floor, offer.inactive_environments)
    return result_within(decision, deadline.for_answer())


def _decided_block(rt: PluginRuntime, reply: Reply) -> tuple[SkillBlock | None, str]:
    """The block a worker's reply decides, issued as the plugin's own, with the outcome to record: INJECTED (for
    the caller to change when the block is already live), or, without a block, NOTHING or UNANSWERED (no usable
    answer)."""
    answer = _routed_skill(rt, reply)
    block = blocks.issue(answer, rt.trust, rt.settings.max_skill_chars, rt.block_limit)
    if block is not None:
        return block, decision_log.INJECTED
    return None, decision_log.NOTHING if reply.ok and answer is None else decision_log.UNANSWERED


def _routed_skill(rt: PluginRuntime, reply: Reply) -> dict | None:
    """The answer when it names a skill to inject; a failed request is logged (each distinct error once)."""
    if not reply.ok:
        if reply.error != rt.client.status.detail:  # the worker's own state is logged by the client
            rt.log_once(logging.WARNING, f"routing failed ({reply.status}): {reply.error}")
        return None
    skill = reply.data.get("skill")
    return reply.data if isinstance(skill, str) and skill else None


def _is_command(text: str) -> bool:
    """A slash command (or a path): it reaches Hermes untouched and is never routed."""
    return text.lstrip().startswith("/")


def _wants_routing(text: str) -> bool:
    """False for a message (not a command) that needs no skill; whatever else it holds, text is routed."""
    return bool(text.strip()) and not is_small_talk(text)
