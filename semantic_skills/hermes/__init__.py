"""The Hermes Agent side of semantic-skills.

``register(ctx)`` is what Hermes calls when it loads the plugin folder under
``$HERMES_HOME/plugins`` (through the folder's ``__init__.py``; Hermes 0.21
calls it once per profile). It is cheap: through Hermes' public plugin API
only, it wires the hooks, the ``llm_request`` middleware that puts the
compact skills section in the system prompt, the ``search_skills`` tool and
the ``hermes semantic-skills`` command; the routing worker starts in the
background, and the home's state folder records which Hermes loaded the
plugin (``serving``, for a ``doctor`` run elsewhere). What this Hermes lacks is logged at debug level (``doctor`` shows
it all), a lack that costs a feature as a warning. Every call then works on
the runtime of the Hermes home it is made for. Nothing heavy is imported
here, and importing this package imports none of its modules (the command
line reads ``semantic_skills.hermes.config``).

When the plugin's dependencies are not installed in this Python, everything
is wired all the same and one warning names the fix (the same ``doctor``
gives): until they are, the routing worker reports the missing package, new
sessions keep Hermes' own skills listing and ``search_skills`` matches words.
"""

from __future__ import annotations

import functools
import logging
import sys

ROUTING_HOOKS = ("pre_gateway_dispatch", "pre_llm_call")
HOOKS = (*ROUTING_HOOKS, "on_session_reset", "post_tool_call", "transform_tool_result", "on_skill_lifecycle")


def register(ctx) -> None:
    from . import cli_command, hooks, serving, tool
    from .host import probes
    from .host.lookup import hermes_version, valid_hooks
    from .prompt import middleware
    from .runtime import get_runtime, use_plugin_config

    ctx.register_cli_command(name=cli_command.NAME, help=cli_command.HELP, setup_fn=cli_command.setup,
                             handler_fn=cli_command.run, description=cli_command.HELP)
    get_config = getattr(ctx, "get_config", None)
    use_plugin_config(get_config if callable(get_config) else None)
    runtime = get_runtime(start=not runs_own_command())  # `hermes semantic-skills ...` routes nothing
    serving.remember(runtime.home)  # for a doctor run with another Python (see serving.py)
    known_hooks = valid_hooks()
    for name in HOOKS:
        if known_hooks is None or name in known_hooks:  # an unknown hook name only earns a warning from Hermes
            ctx.register_hook(name, _guarded(name, getattr(hooks, name)))
    ctx.register_tool(name=tool.NAME, toolset=tool.TOOLSET, schema=tool.SCHEMA,
                      handler=_with_runtime(tool.search_skills),
                      description=tool.SCHEMA["description"], emoji="🧭")
    register_middleware = getattr(ctx, "register_middleware", None)
    if callable(register_middleware):
        register_middleware(middleware.KIND, _guarded(middleware.KIND, middleware.on_llm_request))
    for capability in probes.probe(load_gateway=False):
        if not capability.available:
            level = logging.DEBUG if capability.name in probes.ABSENT_FEATURES else logging.WARNING
            runtime.log_once(level, f"Hermes {hermes_version()}: {capability.name} unavailable: "
                                    f"{capability.detail}")
    problem = dependency_problem(runtime.home, runtime.settings, runtime.index_dir)
    if problem:
        runtime.log_once(logging.WARNING, problem)
    elsewhere = foreign_code(runtime.home)
    if elsewhere:
        runtime.log_once(logging.WARNING, elsewhere)


def foreign_code(home) -> str:
    """One line saying that this process runs another folder's code than ``home``'s plugin folder, why, and what to
    do; "" when it runs this home's own."""
    from .config import PLUGIN_NAME, hermes_cli
    from .installs import running_elsewhere

    elsewhere = running_elsewhere(home)
    if not elsewhere:
        return ""
    return (f"{elsewhere}: this process had imported that one already (a gateway serving several profiles imports "
            "the plugin once, for the first of them), so this home runs that release; keep every home this process "
            f"serves on one release ({hermes_cli(home)} plugins update {PLUGIN_NAME}, and the same in each), or "
            "serve this home from a process of its own")


def runs_own_command(argv: list[str] | None = None) -> bool:
    """This Hermes process was started to run the plugin's own command line (``hermes [-p NAME] semantic-skills
    ...``), which routes nothing: no routing worker is started for it (its model load would only compete with
    the command's own, as ``doctor``'s)."""
    from .config import PLUGIN_NAME

    arguments = iter((sys.argv if argv is None else argv)[1:])
    for argument in arguments:
        if argument in ("-p", "--profile"):
            next(arguments, None)
        elif not argument.startswith("-"):
            return argument == PLUGIN_NAME
    return False


def dependency_problem(home, settings, index_dir) -> str:
    """One line naming what this Python lacks of the plugin's dependencies (the packages ``doctor`` names, read
    the same way) and the fix; "" when it lacks nothing."""
    from ..settings import EmbedderSettings
    from .config import hermes_command
    from .doctor.dependencies import missing_dependencies, routing_backend
    from .doctor.install_fix import missing_words
    from .host.lookup import hermes_distribution

    found = missing_dependencies(routing_backend(settings.embedder, index_dir))
    missing = missing_words(home, found, settings.embedder == EmbedderSettings(), host=hermes_distribution())
    if not missing:
        return ""
    state = "not routing" if found.blocking else "routing may still work"
    return f"{state}: {missing} (then check with: {hermes_command(home)} doctor)"


def _guarded(name: str, hook):
    """``hook`` run with the runtime of the call's Hermes home, logging (once) instead of raising."""
    from .runtime import get_runtime

    def callback(**kwargs):
        runtime = None
        try:
            runtime = get_runtime()
            return hook(runtime, **kwargs)
        except Exception as exc:  # noqa: BLE001 - a hook must never break a conversation
            if runtime is not None:
                runtime.log_once(logging.WARNING, f"{name} failed ({type(exc).__name__}: {exc}); "
                                                  "the message goes on unchanged")
            return None

    callback.__name__ = f"semantic_skills_{name}"
    return callback


def _with_runtime(handler):
    """A tool handler given the runtime of the call's Hermes home."""
    from .runtime import get_runtime

    @functools.wraps(handler)
    def call(*args, **kwargs):
        return handler(get_runtime(), *args, **kwargs)

    return call
