"""The decision record on its own: entries, its size bound, damage, threads and processes, a full disk."""

from __future__ import annotations

import logging
import os
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from semantic_skills.decision_log import (
    ALREADY_LIVE,
    INJECTED,
    MAX_LINE_BYTES,
    MAX_TEXT_CHARS,
    NOTHING,
    QUEUE_LIMIT,
    UNANSWERED,
    DecisionEntry,
    DecisionLog,
    previous_generation,
    read_record,
)

from support import REPO, fill_disk, small_disk

NOW = 1_790_000_000.0


def entry(n: int = 0, outcome: str = INJECTED, **fields) -> DecisionEntry:
    values = dict(time=NOW + n, path="gateway", platform="telegram", outcome=outcome,
                  skill="pdf-to-markdown" if outcome in (INJECTED, ALREADY_LIVE) else None,
                  mode="full" if outcome in (INJECTED, ALREADY_LIVE) else None, top="pdf-to-markdown",
                  similarity=0.61, gap=0.44, margin=0.35, floor=0.38, min_gap=0.27, full_gap=0.31, full_margin=0.20,
                  latency_ms=9.5, reason=f"entry {n}")
    values.update(fields)
    return DecisionEntry(**values)


def write(path: Path, entries, max_bytes: int = 4_000_000) -> DecisionLog:
    log = DecisionLog(path, max_bytes)
    for item in entries:
        log.append(item)
    log.close()
    return log


def reasons(path: Path, max_bytes: int = 4_000_000) -> list[str]:
    return [e.reason for e in read_record(path, max_bytes).entries]


# --------------------------------------------------------------------------- entries


def test_an_entry_reads_back_as_written_with_its_texts_capped_and_cleaned(tmp_path):
    path = tmp_path / "decisions.jsonl"
    full = entry(1, named=("pdf-to-markdown",), text="convert this\nscanned PDF " + "x" * 5000)
    hostile = entry(2, outcome=NOTHING, platform="tele\x1b[31mgram\n", top="evil\x00name", similarity=None,
                    gap=None, reason="r" * 2000, text="\ud800 unpaired")
    write(path, [full, hostile])

    first, second = read_record(path, 4_000_000).entries
    assert first == DecisionEntry(**{**full.__dict__, "text": full.text[:MAX_TEXT_CHARS]})
    assert second.platform == "tele[31mgram" and second.top == "evilname" and len(second.reason) == 500
    assert second.similarity is None and second.text == "? unpaired"


def test_only_a_message_text_given_is_written(tmp_path):
    path = tmp_path / "decisions.jsonl"
    write(path, [entry(1)])
    assert b'"text"' not in path.read_bytes()


# --------------------------------------------------------------------------- the size bound


def test_the_record_keeps_within_its_bound_as_two_generations_and_keeps_the_newest(tmp_path):
    path = tmp_path / "state" / "decisions.jsonl"
    log = DecisionLog(path, 100_000)
    for n in range(5000):
        log.append(entry(n))
        if n % 100 == 0:
            log.flush()
    log.close()

    sizes = path.stat().st_size, previous_generation(path).stat().st_size
    assert max(sizes) <= 50_000 and sum(sizes) <= 100_000
    kept = reasons(path, 100_000)
    assert kept[-1] == "entry 4999" and kept == [f"entry {n}" for n in range(5000 - len(kept), 5000)]
    assert len(kept) >= 50_000 // len(entry(4999).to_line())  # at least a whole generation's worth
    assert path.stat().st_mode & 0o777 == 0o600  # message text, when kept, is the owner's alone


def test_appending_never_waits_for_a_stuck_writer_and_the_queue_stays_bounded(tmp_path):
    log = DecisionLog(tmp_path / "decisions.jsonl", 4_000_000)
    with log._write_lock:  # the writer is stuck on a slow disk
        done = threading.Event()

        def append_many():
            for n in range(3 * QUEUE_LIMIT):
                log.append(entry(n))
            done.set()

        threading.Thread(target=append_many, daemon=True).start()
        assert done.wait(30)
        assert len(log._pending) == QUEUE_LIMIT
    log.close()
    assert reasons(log.path)[-1] == f"entry {3 * QUEUE_LIMIT - 1}"


# --------------------------------------------------------------------------- damage


DAMAGE = {
    "deep nesting on one line": b"[" * 200_000 + b"\n",
    "deep nesting under the line cap": b'{"outcome": "injected", "named": ' + b"[" * 60_000 + b"\n",
    "200,000 lines of [": b"[\n" * 200_000,
    "binary garbage": bytes(range(256)) * 4000,
    "a 400-digit number": (b'{"time": "2026-11-20T10:00:00+00:00", "path": "agent", "platform": "", '
                           b'"outcome": "nothing", "similarity": ' + b"9" * 400 + b', "reason": ""}\n'),
    "a 400-digit time": b'{"time": ' + b"1" * 400 + b', "path": "agent", "platform": "", "outcome": "nothing"}\n',
    "NaN and infinity": (b'{"time": "2026-11-20T10:00:00+00:00", "path": "agent", "platform": "", '
                         b'"outcome": "nothing", "similarity": NaN, "gap": Infinity, "reason": ""}\n'),
    "wrong types": (b'{"time": "2026-11-20T10:00:00", "path": ["agent"], "platform": 7, "outcome": "nothing"}\n'
                    b'{"time": "not a time", "path": "agent", "platform": "", "outcome": "nothing"}\n'
                    b'["a", "list"]\n"a string"\n{"outcome": "exploded"}\n'),
    "a torn line": b'{"time": "2026-11-20T10:00:00+00:00", "path": "age',
}


