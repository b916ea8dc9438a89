"""Hermes directory-plugin entry point: runs this folder's own ``semantic_skills`` package for the Hermes home that
loads it, then the package's ``register``.

The package is imported from this folder even when ``pip install -e`` made
another folder's the installed one (another Hermes home's plugin folder, for
a second profile on the same Python): each home runs the release in its own
plugin folder. A process imports a package once, so one that already imported
``semantic_skills`` (a gateway serving several profiles, after the first) keeps
that one; ``register()`` then logs which folder's code this home runs.
"""

import importlib.util
import sys
from pathlib import Path

PACKAGE = "semantic_skills"


def _load_own_package() -> None:
    """Import ``semantic_skills`` from this folder, unless this process already imported it."""
    if PACKAGE in sys.modules:
        return
    folder = Path(__file__).resolve().parent / PACKAGE
    spec = importlib.util.spec_from_file_location(PACKAGE, folder / "__init__.py",
                                                  submodule_search_locations=[str(folder)])
    package = sys.modules[PACKAGE] = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(package)
    except BaseException:
        del sys.modules[PACKAGE]
        raise


def register(ctx):
    """Called by Hermes' plugin manager; delegates to the package."""
    _load_own_package()
    from semantic_skills.hermes import register as register_plugin

    register_plugin(ctx)
