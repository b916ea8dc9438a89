"""The blocks the plugin produced: the only source of trust in a block's bytes, and only for the current version.

Each entry is a block's digest with its mode, the skills it names and the
version of each (see ``worker.server``: the fingerprint of the skill's file as
the worker read it). A skill name has one current version here: the one its
latest block was produced for. Entering a block of another version of a skill
drops every block of that skill's earlier versions, so the ledger never holds
a block under a name whose current skill differs (an edited skill, an impostor
that answered to the name and is gone); a block of a version the ledger has
not caught up with yet still covers nothing, since ``live.covered`` compares
versions with the worker's answer.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import NamedTuple

from ...injection import SkillBlock

MAX_BLOCKS = 4096  # distinct blocks remembered: skills x modes x caps the plugin produced


class LedgerRow(NamedTuple):
    """One block the plugin produced: its digest, mode, the skills it names and the version of each."""

    digest: str
    mode: str
    names: tuple[str, ...]
    versions: tuple[str, ...]


def block_versions(block: SkillBlock) -> tuple[str, ...]:
    """The version of each skill ``block`` names; a block produced without them stands for its own bytes only
    (its digest is each one's version)."""
    if len(block.versions) == len(block.names):
        return block.versions
    return (block.digest,) * len(block.names)


class BlockLedger:
    """The digests of the blocks this plugin produced, with their mode, names and versions; bounded, thread-safe.

    Entries come from :func:`~.blocks.issue` (a block just produced) and from
    the state file (blocks earlier processes produced); nothing else adds one.
    """

    def __init__(self, max_blocks: int = MAX_BLOCKS):
        self._blocks: OrderedDict[str, LedgerRow] = OrderedDict()
        self._by_name: dict[str, dict[str, None]] = {}  # skill name -> the digests of its blocks
        self._current: dict[str, str] = {}  # skill name -> the version of its blocks here
        self._lock = threading.Lock()
        self._max = max_blocks

    def grant(self, block: SkillBlock) -> bool:
        """Trust ``block``'s exact bytes, as the current version of the skills it names; True if they were not
        trusted yet."""
        return self.grant_row(LedgerRow(block.digest, block.mode, block.names, block_versions(block)))

    def grant_row(self, row: LedgerRow) -> bool:
        """Enter ``row`` as the newest entry, dropping every block of another version of the skills it names."""
        if len(row.versions) != len(row.names):
            raise ValueError("a block's row names one version per skill")
        with self._lock:
            new = self._blocks.get(row.digest) != row
            for name, version in zip(row.names, row.versions):
                if self._current.get(name, version) != version:
                    self._revoke(name)
                self._current[name] = version
            self._drop(row.digest)
            self._blocks[row.digest] = row
            for name in row.names:
                self._by_name.setdefault(name, {})[row.digest] = None
            while len(self._blocks) > self._max:
                self._drop(next(iter(self._blocks)))
            return new

    def get(self, digest: str) -> LedgerRow | None:
        with self._lock:
            return self._blocks.get(digest)

    def rows(self) -> list[LedgerRow]:
        """Every entry, oldest first."""
        with self._lock:
            return list(self._blocks.values())

    def __len__(self) -> int:
        with self._lock:
            return len(self._blocks)

    def _revoke(self, name: str) -> None:
        for digest in list(self._by_name.get(name, ())):
            self._drop(digest)

    def _drop(self, digest: str) -> None:
        row = self._blocks.pop(digest, None)
        if row is None:
            return
        for name in row.names:
            digests = self._by_name.get(name)
            if digests is not None:
                digests.pop(digest, None)
                if not digests:
                    del self._by_name[name]
                    self._current.pop(name, None)
