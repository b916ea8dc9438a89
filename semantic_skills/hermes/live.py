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

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Iterable, Mapping

from ..injection import FULL, HINT, SkillBlock, block_digest, candidate_blocks

MAX_BLOCKS = 4096  # distinct blocks remembered: skills x modes x versions the plugin produced
LIVE_ROLES = ("user", "assistant")  # the roles whose api_content Hermes sends in place of content

Live = dict[str, str]  # skill name -> the strongest mode of its blocks in the context ("full" beats "hint")


class BlockLedger:
    """The digests of the blocks this plugin produced, with their mode and names; bounded, thread-safe."""

    def __init__(self, max_blocks: int = MAX_BLOCKS):
        self._blocks: OrderedDict[str, tuple[str, tuple[str, ...]]] = OrderedDict()
        self._lock = threading.Lock()
        self._max = max_blocks

    def add(self, block: SkillBlock) -> bool:
        """Remember ``block``; True if it was not known yet."""
        return self.add_digest(block.digest, block.mode, block.names)

    def add_digest(self, digest: str, mode: str, names: tuple[str, ...]) -> bool:
        with self._lock:
            new = digest not in self._blocks
            self._blocks[digest] = (mode, names)
            self._blocks.move_to_end(digest)
            while len(self._blocks) > self._max:
                self._blocks.popitem(last=False)
            return new

    def get(self, digest: str) -> tuple[str, tuple[str, ...]] | None:
        with self._lock:
            return self._blocks.get(digest)

    def rows(self) -> list[list]:
        """Every entry, oldest first, as ``[digest, mode, [names]]``."""
        with self._lock:
            return [[digest, mode, list(names)] for digest, (mode, names) in self._blocks.items()]

    def __len__(self) -> int:
        with self._lock:
            return len(self._blocks)


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

