"""The Hermes Agent side of semantic-skills.

``register(ctx)`` is what Hermes calls when it loads the plugin (as a folder
under ``~/.hermes/plugins`` or through the ``hermes_agent.plugins`` entry
point). It is cheap: it wires the hooks, the ``search_skills`` tool, the
``hermes semantic-skills`` command and the compact skills prompt, and starts
the routing worker in the background. Nothing heavy is imported here, and
importing this package imports none of its modules (the command line reads
``semantic_skills.hermes.config``).
"""

from __future__ import annotations

import functools
import logging


def register(ctx) -> None:
    from . import cli_command, hooks, prompt_stub, tool
    from .runtime import get_runtime

    runtime = get_runtime()
    for name in ("pre_gateway_dispatch", "pre_llm_call", "on_session_reset"):
        ctx.register_hook(name, _guarded(runtime, name, getattr(hooks, name)))
    ctx.register_tool(name=tool.NAME, toolset=tool.TOOLSET, schema=tool.SCHEMA,
                      handler=functools.partial(tool.search_skills, runtime),
                      check_fn=tool.dependencies_installed, description=tool.SCHEMA["description"], emoji="🧭")
    ctx.register_cli_command(name=cli_command.NAME, help=cli_command.HELP, setup_fn=cli_command.setup,
                             handler_fn=cli_command.run, description=cli_command.HELP)
    prompt_stub.install(_prompt_mode, runtime.log_once)
    runtime.start()


def _guarded(runtime, name: str, hook):
    """``hook`` bound to ``runtime``, logging (once) instead of raising."""

    def callback(**kwargs):
        try:
            return hook(runtime, **kwargs)
        except Exception as exc:  # noqa: BLE001 - a hook must never break a conversation
            runtime.log_once(logging.WARNING, f"{name} failed ({type(exc).__name__}: {exc}); "
                                              "the message goes on unchanged")
            return None

    callback.__name__ = f"semantic_skills_{name}"
    return callback


def _prompt_mode() -> str:
    from .runtime import current_runtime

    runtime = current_runtime()
    return runtime.settings().prompt_mode if runtime is not None else "compact"
