"""The one place a block is produced for a worker's answer, and so the one place trust is granted."""

from __future__ import annotations

from ...gates import FULL, HINT
from ...injection import SkillBlock, hint_block, skill_block
from .store import TrustStore


def issue(answer: dict | None, store: TrustStore, max_skill_chars: int,
          block_limit: int | None) -> SkillBlock | None:
    """The block for a worker's ``answer`` (None when it names no skill), entered in ``store``'s ledger as the
    plugin's own (and saved with the store's next write).

    The same bytes on either path: a full block is capped at
    ``max_skill_chars`` and at ``block_limit`` (what Hermes passes on as hook
    context unchanged), so it is never replaced by Hermes' preview. An answer
    without a mode (an older worker) is a full one.
    """
    if answer is None:
        return None
    mode = answer.get("mode") or FULL
    if mode == HINT:
        block = hint_block(_named(answer))
    elif mode == FULL and isinstance(answer.get("body"), str):
        block = skill_block(answer["skill"], answer["body"], max_skill_chars, int(answer.get("omitted") or 0),
                            block_limit)
    else:
        return None
    if store.ledger.grant(block):
        store.changed()
    return block


def _named(answer: dict) -> list[tuple[str, str]]:
    """The ``(name, description)`` pairs a hint answer names; at least its skill."""
    named = [(entry["name"], entry.get("description") if isinstance(entry.get("description"), str) else "")
             for entry in answer.get("named") or () if isinstance(entry, dict)
             and isinstance(entry.get("name"), str) and entry["name"]]
    return named or [(answer["skill"], "")]
