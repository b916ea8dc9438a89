"""What the gateway knows about an incoming message that decides whether it may be routed at all.

Both questions are asked of the gateway itself, on every Hermes generation,
and both fail closed: when Hermes cannot answer, the message passes through
unrouted. The modules holding pending prompts are consulted only if Hermes
has loaded them (nothing can be pending otherwise); the hook never imports them.
"""

from __future__ import annotations

import sys

AUTHORIZATION_METHODS = ("_is_user_authorized_for_source", "_is_user_authorized")  # newest first


def authorized(gateway, source) -> bool:
    """The gateway's own verdict on the sender; False when it has no such check or the check raises."""
    for name in AUTHORIZATION_METHODS:
        check = getattr(gateway, name, None)
        if callable(check):
            try:
                return bool(check(source))
            except Exception:  # noqa: BLE001 - no verdict: treat the sender as refused
                return False
    return False


def awaiting_answer(gateway, session_key: str) -> bool:
    """True while the session waits for the user's next message as an answer (or a secret).

    A secret capture, a clarify question, a slash-command confirmation, a
    blocking tool approval or an ``/update`` prompt: Hermes takes the reply
    before the agent sees it, so it must reach Hermes unchanged, and a secret
    must never reach the routing worker. A probe that fails counts as pending.
    """
    return any(_pending(check, gateway, session_key) for check in _CHECKS)


def _pending(check, gateway, session_key: str) -> bool:
    try:
        return bool(check(gateway, session_key))
    except Exception:  # noqa: BLE001 - cannot tell: do not touch the message
        return True


def _secret_capture(_gateway, session_key: str) -> bool:
    """``tools.secret_capture_gateway`` (Hermes 0.21+): the next message is a secret.

    Asked without the source, so a capture pending for anyone in the session
    holds the message back; a module without either function fails closed.
    """
    module = sys.modules.get("tools.secret_capture_gateway")
    if module is None:
        return False
    get_pending = getattr(module, "get_pending_for_session", None)
    if callable(get_pending):
        return get_pending(session_key) is not None
    has_pending = getattr(module, "has_pending", None)
    if callable(has_pending):
        return bool(has_pending(session_key))
    return True


def _update_prompt(gateway, session_key: str) -> bool:
    """An ``/update`` question: per-session state (0.21+) or the gateway's dict (0.19)."""
    peek = getattr(gateway, "_peek_session_state", None)
    if callable(peek):
        state = peek(session_key)
        if state is not None and getattr(getattr(state, "persistent", None), "update_prompt_pending", False):
            return True
    return bool((getattr(gateway, "_update_prompt_pending", None) or {}).get(session_key))


def _clarify(_gateway, session_key: str) -> bool:
    module = sys.modules.get("tools.clarify_gateway")
    return module is not None and module.get_pending_for_session(session_key, include_choice_prompts=True) is not None


def _slash_confirm(_gateway, session_key: str) -> bool:
    module = sys.modules.get("tools.slash_confirm")
    return bool(module is not None and module.get_pending(session_key))


def _approval(_gateway, session_key: str) -> bool:
    module = sys.modules.get("tools.approval")
    has_blocking = getattr(module, "has_blocking_approval", None)
    return bool(callable(has_blocking) and has_blocking(session_key))


_CHECKS = (_secret_capture, _update_prompt, _clarify, _slash_confirm, _approval)
