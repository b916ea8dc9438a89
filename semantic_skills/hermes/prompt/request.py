"""The system prompt inside a provider request, in each shape Hermes sends, and a copy with one text replaced.

Hermes hands ``llm_request`` middleware the provider's own keyword
arguments, cache markers already applied:

- chat completions: ``messages[0]`` with role ``system`` or ``developer``, its
  ``content`` a string or a list of ``{"type": "text", "text": ...}`` parts;
- Anthropic messages and Bedrock: ``system``, a string or a list of blocks
  (``{"text": ...}``, beside ``cache_control`` keys or ``cachePoint`` blocks);
- Responses (codex): ``instructions``, a string.

Only a ``text`` string is ever replaced: every other key, part and marker,
and the order of parts, stay as they are.
"""

from __future__ import annotations

import re
from typing import Iterator

BRIDGE = "tool_search"  # Hermes' tool that finds the tools it loads on demand
Path = tuple  # keys and indexes from the request to one string
SYSTEM_ROLES = ("system", "developer")


def system_texts(request: dict) -> Iterator[tuple[Path, str]]:
    """Every string of ``request``'s system prompt, with where it lies."""
    messages = request.get("messages")
    if isinstance(messages, list) and messages and isinstance(messages[0], dict) \
            and messages[0].get("role") in SYSTEM_ROLES:
        yield from _texts(messages[0].get("content"), ("messages", 0, "content"))
    yield from _texts(request.get("system"), ("system",))
    if isinstance(request.get("instructions"), str):
        yield ("instructions",), request["instructions"]


def _texts(value, path: Path) -> Iterator[tuple[Path, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, list):
        for index, part in enumerate(value):
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                yield (*path, index, "text"), part["text"]


def tool_names(request: dict) -> frozenset[str]:
    """The names of the tools the request offers (function, Anthropic and Bedrock shapes)."""
    names = set()
    for tool in request.get("tools") or ():
        if isinstance(tool, dict):
            name = (tool.get("function") or {}).get("name") or tool.get("name") \
                or (tool.get("toolSpec") or {}).get("name")
            if isinstance(name, str) and name:
                names.add(name)
    config = request.get("toolConfig")
    if isinstance(config, dict) and isinstance(config.get("tools"), list):
        names |= tool_names({"tools": config["tools"]})
    return frozenset(names)


def offered_on_demand(request: dict, name: str) -> bool:
    """Whether the request's ``tool_search`` bridge names ``name`` among the tools it loads on demand (Hermes
    0.20+ defers plugin tools behind it, listing them in its description)."""
    for tool in request.get("tools") or ():
        function = (tool.get("function") or tool) if isinstance(tool, dict) else {}
        if isinstance(function, dict) and function.get("name") == BRIDGE:
            description = function.get("description")
            return isinstance(description, str) and re.search(rf"\b{re.escape(name)}\b", description) is not None
    return False


def replaced(request: dict, path: Path, text: str) -> dict:
    """A copy of ``request`` with the string at ``path`` replaced by ``text``; what is off the path is shared."""
    if not path:
        return text
    key, rest = path[0], path[1:]
    copy = list(request) if isinstance(request, list) else dict(request)
    copy[key] = replaced(request[key], rest, text)
    return copy
