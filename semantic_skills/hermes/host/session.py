"""What the gateway and the agent know about the session a message belongs to."""

from __future__ import annotations

import os
import sys
from typing import Callable


def session_key(gateway, source) -> str | None:
    """The gateway's session key for ``source``; None when the gateway cannot say."""
    try:
        key = gateway._session_key_for_source(source)
    except Exception:  # noqa: BLE001 - no key, no pending-state check: do not route
        return None
    return key if isinstance(key, str) else None


def peek_session_id(session_store, key: str) -> str | None:
    """The session id the gateway holds for ``key`` now, without creating one; None for a brand-new chat (and
    when the store cannot say)."""
    peek = getattr(session_store, "peek_session_id", None)
    try:
        value = peek(key) if callable(peek) else None
    except Exception:  # noqa: BLE001 - the store cannot say: no session known
        return None
    return value if isinstance(value, str) and value else None


def session_lookup(session_store, key: str) -> Callable[[], str | None] | None:
    """How to ask the gateway again, later and from any thread, which session ``key`` has then (the store's
    ``peek_session_id`` holds its own lock); None when there is no store to ask."""
    if not callable(getattr(session_store, "peek_session_id", None)):
        return None
    return lambda: peek_session_id(session_store, key)


def current_platform() -> str:
    """The chat platform of the running session, as Hermes' prompt builder finds it (``""`` when unknown)."""
    platform = os.environ.get("HERMES_PLATFORM") or os.environ.get("HERMES_SESSION_PLATFORM")
    if platform:
        return platform
    value = _session_env("HERMES_SESSION_PLATFORM")
    return str(value) if value else ""


def current_session_key() -> str | None:
    """The gateway's session key of the chat this agent run serves, from Hermes' session context (the gateway
    sets it for each run); None on other paths, or where this Hermes has no such context."""
    key = _session_env("HERMES_SESSION_KEY")
    return key if isinstance(key, str) and key else None


def _session_env(name: str):
    """``name`` in Hermes' session context of this run; None where there is none, or it cannot say."""
    get_session_env = getattr(sys.modules.get("gateway.session_context"), "get_session_env", None)
    try:
        return get_session_env(name) if get_session_env else None
    except Exception:  # noqa: BLE001
        return None
