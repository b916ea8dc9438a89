"""Nothing that takes more than a couple of seconds runs silently: a note on a terminal while it waits."""

from __future__ import annotations

import sys
import threading
from contextlib import contextmanager
from typing import Iterator

import click

QUIET_SECONDS = 2.0  # what runs longer than this is announced


@contextmanager
def announced(text: str, after: float = QUIET_SECONDS) -> Iterator[None]:
    """Say ``text`` on stderr if the block runs longer than ``after`` seconds; only on a terminal, so a pipe
    or a JSON reader gets nothing but the answer."""
    if not sys.stderr.isatty():
        yield
        return
    timer = threading.Timer(after, click.echo, args=(f"{text}...",), kwargs={"err": True})
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
