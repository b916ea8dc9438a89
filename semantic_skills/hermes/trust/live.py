"""Which of the plugin's skill blocks are in front of the model: read from the history, checked against its record.

``pre_llm_call`` receives the history Hermes is about to send (after any
compression), the current user message included. A block is live only where
the plugin puts blocks, in a user message, read as the model reads it: its
``api_content`` (the exact bytes Hermes sent and replays) when set, else its
``content``. There, a span counts only if its exact bytes are those of a block
the plugin produced (:class:`BlockLedger`, by digest), and it stands for the
skills it names only at the versions it carries (:func:`covered` compares them
with the worker's answer): a tag typed by a user or written by a skill grants
nothing, a forged ``<skill-context name="S">`` never hides skill S, and an
outdated block, or an impostor's that answered to the name, never hides the
current one. A verbatim copy of the current block in a user message does
count, since the model then reads the skill's real, current text there.

A copy in an assistant reply or a tool result (the model quoting it, a web
page, a file, a search over past chats) is text the model or a tool wrote: it
is never live, whatever its bytes. So it neither hides the skill nor is
counted as it: the skill is put in the user message, once, by whichever hook
decides, and the chat records (see chats.py), which only ever hold what
user messages carry, stay true whatever a reply or a tool adds.

Compression, a rotated or resumed session and ``/undo`` need no special case:
whatever Hermes kept, dropped or summarised, the history shows it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from ...gates import FULL, HINT
from ...injection import SkillBlock, block_digest, candidate_blocks
from .ledger import BlockLedger, block_versions

LIVE_ROLE = "user"  # where the plugin puts blocks, and so the only role whose blocks count

Live = dict[tuple[str, str], str]  # (skill name, version) -> the strongest mode of its blocks ("full" beats "hint")


def block_keys(block: SkillBlock) -> tuple[tuple[str, str], ...]:
    """``(name, version)`` of each skill ``block`` carries (see :func:`~.ledger.block_versions`)."""
    return tuple(zip(block.names, block_versions(block)))


def covered(live: Mapping[tuple[str, str], str], block: SkillBlock) -> bool:
    """True if the context already carries what ``block`` would bring, at the same versions.

    A full block of a skill's version covers a hint naming it; a hint never
    covers a full block. A hint is covered when every skill it names is live
    at the version it names.
    """
    keys = block_keys(block)
    if block.mode == FULL:
        return live.get(keys[0]) == FULL
    return all(key in live for key in keys)


def add_block(live: Live, mode: str, keys: Iterable[tuple[str, str]]) -> None:
    """Count a block of ``mode`` carrying ``keys`` (``(name, version)`` each) as live in ``live``."""
    for key in keys:
        if mode == FULL:
            live[key] = FULL
        else:
            live.setdefault(key, HINT)


def blocks_in(text: str, ledger: BlockLedger, live: Live) -> None:
    """Add to ``live`` every block of ``text`` that is one the plugin produced."""
    for span in candidate_blocks(text):
        row = ledger.get(block_digest(span))
        if row is not None:
            add_block(live, row.mode, zip(row.names, row.versions))


def model_text(message) -> str:
    """The text the model reads of one history message ("" for anything else)."""
    if not isinstance(message, Mapping):
        return ""
    sidecar = message.get("api_content")
    if isinstance(sidecar, str) and sidecar:
        return sidecar
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part["text"] for part in content
                         if isinstance(part, Mapping) and isinstance(part.get("text"), str))
    return ""


def current_message_index(history: list, user_message: str) -> int | None:
    """Where this turn's user message stands in ``history``, or None if it is not there.

    The last user message whose content is ``user_message`` or ends with it
    (Hermes may put a note or a timestamp in front); compression may have
    appended a message after it.
    """
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        if isinstance(message, Mapping) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str) and content.endswith(user_message):
                return index
    return None


@dataclass
class LiveContext:
    """The plugin's blocks in the user messages of one turn's context: before this turn's message, and in it."""

    before: Live  # in every user message but this turn's: what the model already has
    current: Live  # real blocks this turn's message carries (pasted or rewritten), for later turns

    @classmethod
    def of(cls, history, user_message: str, ledger: BlockLedger) -> "LiveContext":
        messages = history if isinstance(history, list) else []
        current_index = current_message_index(messages, user_message)
        before: Live = {}
        current: Live = {}
        for index, message in enumerate(messages):
            if isinstance(message, Mapping) and message.get("role") == LIVE_ROLE:
                blocks_in(model_text(message), ledger, current if index == current_index else before)
        return cls(before, current)
