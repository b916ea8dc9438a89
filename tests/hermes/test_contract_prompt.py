"""Contract tests: the skills-prompt wrapper on Hermes 0.21 (upstream main), which cannot be installed here.

Fake ``agent.prompt_builder``, ``run_agent``, ``agent.system_prompt`` and
``hermes_cli`` modules reproduce the shapes upstream declares (signatures,
keyword calls, the compatibility ``__getattr__``, the version string) and
replace the real 0.19 modules in ``sys.modules`` for the test only.
"""

from __future__ import annotations

import importlib
import sys
import types
from pathlib import Path

import pytest

from semantic_skills.hermes.prompt import stub, tools_view, wrapper
from semantic_skills.logs import OnceLogger

LISTING = "## Skills\n<available_skills>\n  devops:\n    - docker-compose-debug\n</available_skills>"
TOOLS = {"skill_view", "skills_list", "search_skills", "terminal"}
AGENT = types.SimpleNamespace(valid_tool_names=TOOLS, skills_dir=Path("/home/u/.hermes/profiles/work/skills"))
STUB = stub.COMPACT_SKILLS_PROMPT


def main_prompt_builder() -> types.ModuleType:
    """``agent/prompt_builder.py:build_skills_system_prompt`` as upstream main declares it (4th parameter)."""
    module = types.ModuleType("agent.prompt_builder")
    module.calls = []

    def build_skills_system_prompt(available_tools: "set[str] | None" = None,
                                   available_toolsets: "set[str] | None" = None,
                                   compact_categories: "frozenset[str] | None" = None,
                                   skills_dir_override: "Path | None" = None) -> str:
        module.calls.append(skills_dir_override)
        return LISTING

    module.build_skills_system_prompt = build_skills_system_prompt
    return module


def compat_run_agent() -> types.ModuleType:
    """``run_agent.py``'s PLUGIN-COMPAT block: no real attribute, a PEP 562 ``__getattr__`` that fetches
    ``agent.prompt_builder.build_skills_system_prompt`` at each lookup (upstream main)."""
    module = types.ModuleType("run_agent")
    lazy = {"build_skills_system_prompt": ("agent.prompt_builder", "build_skills_system_prompt")}

    def __getattr__(name):  # noqa: N807 - the module-level hook of PEP 562
        if name not in lazy:
            raise AttributeError(name)
        target = lazy[name]
        return getattr(importlib.import_module(target[0]), target[1])

    module.__getattr__ = __getattr__
    return module


def system_prompt_through_run_agent() -> types.ModuleType:
    """``agent/system_prompt.py:build_system_prompt_parts`` as stored with the compat shim: ``_r = _ra()``
    looked up on every build, then ``_r.build_skills_system_prompt(...)`` with keywords only."""
    module = types.ModuleType("agent.system_prompt")

    def skills_prompt(agent) -> str:
        _r = sys.modules["run_agent"]
        return _r.build_skills_system_prompt(available_tools=agent.valid_tool_names, available_toolsets={"skills"},
                                             compact_categories=None, skills_dir_override=agent.skills_dir)

    module.skills_prompt = skills_prompt
    return module


def system_prompt_through_prompt_builder() -> types.ModuleType:
    """``agent/system_prompt.py:_skills_prompt`` in the newer stored version: ``from agent import
    prompt_builder as _pb`` at import, then ``_pb.build_skills_system_prompt(...)`` at each build."""
    module = types.ModuleType("agent.system_prompt")
    _pb = sys.modules["agent.prompt_builder"]

    def skills_prompt(agent) -> str:
        return _pb.build_skills_system_prompt(available_tools=agent.valid_tool_names, available_toolsets={"skills"},
                                              compact_categories=None, skills_dir_override=agent.skills_dir)

    module.skills_prompt = skills_prompt
    return module


@pytest.fixture()
def hermes_main(monkeypatch):
    """The 0.21 modules in place of 0.19's, with ``hermes_cli.__version__ == "0.21.3"``
    (``hermes_cli/__init__.py`` upstream)."""
    hermes_cli = types.ModuleType("hermes_cli")
    hermes_cli.__version__ = "0.21.3"
    builder = main_prompt_builder()
    for name, module in (("hermes_cli", hermes_cli), ("agent.prompt_builder", builder),
                         ("run_agent", compat_run_agent())):
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.delitem(sys.modules, "agent.system_prompt", raising=False)
    return builder


