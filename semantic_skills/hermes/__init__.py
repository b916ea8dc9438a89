"""The Hermes Agent side of semantic-skills.

``register(ctx)`` is what Hermes calls when it loads the plugin (as a folder
under ``$HERMES_HOME/plugins`` or through the ``hermes_agent.plugins`` entry
point). It is cheap: it wires the ``hermes semantic-skills`` command, the
hooks, the ``search_skills`` tool and the compact skills prompt, and starts
the routing worker in the background. Nothing heavy is imported here, and
importing this package imports none of its modules (the command line reads
``semantic_skills.hermes.config``).

When the plugin's dependencies are not installed in Hermes' Python, only the
command is wired and ``register`` raises :class:`NotRouting`: Hermes keeps
its own skills listing, logs the one-line reason and fix in agent.log, and
shows it next to the plugin in ``/plugins``.
"""

from __future__ import annotations

import functools
import logging


class NotRouting(RuntimeError):
    """The plugin cannot route in this Python; the message is one line naming the fix."""


def register(ctx) -> None:
    from . import cli_command

    ctx.register_cli_command(name=cli_command.NAME, help=cli_command.HELP, setup_fn=cli_command.setup,
                             handler_fn=cli_command.run, description=cli_command.HELP)
    _check_dependencies(cli_command.HERMES_COMMAND)

    from . import hooks, prompt_stub, tool
    from .runtime import get_runtime

    runtime = get_runtime()
    for name in ("pre_gateway_dispatch", "pre_llm_call", "on_session_reset"):
        ctx.register_hook(name, _guarded(runtime, name, getattr(hooks, name)))
    ctx.register_tool(name=tool.NAME, toolset=tool.TOOLSET, schema=tool.SCHEMA,
                      handler=functools.partial(tool.search_skills, runtime),
                      description=tool.SCHEMA["description"], emoji="🧭")
    prompt_stub.install(_prompt_mode, _seal, runtime.log_once)
    runtime.start()


def _check_dependencies(command: str) -> None:
    """Raise :class:`NotRouting` when the routing worker's core libraries are missing from this Python."""
    from ..requirements import CORE_MODULES, install_command, missing_modules

    missing = missing_modules(CORE_MODULES)
    if missing:
        raise NotRouting(f"semantic-skills is not routing: {', '.join(missing)} not installed in this Python; "
                         f"fix: {install_command()} (then check with: {command} doctor)")


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


def _seal() -> str:
    from .config import hermes_home
    from .seal import home_seal

    return home_seal(hermes_home())
