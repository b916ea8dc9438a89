"""Hermes directory-plugin entry point; the plugin lives in ``semantic_skills.hermes``."""

import sys
from pathlib import Path


def register(ctx):
    """Called by Hermes' plugin manager; delegates to the package."""
    try:
        import semantic_skills  # noqa: F401  (installed with pip)
    except ImportError:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
    from semantic_skills.hermes import register as register_plugin

    register_plugin(ctx)
