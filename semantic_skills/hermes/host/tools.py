"""Hermes' tools: which toolset each tool belongs to."""

from __future__ import annotations

from typing import Iterable

from .lookup import hermes_function


def toolsets_of(tool_names: Iterable[str]) -> frozenset[str] | None:
    """The toolsets of ``tool_names`` as Hermes assigns them (``model_tools.get_toolset_for_tool``, what its
    prompt builder uses); None when this Hermes cannot say."""
    toolset_for = hermes_function("model_tools", "get_toolset_for_tool")
    if toolset_for is None:
        return None
    try:
        return frozenset(filter(None, (toolset_for(name) for name in tool_names)))
    except Exception:  # noqa: BLE001 - an unknown tool: as Hermes without the information
        return None
