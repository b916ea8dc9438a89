"""A state file is never reached through a link (#33).

Anyone who can write the state folder can put a link where the plugin writes
or reads. Each case runs through real Hermes 0.19: its gateway's
``_handle_message``, with the plugin loaded by Hermes' own plugin manager.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest

from hermes_testkit import Gateway
from reliability_kit import WORKER_READY_SECONDS, make_home, plugin_loaded

DOCKER = "My postgres container keeps restarting and the web service can't connect to it"
OPENING = '<skill-context name="docker-compose-debug"'


def plugin_home(tmp_path: Path, index_dir: Path, **settings) -> Path:
    return make_home(tmp_path, {"index_dir": str(index_dir), "route_timeout_ms": 10000, **settings})


# --------------------------------------------------------------------------- state files: never through a link

CARD = "My postgres container keeps restarting; the card on the account is 4111 1111 1111 1111"
LINKED = {"the decision record, a symbolic link": ("decisions.jsonl", "a symbolic link, not a regular file"),
          "the decision record, a hard link": ("decisions.jsonl", "a hard link (the same file has another name too), "
                                                                  "not a file of its own"),
          "its previous generation, a symbolic link": ("decisions.1.jsonl", "a symbolic link, not a regular file"),
          "the dedupe file, a symbolic link": ("dedupe.json", "a symbolic link, not a regular file")}


@pytest.mark.parametrize("case", sorted(LINKED))
def test_a_state_file_that_is_a_link_is_set_aside_and_its_target_never_touched(tmp_path, onnx_examples_index,
                                                                               caplog, monkeypatch, case):
    """#33.6: with ``record_message_text`` on, ``decisions.jsonl`` as a link made the message text (a card number)
    go to a 0644 file outside the state folder. A link in the state folder is never followed, for reading or
    writing: the plugin moves it aside to ``NAME.damaged`` with one warning naming it, writes its file afresh
    inside the state folder (0600), and the file the link led to keeps its bytes and its mode."""
    name, what = LINKED[case]
    home = plugin_home(tmp_path, onnx_examples_index, record_message_text=True)
    folder = home / "semantic-skills"
    folder.mkdir()
    outside = tmp_path / "elsewhere" / "notes.txt"
    outside.parent.mkdir()
    outside.write_bytes(b'{"version": 3, "clean": true, "blocks": [], "chats": []}\n')
    outside.chmod(0o644)
    before = outside.read_bytes()
    if "symbolic" in what:
        (folder / name).symlink_to(outside)
    else:
        os.link(outside, folder / name)
    monkeypatch.setenv("WHATSAPP_ALLOWED_USERS", "*")

    with caplog.at_level(logging.WARNING, logger="semantic_skills"), plugin_loaded(home) as runtime:
        assert runtime.client.wait_ready(WORKER_READY_SECONDS), runtime.client.status.detail
        assert runtime.trust.wait_loaded(30)
        assert Gateway(tmp_path / "sessions").send(CARD, "15550001@s.whatsapp.net").text.startswith(OPENING)
        runtime.decisions.flush()

    assert outside.read_bytes() == before and stat.S_IMODE(outside.stat().st_mode) == 0o644
    said = [r.getMessage() for r in caplog.records if str(folder / name) in r.getMessage()]
    assert len(said) == 1 and what in said[0] and f"{name}.damaged" in said[0], said
    record = folder / "decisions.jsonl"
    info = record.lstat()
    assert stat.S_ISREG(info.st_mode) and info.st_nlink == 1 and stat.S_IMODE(info.st_mode) == 0o600
    assert b"4111 1111 1111 1111" in record.read_bytes()
