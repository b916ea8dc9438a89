"""The package stays layered: no import circles, and the rooms import one way (command line -> Hermes adapter -> core).

Read from the source with ``ast``, so an import inside a function counts as much as one at the top.
"""

from __future__ import annotations

import ast
from pathlib import Path

from support import REPO

PACKAGE = REPO / "semantic_skills"
LAUNCHER = "semantic_skills.__main__"  # ``python -m semantic_skills`` starts the command line
ROOMS = {"semantic_skills.cli": "cli", "semantic_skills.hermes": "hermes"}
MAY_IMPORT = {"cli": {"cli", "hermes", "core"}, "hermes": {"hermes", "core"}, "core": {"core"}}


def module_files() -> dict[str, tuple[Path, str]]:
    """Every module of the package: dotted name -> (file, the package its relative imports start from)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
            found[".".join(parts)] = (path, ".".join(parts))
        else:
            found[".".join(parts)] = (path, ".".join(parts[:-1]))
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports anywhere in its source (``from pkg import submodule`` included)."""
    modules = module_files()
    graph = {}
    for name, (path, package) in modules.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names if alias.name in modules}
            elif isinstance(node, ast.ImportFrom):
                base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
                origin = ".".join(base + ([node.module] if node.module else []))
                if origin in modules:
                    targets |= {f"{origin}.{a.name}" if f"{origin}.{a.name}" in modules else origin
                                for a in node.names}
        graph[name] = targets - {name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (each is at least one import circle)."""
    order, low, stack, found, counter = {}, {}, [], [], [0]

    def visit(module: str) -> None:
        order[module] = low[module] = counter[0]
        counter[0] += 1
        stack.append(module)
        for target in graph[module]:
            if target not in order:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], order[target])
        if low[module] == order[module]:
            group = []
            while not group or group[-1] != module:
                group.append(stack.pop())
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(graph):
        if module not in order:
            visit(module)
    return found


def room(module: str) -> str:
    return next((name for prefix, name in ROOMS.items() if module == prefix or module.startswith(prefix + ".")),
                "core")


def test_the_graph_sees_relative_absolute_and_function_level_imports():
    graph = import_graph()

    assert "semantic_skills.hermes.config" in graph["semantic_skills.hermes.runtime"]  # from .config import ...
    assert "semantic_skills.files" in graph["semantic_skills.hermes.config"]  # from ..files import ...
    assert "semantic_skills.hermes.hooks" in graph["semantic_skills.hermes"]  # from . import x, in register()
    assert "semantic_skills.hermes.host.probes" in graph["semantic_skills.hermes"]  # from .host import x
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_of_the_package_takes_part_in_an_import_circle():
    assert circles(import_graph()) == []


def test_the_core_knows_neither_hermes_nor_the_command_line_and_the_adapter_not_the_command_line():
    crossings = sorted(f"{module} -> {target}" for module, targets in import_graph().items() if module != LAUNCHER
                       for target in targets if room(target) not in MAY_IMPORT[room(module)])

    assert crossings == []


# --------------------------------------------------------------------------- the adapter's two boundaries

HOST = "semantic_skills.hermes.host"
TRUST = "semantic_skills.hermes.trust"
GRANTS = ("grant", "grant_row")  # BlockLedger: the methods that make a block's bytes trusted


def hermes_modules() -> frozenset[str]:
    """Every module name the installed Hermes ships (``agent.skill_utils``, ``run_agent``...)."""
    from importlib.metadata import distributions

    names = set()
    for dist in distributions():
        if not (dist.metadata["Name"] or "").lower().startswith("hermes-agent"):
            continue
        for file in dist.files or ():
            parts = file.parts
            if file.suffix == ".py" and not parts[0].endswith((".dist-info", ".data")) and ".." not in parts:
                module = list(parts[:-1]) + ([] if file.stem == "__init__" else [file.stem])
                names.add(".".join(module))
    return frozenset(names)


def hermes_references(path: Path, modules: frozenset[str]) -> list[str]:
    """Where ``path`` imports a Hermes module or names one in a string (``hermes_function("agent.x", ...)``)."""
    tops = {name.split(".")[0] for name in modules}
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names if a.name.split(".")[0] in tops]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module.split(".")[0] in tops:
            found.append(f"from {node.module}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in modules \
                and "." in node.value:
            found.append(repr(node.value))
    return found


def test_only_the_host_package_touches_hermes_modules(hermes_installed):
    modules = hermes_modules()
    assert {"agent.skill_utils", "hermes_cli.plugins", "gateway.run"} <= modules  # the control: Hermes is known
    touching = {name: hermes_references(path, modules) for name, (path, _) in module_files().items()
                if not (name == HOST or name.startswith(HOST + "."))}

    assert {name: refs for name, refs in touching.items() if refs} == {}
    assert hermes_references(PACKAGE / "hermes" / "host" / "skills.py", modules)  # the check sees the host's


def test_only_the_trust_package_grants_trust():
    granting = sorted(name for name, (path, _) in module_files().items()
                      for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                      if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                      and node.func.attr in GRANTS)

    assert f"{TRUST}.blocks" in granting  # the control: the check sees the one grant of a produced block
    assert [name for name in granting if not name.startswith(TRUST + ".")] == []


def test_every_hermes_module_the_host_asks_is_listed_with_why_in_the_architecture_page(hermes_installed):
    modules, page = hermes_modules(), (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    named = {ref.strip("'") for path in (PACKAGE / "hermes" / "host").glob("*.py")
             for ref in hermes_references(path, modules) if ref.startswith("'")}
    named |= {module for path in (PACKAGE / "hermes" / "host").glob("*.py")
              for module in _module_constants(path) if module in modules}

    assert "agent.skill_utils" in named  # the control: the host's module constants are read
    assert sorted(module for module in named if f"`{module}" not in page) == []


def _module_constants(path: Path) -> set[str]:
    """The string constants a module binds at its top (``SKILL_UTILS = "agent.skill_utils"``)."""
    return {node.value.value for node in ast.parse(path.read_text(encoding="utf-8")).body
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)}
