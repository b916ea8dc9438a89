"""Nothing that takes more than a couple of seconds runs silently: on a terminal, a note while a model loads, with
the seconds it has taken counted on its line, and a bar with counts and the time left while texts are embedded or
messages routed; nothing on a pipe."""

from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager
from typing import Iterator

import click

from ..glyphs import visible

QUIET_SECONDS = 2.0  # what runs longer than this is announced
TICK_SECONDS = 1.0  # how often a note of a wait counts the seconds on its line


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


class TerminalBar:
    """A bar on stderr: "Embedding  [####------]  312/1044  00:00:18  41 s", done so far, the total, the time left
    (from the pace so far, once anything is done) and the seconds taken, these redrawn each :data:`TICK_SECONDS`, so
    that a slow batch (the first, or a multilingual model's) is not a silent wait."""

    def __init__(self, total: int, label: str = "Embedding"):
        self._started, self._lock, self._done = time.monotonic(), threading.Lock(), threading.Event()
        self._bar = click.progressbar(length=total, label=label, file=sys.stderr, show_pos=True, show_eta=False,
                                      item_show_func=self._timing)
        self._bar.__enter__()
        self._ticker = threading.Thread(target=self._tick, args=(TICK_SECONDS,), name="semantic-skills-bar",
                                        daemon=True)
        self._ticker.start()

    def _timing(self, _item) -> str:
        taken, done, total = time.monotonic() - self._started, self._bar.pos, self._bar.length
        if not 0 < done < total:
            return f"{taken:.0f} s"
        minutes, seconds = divmod(round(taken / done * (total - done)), 60)
        return f"{minutes // 60:02}:{minutes % 60:02}:{seconds:02}  {taken:.0f} s"

    def _tick(self, every: float) -> None:
        while not self._done.wait(every):
            with self._lock:
                self._bar.render_progress()

    def advance(self, count: int) -> None:
        with self._lock:
            self._bar.update(count)

    def close(self) -> None:
        self._done.set()
        self._ticker.join()
        self._bar.__exit__(None, None, None)


@contextmanager
def counted(text: str, every: float = TICK_SECONDS, err: bool = True) -> Iterator[None]:
    """Say ``text`` on stderr (stdout without ``err``) at once, then, each ``every`` seconds until the block ends,
    the seconds it has taken so far at the end of that line ("Loading the embedder (...)... 3 s"), so that a long
    wait is never silent."""
    note = visible(text)
    click.echo(note, err=err, nl=False)
    started, done = time.monotonic(), threading.Event()

    def count() -> None:
        while not done.wait(every):
            click.echo(f"\r{note} {time.monotonic() - started:.0f} s", err=err, nl=False)

    counter = threading.Thread(target=count, name="semantic-skills-wait", daemon=True)
    counter.start()
    try:
        yield
    finally:
        done.set()
        counter.join()
        click.echo(err=err)


class TerminalProgress:
    """A build's progress on a terminal (see ``builder.BuildProgress``): a note while the embedder loads its model,
    counting the seconds, then a :class:`TerminalBar` over the texts to embed."""

    def loading(self, embedder: str):
        return counted(f"Loading the embedder ({embedder})...", every=TICK_SECONDS)

    def embedding(self, total: int) -> TerminalBar:
        return TerminalBar(total)


def build_progress(as_json: bool = False) -> TerminalProgress | None:
    """What shows a build's progress: a :class:`TerminalProgress` on a terminal, nothing for a pipe or ``--json``."""
    return TerminalProgress() if sys.stderr.isatty() and not as_json else None
