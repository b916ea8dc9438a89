"""The ``semantic-skills`` command line: ``main`` is the command group; each module adds its commands."""

from . import doctor, history, indexing, quality, removal, routing  # noqa: F401,E402 - importing them adds their commands to main
from .app import main
from .indexing import build  # noqa: E402 - build_embeddings.py runs this command on its own

__all__ = ["main", "build"]