@pytest.mark.parametrize("damage", DAMAGE.values(), ids=DAMAGE.keys())
def test_damage_is_skipped_line_by_line_and_the_writer_carries_on_after_it(tmp_path, damage):
    path = tmp_path / "decisions.jsonl"
    path.write_bytes(entry(1).to_line() + damage)

    write(path, [entry(2)])
    found = read_record(path, 4_000_000)

    assert [e.reason for e in found.entries] == ["entry 1", "entry 2"]
    assert found.damaged_lines >= 1


def test_a_line_longer_than_the_cap_is_skipped_without_parsing(tmp_path):
    path = tmp_path / "decisions.jsonl"
    padded = b"{" + b" " * (3 * MAX_LINE_BYTES) + entry(0).to_line()[1:]  # a valid entry, but too long
    path.write_bytes(padded + entry(1).to_line())

    found = read_record(path, 4_000_000)

    assert [e.reason for e in found.entries] == ["entry 1"] and found.damaged_lines == 1


def test_a_60_mb_record_is_read_from_its_end_and_the_writer_moves_it_aside(tmp_path):
    path = tmp_path / "decisions.jsonl"
    line = entry(0).to_line()
    with open(path, "wb") as fh:
        for _ in range(60_000_000 // (len(line) * 10_000) + 1):
            fh.write(line * 10_000)
    size = path.stat().st_size

    found = read_record(path, 4_000_000)
    assert found.cut_files == [path] and found.damaged_lines == 0
    assert len(found.entries) <= 4_000_000 // len(line)

    write(path, [entry(1)])  # the writer rotates the oversized file out of the way
    assert previous_generation(path).stat().st_size == size and reasons(path, 4_000_000)[-1] == "entry 1"
    write(path, [entry(n) for n in range(2, 30_000)], max_bytes=1_000_000)
    assert path.stat().st_size + previous_generation(path).stat().st_size <= 1_000_000  # gone at the next turn


def test_an_unwritable_record_is_one_warning_and_never_an_error(tmp_path, caplog):
    blocked = tmp_path / "state"
    blocked.write_text("a file where the state folder should be")
    fifo = tmp_path / "fifo-state" / "decisions.jsonl"
    fifo.parent.mkdir()
    os.mkfifo(fifo)

    with caplog.at_level(logging.WARNING, logger="semantic_skills"):
        for path in (blocked / "decisions.jsonl", fifo):
            log = DecisionLog(path, 4_000_000)
            for n in range(3):
                log.append(entry(n))
                log.flush()
            log.close()  # a FIFO would block a writer that opened it blindly

    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 2 and "cannot write the decision record" in warnings[0]
    assert str(blocked / "decisions.jsonl") in warnings[0]
    assert warnings[1] == (f"semantic-skills: the decision record {fifo} is a FIFO (named pipe), not a regular file; "
                           "moved it to decisions.jsonl.damaged; decisions are recorded afresh")  # #27.4
    assert len(read_record(fifo, 4_000_000).entries) == 3 and stat.S_IMODE(fifo.stat().st_mode) == 0o600
    aside = fifo.with_name("decisions.jsonl.damaged")
    assert read_record(aside, 4_000_000).unreadable == [f"{aside}: a FIFO (named pipe), not a regular file"]


# --------------------------------------------------------------------------- threads, processes, a full disk


def test_threads_appending_at_once_leave_every_entry_whole(tmp_path):
    path = tmp_path / "decisions.jsonl"
    log = DecisionLog(path, 4_000_000)

    def append(thread: int):
        for n in range(200):
            log.append(entry(n, reason=f"{thread}-{n}"))

    threads = [threading.Thread(target=append, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    log.close()

    found = read_record(path, 4_000_000)
    assert found.damaged_lines == 0
    assert sorted(e.reason for e in found.entries) == sorted(f"{t}-{n}" for t in range(8) for n in range(200))


WRITER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from semantic_skills.decision_log import DecisionEntry, DecisionLog
    log = DecisionLog(Path(sys.argv[1]), 100_000)
    for n in range(3000):
        log.append(DecisionEntry(1.79e9 + n, "agent", "cli", "nothing", reason=f"{sys.argv[2]}-{n}" + "x" * 80))
        if n % 50 == 0:
            log.flush()
    log.close()
""")


def test_processes_sharing_a_record_keep_its_lines_whole_and_its_bound(tmp_path):
    path = tmp_path / "decisions.jsonl"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), name], env=env) for name in "ab"]
    assert [w.wait(120) for w in writers] == [0, 0]

    found = read_record(path, 100_000)
    assert found.damaged_lines == 0 and found.entries
    assert path.stat().st_size + previous_generation(path).stat().st_size <= 100_000 + 2 * 50_000


def test_a_full_disk_is_one_warning_and_recording_resumes_once_there_is_room(tmp_path, caplog):
    with small_disk(tmp_path / "tiny", "256k") as disk:
        filler = fill_disk(disk)
        path = disk / "state" / "decisions.jsonl"
        log = DecisionLog(path, 4_000_000)

        with caplog.at_level(logging.WARNING, logger="semantic_skills"):
            for n in range(5):
                log.append(entry(n))
                log.flush()
        filler.unlink()
        log.append(entry(99))
        log.close()

        warnings = [r.getMessage() for r in caplog.records]
        assert len(warnings) == 1 and "No space left on device" in warnings[0] and str(path) in warnings[0]
        assert reasons(path)[-1] == "entry 99"


def test_the_writer_thread_writes_without_a_flush(tmp_path):
    path = tmp_path / "decisions.jsonl"
    log = DecisionLog(path, 4_000_000)
    log.append(entry(1, outcome=UNANSWERED, skill=None, mode=None))
    deadline = time.monotonic() + 30
    while not (path.exists() and reasons(path)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert reasons(path) == ["entry 1"]
    log.close()
