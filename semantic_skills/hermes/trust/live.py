"""Which of the plugin's skill blocks are in front of the model: read from the history, checked against its record.

``pre_llm_call`` receives the history Hermes is about to send (after any
compression), the current user message included. What the model reads of a
message is its ``api_content`` (the exact bytes Hermes sent and replays) when
set, else its ``content``. A block in that text counts as live only if its
exact bytes are those of a block the plugin produced (:class:`BlockLedger`,
by digest): a tag typed by a user or written by a skill grants nothing, and a
forged ``<skill-context name="S">`` never hides skill S. A verbatim copy of a
real block does count once it is in the history, since the model then reads
the skill's real text.

Compression, a rotated or resumed session and ``/undo`` need no special case:
whatever Hermes kept, dropped or summarised, the history shows it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from ...gates import FULL, HINT
from ...injection import SkillBlock, block_digest, candidate_blocks
from .ledger import BlockLedger

LIVE_ROLES = ("user", "assistant")  # the roles whose api_content Hermes sends in place of content

Live = dict[str, str]  # skill name -> the strongest mode of its blocks in the context ("full" beats "hint")


def covered(live: Mapping[str, str], block: SkillBlock) -> bool:
    """True if the context already carries what ``block`` would bring.

    A full block of a skill covers a hint naming it; a hint never covers a
    full block. A hint is covered when every skill it names is live.
    """
    if block.mode == FULL:
        return live.get(block.names[0]) == FULL
    return all(name in live for name in block.names)


def add_block(live: Live, mode: str, names: Iterable[str]) -> None:
    """Count a block of ``mode`` naming ``names`` as live in ``live``."""
    if mode == FULL:
        for name in names:
            live[name] = FULL
    else:
        for name in names:
            live.setdefault(name, HINT)


def blocks_in(text: str, ledger: BlockLedger, live: Live) -> None:
    """Add to ``live`` every block of ``text`` that is one the plugin produced."""
    for span in candidate_blocks(text):
        found = ledger.get(block_digest(span))
        if found is not None:
            add_block(live, *found)


def model_text(message) -> str:
    """The text the model reads of one history message ("" for anything else)."""
    if not isinstance(message, Mapping):
        return ""
    sidecar = message.get("api_content")
    if isinstance(sidecar, str) and sidecar and message.get("role") in LIVE_ROLES:
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
    """The plugin's blocks in the context of one turn: before this turn's message, and in it."""

    before: Live  # in every message but this turn's: what the model already has
    current: Live  # real blocks this turn's message carries (pasted or rewritten), for later turns

    @classmethod
    def of(cls, history, user_message: str, ledger: BlockLedger) -> "LiveContext":
        messages = history if isinstance(history, list) else []
        current_index = current_message_index(messages, user_message)
        before: Live = {}
        current: Live = {}
        for index, message in enumerate(messages):
            blocks_in(model_text(message), ledger, current if index == current_index else before)
        return cls(before, current)

