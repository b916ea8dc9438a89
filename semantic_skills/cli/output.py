"""How the command line prints: every line through :func:`echo` or :func:`echo_json`, so nothing a path, a name or
a record holds can act on the terminal."""

from __future__ import annotations

import json

import click

from ..glyphs import visible


def echo(text: str = "", err: bool = False) -> None:
    """Print ``text`` (to stderr with ``err``), each line with what a terminal would act on written out
    (:func:`glyphs.visible`): the names, paths and texts of skills and files print as the text they are, and
    no escape sequence, carriage return or bidi override in them reaches the terminal. Every line the command
    line prints goes through here or :func:`echo_json`."""
    click.echo("\n".join(visible(line) for line in text.split("\n")), err=err)


def echo_json(data) -> None:
    """Print ``data`` as one line of JSON, in ASCII: every other character as its ``\\u`` escape, so no
    control or bidi character reaches the terminal, and a JSON reader gets the text back unchanged."""
    click.echo(json.dumps(data))
