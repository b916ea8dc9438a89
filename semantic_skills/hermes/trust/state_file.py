"""The state file of one Hermes home (``semantic-skills/dedupe.json``): the block ledger and the chat records.

Its bytes are checked entry by entry on reading: anything this module would
not write raises :class:`DamagedFile`, and the reader never holds more than
:data:`MAX_FILE_BYTES`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from ...files import FileTooLarge, NotRegularFile, read_regular_file
from ...gates import MODES
from .chats import MAX_KEY_CHARS, MAX_LIVE_PER_CHAT, ChatRecord
from .ledger import LedgerRow

FORMAT_VERSION = 3  # 3: blocks and live skills carry the skill's version
OLD_FORMATS = (1, 2)  # written by earlier releases: replaced without a word
MAX_VERSION_CHARS = 64
MAX_FILE_BYTES = 16 * 1024 * 1024


class DamagedFile(ValueError):
    """The state file is not what this module writes."""


class OldFormat(Exception):
    """A state file an earlier release wrote: nothing to warn about, it is simply replaced."""


@dataclass
class Snapshot:
    """What a state file holds, checked."""

    clean: bool = False
    chats: list[tuple[str, ChatRecord]] = field(default_factory=list)
    blocks: list[LedgerRow] = field(default_factory=list)


def read_state(path: Path, ttl_seconds: float, now: float) -> Snapshot:
    """The file's content (chats idle over ``ttl_seconds`` left out); raises :class:`OldFormat`,
    :class:`DamagedFile` (over :data:`MAX_FILE_BYTES`, not a regular file, a link, or not what this module writes)
    or ``OSError`` when it cannot be read."""
    try:
        raw = read_regular_file(path, MAX_FILE_BYTES, follow=False)
    except (NotRegularFile, FileTooLarge) as exc:
        raise DamagedFile(str(exc)) from None
    return parse_state(raw, ttl_seconds, now)


def parse_state(raw: bytes, ttl_seconds: float, now: float) -> Snapshot:
    """A state file's content, checked entry by entry; raises on anything this module would not write."""
    data = json.loads(raw)
    if not isinstance(data, dict):
        raise DamagedFile("not a JSON object")
    if data.get("version") != FORMAT_VERSION:
        if data.get("version") in OLD_FORMATS:
            raise OldFormat()
        raise DamagedFile(f"version {str(data.get('version'))[:20]!r}")
    clean, chats, blocks = data.get("clean"), data.get("chats"), data.get("blocks")
    if not isinstance(clean, bool) or not isinstance(chats, list) or not isinstance(blocks, list):
        raise DamagedFile("clean, chats or blocks missing")
    snapshot = Snapshot(clean, [], [_block_row(row) for row in blocks])
    for row in chats:
        key, record = _chat_row(row)
        if now - record.seen <= ttl_seconds:
            snapshot.chats.append((key, record))
    return snapshot


def _chat_row(row) -> tuple[str, ChatRecord]:
    if not (isinstance(row, list) and len(row) == 4):
        raise DamagedFile("a chat row is not [key, session id, seen, live]")
    key, session_id, seen, live = row
    if not (isinstance(key, str) and 0 < len(key) <= MAX_KEY_CHARS):
        raise DamagedFile("a chat key is not a short string")
    if session_id is not None and not (isinstance(session_id, str) and 0 < len(session_id) <= MAX_KEY_CHARS):
        raise DamagedFile("a session id is not a short string")
    if isinstance(seen, bool) or not isinstance(seen, (int, float)) or not math.isfinite(float(seen)):
        raise DamagedFile("a chat's time is not a finite number")
    if not (isinstance(live, list) and len(live) <= MAX_LIVE_PER_CHAT
            and all(isinstance(entry, list) and len(entry) == 3 and _is_name(entry[0]) and is_version(entry[1])
                    and entry[2] in MODES for entry in live)):
        raise DamagedFile("a chat's live skills are not a short list of [name, version, mode]")
    return key, ChatRecord(session_id, {(name, version): mode for name, version, mode in live}, float(seen))


def _block_row(row) -> LedgerRow:
    if not (isinstance(row, list) and len(row) == 4 and isinstance(row[0], str) and len(row[0]) == 32
            and row[1] in MODES and isinstance(row[2], list) and 1 <= len(row[2]) <= 2
            and all(_is_name(name) for name in row[2])
            and isinstance(row[3], list) and len(row[3]) == len(row[2]) and all(map(is_version, row[3]))):
        raise DamagedFile("a block row is not [digest, mode, names, versions]")
    return LedgerRow(row[0], row[1], tuple(row[2]), tuple(row[3]))


def _is_name(value) -> bool:
    return isinstance(value, str) and bool(value)


def is_version(value) -> bool:
    """A skill's version as the worker sends it (see worker.protocol) and the file keeps it."""
    return isinstance(value, str) and 0 < len(value) <= MAX_VERSION_CHARS


def state_payload(clean: bool, chats: list[tuple[str, ChatRecord]], blocks: list[LedgerRow]) -> bytes:
    """The file's bytes: within :data:`MAX_FILE_BYTES`, leaving out the chats idle longest if need be."""
    head = json.dumps({"version": FORMAT_VERSION, "clean": clean,
                       "blocks": [[row.digest, row.mode, list(row.names), list(row.versions)] for row in blocks]})
    room = MAX_FILE_BYTES - len(head.encode("utf-8")) - 64
    rows: list[str] = []
    for key, record in reversed(chats):  # newest first
        live = [[name, version, mode] for (name, version), mode in record.live.items()]
        row = json.dumps([key, record.session_id, record.seen, live])
        room -= len(row.encode("utf-8")) + 1
        if room < 0:
            break
        rows.append(row)
    return (head[:-1] + ', "chats": [' + ", ".join(reversed(rows)) + "]}").encode("utf-8")
