"""A SKILL.md's front matter: the ``---``-fenced block split from the body, and read as YAML."""

from __future__ import annotations

import re
from typing import Any

_FENCE = re.compile(r"^---[ \t]*$", re.MULTILINE)


def split_front_matter(text: str) -> tuple[str | None, str]:
    """Split ``---``-fenced front matter from the body.

    The closing fence must be a line of its own, so ``---`` inside a quoted or
    indented value does not end the block. Returns ``(None, text)`` when there
    is no complete front matter block.
    """
    if not text.startswith("---"):
        return None, text
    first_newline = text.find("\n")
    if first_newline == -1 or text[:first_newline].strip() != "---":
        return None, text
    closing = _FENCE.search(text, first_newline + 1)
    if closing is None:
        return None, text
    return text[first_newline + 1 : closing.start()], text[closing.end() :].lstrip("\n")


def parse_front_matter(block: str) -> tuple[dict[str, Any], list[str]]:
    """``yaml.safe_load`` the block; on invalid YAML fall back to ``key: value`` lines."""
    import yaml

    try:
        data = yaml.load(block, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        data = {}
        for line in block.split("\n"):
            key, sep, value = line.partition(":")
            if sep and key.strip() and not line.startswith((" ", "\t")):
                data[key.strip()] = value.strip().strip("'\"")
        return data, [f"invalid YAML front matter{_yaml_problem(exc)}; read simple 'key: value' lines instead"]
    if data is None:
        return {}, []
    if not isinstance(data, dict):
        return {}, [f"front matter is a {type(data).__name__}, not a mapping; ignored it"]
    return data, []


def _yaml_problem(exc: Exception) -> str:
    """Where the construct YAML could not read starts (a line of the file: the block starts on line 2), and why."""
    start = getattr(exc, "context_mark", None) or getattr(exc, "problem_mark", None)
    where = f" at line {start.line + 2}" if start is not None else ""
    end = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or ""
    if problem and end is not None and end is not start:
        problem += f" at line {end.line + 2}"
    reason = ", ".join(filter(None, (getattr(exc, "context", None), problem)))
    return f"{where} ({reason})" if reason else where


def strip_front_matter(text: str) -> str:
    """The markdown body of a SKILL.md text (front matter removed)."""
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    return split_front_matter(text)[1]