@pytest.mark.parametrize("system_prompt", [system_prompt_through_run_agent, system_prompt_through_prompt_builder])
def test_the_0_21_skills_section_is_the_constant_stub(hermes_main, monkeypatch, system_prompt):
    """upstream agent/prompt_builder.py:build_skills_system_prompt(..., skills_dir_override) called by
    agent/system_prompt.py with keywords, through run_agent's compat __getattr__ or prompt_builder itself."""
    monkeypatch.setitem(sys.modules, "agent.system_prompt", system_prompt())
    assert sys.modules["agent.system_prompt"].skills_prompt(AGENT) == LISTING  # the control: Hermes' listing

    assert wrapper.install(OnceLogger(), lambda home: "compact") is True

    prompts = {sys.modules["agent.system_prompt"].skills_prompt(AGENT) for _ in range(3)}
    assert prompts == {STUB}  # byte-identical on every build
    assert "build_skills_system_prompt" not in vars(sys.modules["run_agent"])  # the compat shim stays a shim


def test_the_stub_is_the_same_bytes_for_every_profile(hermes_main, monkeypatch, tmp_path):
    """upstream agent/system_prompt.py passes the agent's own skills folder as skills_dir_override: whichever
    profile a prompt is built for, and whatever home this thread has bound, the stub is one constant."""
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "default"))
    monkeypatch.setitem(sys.modules, "agent.system_prompt", system_prompt_through_run_agent())
    assert wrapper.install(OnceLogger(), lambda home: "compact")

    stubs = {sys.modules["agent.system_prompt"].skills_prompt(
        types.SimpleNamespace(valid_tool_names=TOOLS, skills_dir=tmp_path / home / "skills"))
        for home in ("default", "profiles/work", "profiles/play")}
    assert stubs == {STUB}


def test_full_mode_hands_hermes_exactly_what_it_passed(hermes_main, monkeypatch):
    """upstream agent/prompt_builder.py:build_skills_system_prompt receives skills_dir_override unchanged."""
    monkeypatch.setitem(sys.modules, "agent.system_prompt", system_prompt_through_run_agent())
    homes = []
    assert wrapper.install(OnceLogger(), lambda home: homes.append(home) or "full")

    assert sys.modules["agent.system_prompt"].skills_prompt(AGENT) == LISTING
    assert hermes_main.calls == [AGENT.skills_dir]
    assert homes == [AGENT.skills_dir.parent]  # the profile the prompt is built for
    assert tools_view.session_tools(AGENT.skills_dir.parent, "") == (frozenset(TOOLS), frozenset({"skills"}))


def test_the_wrapper_takes_the_call_an_old_three_parameter_replacement_failed(hermes_main, monkeypatch):
    """upstream agent/system_prompt.py passes skills_dir_override= by keyword: the wrapper this plugin
    had until 0.19 only (three named parameters) fails there with TypeError, so every prompt build fails;
    the installed wrapper takes the same call."""
    monkeypatch.setitem(sys.modules, "agent.system_prompt", system_prompt_through_run_agent())
    original = hermes_main.build_skills_system_prompt

    def old_replacement(available_tools=None, available_toolsets=None, compact_categories=None):
        return stub.compact_skills_prompt(available_tools)

    monkeypatch.setattr(hermes_main, "build_skills_system_prompt", old_replacement)
    with pytest.raises(TypeError, match="skills_dir_override"):  # the control
        sys.modules["agent.system_prompt"].skills_prompt(AGENT)

    monkeypatch.setattr(hermes_main, "build_skills_system_prompt", original)
    assert wrapper.install(OnceLogger(), lambda home: "compact")
    assert sys.modules["agent.system_prompt"].skills_prompt(AGENT) == STUB


def test_a_real_attribute_on_run_agent_is_replaced_too(hermes_main, monkeypatch):
    """0.19's shape next to 0.21's module: run_agent holds its own reference (``from agent.prompt_builder
    import build_skills_system_prompt``), which a patch of prompt_builder alone would not reach."""
    run_agent = types.ModuleType("run_agent")
    run_agent.build_skills_system_prompt = hermes_main.build_skills_system_prompt
    monkeypatch.setitem(sys.modules, "run_agent", run_agent)
    monkeypatch.setitem(sys.modules, "agent.system_prompt", system_prompt_through_run_agent())

    assert wrapper.install(OnceLogger(), lambda home: "compact")
    assert sys.modules["agent.system_prompt"].skills_prompt(AGENT) == STUB


def test_a_call_that_fits_no_signature_is_left_to_hermes(hermes_main):
    """A keyword the wrapper cannot place (a newer Hermes) goes to the original unchanged: Hermes answers."""
    assert wrapper.install(OnceLogger(), lambda home: "compact")
    with pytest.raises(TypeError):
        hermes_main.build_skills_system_prompt(available_tools=TOOLS, skill_names=frozenset({"x"}))
