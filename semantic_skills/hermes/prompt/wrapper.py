"""The stub on a Hermes without ``llm_request`` middleware: its prompt builder's skills listing is wrapped.

Hermes builds the listing with ``agent.prompt_builder.build_skills_system_prompt``.
Each Hermes generation reaches it differently: 0.19 through a real
``run_agent`` attribute (imported from prompt_builder), newer ones through the
module itself or a ``run_agent`` compatibility ``__getattr__``; the wrapper is
set on prompt_builder and on every loaded caller module that holds the
original. It takes whatever arguments Hermes passes (0.21 added
``skills_dir_override``), hands them unchanged to the original in ``full``
mode, and otherwise returns :func:`~.stub.compact_skills_prompt`. Each call
also records the session's tool view (``tools_view``) for the Hermes home the
prompt is built for: the profile Hermes 0.21 names, else this call's home.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import sys
from pathlib import Path
from typing import Callable

from ...logs import OnceLogger
from ..host.home import hermes_home
from . import tools_view
from .stub import LISTING, compact_skills_prompt

_PATCH_MARK = "_semantic_skills_original"
FUNCTION = "build_skills_system_prompt"
CALLER_MODULES = ("run_agent", "agent.system_prompt")  # modules that may hold their own reference


def install(log_once: OnceLogger, mode_for: Callable[[Path], str]) -> bool:
    """Wrap Hermes' skills listing so it follows ``mode_for(home)`` for the home each prompt is built for
    (``compact`` or ``full``, see mode.py).

    Returns False, leaving Hermes untouched, when there is no such function to wrap.
    """
    try:
        prompt_builder = importlib.import_module("agent.prompt_builder")
    except Exception as exc:  # noqa: BLE001 - never break plugin loading
        log_once(logging.WARNING, f"skills prompt: cannot import agent.prompt_builder ({exc}); Hermes' own "
                                  "skills listing stays in the system prompt")
        return False
    original = getattr(prompt_builder, FUNCTION, None)
    if not callable(original):
        log_once(logging.WARNING, f"skills prompt: agent.prompt_builder has no {FUNCTION}; Hermes' own skills "
                                  "listing stays in the system prompt")
        return False
    if hasattr(original, _PATCH_MARK):
        return True
    wrapper = _wrap(original, mode_for)
    callers = [module for module in map(sys.modules.get, CALLER_MODULES)
               if module is not None and FUNCTION in vars(module)]
    setattr(prompt_builder, FUNCTION, wrapper)
    for module in callers:
        if vars(module)[FUNCTION] is original:
            setattr(module, FUNCTION, wrapper)
        else:
            log_once(logging.WARNING, f"skills prompt: {module.__name__}.{FUNCTION} was replaced by another "
                                      "plugin; left that one in place")
    return True


def _wrap(original: Callable, mode_for: Callable[[Path], str]) -> Callable:
    try:
        signature = inspect.signature(original)
    except (TypeError, ValueError):
        signature = None

    def build_skills_system_prompt(*args, **kwargs):
        arguments = _bound(signature, args, kwargs)
        if arguments is None or _mode(mode_for, arguments) == LISTING:
            return original(*args, **kwargs)
        return compact_skills_prompt(arguments.get("available_tools"))

    build_skills_system_prompt.__doc__ = original.__doc__
    setattr(build_skills_system_prompt, _PATCH_MARK, original)
    return build_skills_system_prompt


def _bound(signature: inspect.Signature | None, args: tuple, kwargs: dict) -> dict | None:
    """The call's arguments by name, defaults applied; None when they do not fit the original's signature."""
    if signature is None:
        return None
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        return None
    bound.apply_defaults()
    return dict(bound.arguments)


def _mode(mode_for: Callable[[Path], str], arguments: dict) -> str:
    """The mode for the home this prompt is built for, having recorded the session's tool view there."""
    try:
        override = arguments.get("skills_dir_override")
        home = Path(override).parent if override else hermes_home()
        tools_view.observe(home, arguments.get("available_tools"), arguments.get("available_toolsets"))
        return mode_for(home)
    except Exception:  # noqa: BLE001 - unreadable settings: leave Hermes' listing
        return LISTING
