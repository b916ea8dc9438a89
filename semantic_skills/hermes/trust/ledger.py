"""The blocks the plugin produced: the only source of trust in a block's bytes."""

from __future__ import annotations

import threading
from collections import OrderedDict

from ...injection import SkillBlock

MAX_BLOCKS = 4096  # distinct blocks remembered: skills x modes x versions the plugin produced

LedgerRow = tuple[str, str, tuple[str, ...]]  # digest, mode, the skill names the block carries


class BlockLedger:
    """The digests of the blocks this plugin produced, with their mode and names; bounded, thread-safe.

    Entries come from :func:`~.blocks.issue` (a block just produced) and from
    the state file (blocks earlier processes produced); nothing else adds one.
    """

    def __init__(self, max_blocks: int = MAX_BLOCKS):
        self._blocks: OrderedDict[str, tuple[str, tuple[str, ...]]] = OrderedDict()
        self._lock = threading.Lock()
        self._max = max_blocks

    def grant(self, block: SkillBlock) -> bool:
        """Trust ``block``'s exact bytes from now on; True if they were not trusted yet."""
        return self.grant_row(block.digest, block.mode, block.names)

    def grant_row(self, digest: str, mode: str, names: tuple[str, ...]) -> bool:
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

    def rows(self) -> list[LedgerRow]:
        """Every entry, oldest first."""
        with self._lock:
            return [(digest, mode, names) for digest, (mode, names) in self._blocks.items()]

    def __len__(self) -> int:
        with self._lock:
            return len(self._blocks)
