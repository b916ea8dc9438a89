"""The one place a block is produced for a worker's answer, and so the one place trust is granted."""

from __future__ import annotations

from dataclasses import replace

from ...gates import FULL, HINT
from ...injection import SkillBlock, hint_block, skill_block
from .state_file import is_version
from .store import TrustStore


def issue(answer: dict | None, store: TrustStore, max_skill_chars: int,
          block_limit: int | None) -> SkillBlock | None:
    """The block for a worker's ``answer`` (None when it names no skill), entered in ``store``'s ledger as the
    plugin's own (and saved with the store's next write).

    The same bytes on either path: a full block is capped at
    ``max_skill_chars`` and at ``block_limit`` (what Hermes passes on as hook
    context unchanged), so it is never replaced by Hermes' preview. The
    worker sends the body escaped (see worker.server), so making the block
    only cuts and frames it: no tag search on the gateway's loop. An answer
    without a mode (an older worker) is a full one.
    """
    if answer is None:
        return None
    mode = answer.get("mode") or FULL
    if mode == HINT:
        named = _named(answer)
        block = hint_block([(name, description) for name, description, _version in named])
        versions = tuple(version for _name, _description, version in named[:len(block.names)])
    elif mode == FULL and isinstance(answer.get("body"), str):
        block = skill_block(answer["skill"], answer["body"], max_skill_chars, int(answer.get("omitted") or 0),
                            block_limit, escaped=answer.get("escaped") is True)
        versions = (_version(answer.get("version")),)
    else:
        return None
    if all(versions):  # else (an older worker) the block stands for its own bytes only: see ledger.block_versions
        block = replace(block, versions=versions)
    if store.ledger.grant(block):
        store.changed()
    return block


def _named(answer: dict) -> list[tuple[str, str, str | None]]:
    """The ``(name, description, version)`` of each skill a hint answer names; at least its skill."""
    named = [(entry["name"], entry.get("description") if isinstance(entry.get("description"), str) else "",
              _version(entry.get("version")))
             for entry in answer.get("named") or () if isinstance(entry, dict)
             and isinstance(entry.get("name"), str) and entry["name"]]
    return named or [(answer["skill"], "", _version(answer.get("version")))]


def _version(value) -> str | None:
    """A skill's version as the worker sends it (see worker.protocol), or None when it sent none usable."""
    return value if is_version(value) else None
