"""Errors that carry a one-line, user-facing explanation and a fix."""

from __future__ import annotations

import os
import re

DEFAULT_COMMAND = "semantic-skills"
COMMAND_ENV = "SEMANTIC_SKILLS_COMMAND"  # set by a host that runs this command line under another name


class SemanticSkillsError(Exception):
    """Base error: ``str(err)`` is a complete sentence a user can act on."""


class IndexMissing(SemanticSkillsError):
    """No index exists where one was expected."""


class IndexCorrupt(SemanticSkillsError):
    """The index on disk cannot be read or is inconsistent."""


class IndexFromAnotherRelease(IndexCorrupt):
    """The index was written in another index format, by an older or newer release of this package."""

    def __init__(self, index_dir, built_by: str, fix: str):
        super().__init__(f"the index in {index_dir} was built by {built_by}; {fix}")
        self.built_by = built_by


class EmbedderMismatch(SemanticSkillsError):
    """The index was built by a different embedder than the one configured."""


class EmbedderError(SemanticSkillsError):
    """The embedder could not be loaded or could not embed."""


class DependencyMissing(EmbedderError):
    """A package the ``backend`` embedder needs is not installed in this Python: ``module`` is the one that failed
    to import. A host that knows the machine better (``hermes.doctor.install_fix``) replaces the fix it names."""

    def __init__(self, module: str, backend: str, message: str):
        super().__init__(message)
        self.module, self.backend = module, backend


class BuildLocked(SemanticSkillsError):
    """Another build holds the index lock."""


class ConfigError(SemanticSkillsError):
    """A setting has an invalid value."""


MAX_ERROR_CHARS = 1000


def first_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message (its type name when empty), at most ``MAX_ERROR_CHARS`` long."""
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:MAX_ERROR_CHARS]


def command_name() -> str:
    """What the user calls this command line where they are: ``semantic-skills``, or the name a host set in
    ``COMMAND_ENV``."""
    return os.environ.get(COMMAND_ENV) or DEFAULT_COMMAND


def program_name() -> str:
    """:func:`command_name` without the variables it sets first (``HERMES_HOME=... hermes semantic-skills`` for a
    Hermes home that is not the default one): what a usage line shows."""
    words = command_name().split(" ")
    while len(words) > 1 and _ASSIGNMENT.match(words[0]):
        words.pop(0)
    return " ".join(words)


_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=\S*$")


def command(arguments: str) -> str:
    """How the user runs ``semantic-skills ARGUMENTS`` where they are (see :func:`command_name`)."""
    return f"{command_name()} {arguments}"
