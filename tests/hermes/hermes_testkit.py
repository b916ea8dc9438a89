"""Helpers for the tests against the real Hermes Agent 0.19: subprocesses, a checkout, a gateway."""

from __future__ import annotations

import asyncio
import itertools
import os
import shutil
import subprocess
import sys
import sysconfig
import uuid
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from unittest.mock import AsyncMock, MagicMock

import pytest
import yaml

from support import WORKER_READY_SECONDS, wait_until  # noqa: F401 - the kit's users import them here

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_SKILLS = REPO / "examples" / "skills"
HERMES = Path(sys.executable).with_name("hermes")
PLUGIN = "semantic-skills"
ONNX = {"backend": "onnx"}  # the onnx MiniLM: a worker ready without importing PyTorch (multilingual off with it)


def subprocess_env(home: Path) -> dict[str, str]:
    """The environment for a child that must use ``home`` and import this checkout."""
    env = dict(os.environ, HERMES_HOME=str(home), HF_HUB_OFFLINE="1", LITELLM_LOCAL_MODEL_COST_MAP="True")
    env.pop("SEMANTIC_SKILLS_INDEX_DIR", None)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def run_hermes(home: Path, *args: str, timeout: float = 120, hermes: Path = HERMES,
               cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run the real ``hermes`` command line (``hermes``: its script) with ``home`` as its Hermes home."""
    env = dict(subprocess_env(home), COLUMNS="200")
    env.pop("PYTHONPATH")  # Hermes must find the plugin the way a user's Hermes does
    return subprocess.run([str(hermes), *args], env=env, capture_output=True, text=True, cwd=cwd,
                          stdin=subprocess.DEVNULL, timeout=timeout)


def python_without(root: Path, hidden: tuple[str, ...]) -> Path:
    """A venv under ``root`` (a ``python`` and a ``hermes`` in its ``bin``) that sees this venv's packages
    except those whose folder or metadata name starts with one of ``hidden``.

    Links to the packages stand in a folder a ``.pth`` file names, so they are
    importable as they are here; hidden ones are simply absent, as for a user
    who never installed them.
    """
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    packages = Path(sysconfig.get_paths()["purelib"])
    visible = root / "site-packages"
    visible.mkdir()
    for entry in packages.iterdir():
        if not entry.name.lower().startswith(hidden) and entry.suffix != ".pth":
            (visible / entry.name).symlink_to(entry)
    own = Path(subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()"
                               "['purelib'])"], capture_output=True, text=True, check=True).stdout.strip())
    (own / "visible.pth").write_text(f"{visible}\n")
    script = venv / "bin" / "hermes"
    script.write_text(f"#!{venv / 'bin' / 'python'}\nimport sys\nfrom hermes_cli.main import main\n"
                      "sys.exit(main())\n")
    script.chmod(0o755)
    return venv / "bin"


@dataclass
class UserInstall:
    """A Hermes venv of its own with the plugin installed in ``home`` the documented way."""

    home: Path
    bin: Path  # the venv's bin folder: its python and hermes
    plugin: Path

    @property
    def hermes(self) -> Path:
        return self.bin / "hermes"

    @property
    def python(self) -> Path:
        return self.bin / "python"

    def run(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        """``hermes ARGS`` with this venv's Hermes on this home."""
        return run_hermes(self.home, *args, hermes=self.hermes, timeout=timeout)


def install_as_a_user(root: Path, source: str) -> UserInstall:
    """``hermes plugins install SOURCE --enable`` and the after-install ``pip install -e``, into a venv under
    ``root`` that sees this venv's packages except the plugin's own (so nothing is downloaded)."""
    bin_dir = python_without(root, ("semantic_skills", "__editable__"))
    user = UserInstall(root / "home", bin_dir, root / "home" / "plugins" / PLUGIN)
    installed = user.run("plugins", "install", source, "--enable")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    pip_install_editable(user.python, user.plugin)
    return user


def pip_install_editable(python: Path, folder: Path) -> None:
    """``pip install -e FOLDER`` into ``python``'s venv, as the after-install step does, without its dependencies
    (the venv already sees them) and without the network."""
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                           "--no-build-isolation", "--no-index", "-e", str(folder)], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def build_index(home: Path, *args: str):
    """``semantic-skills build`` for ``home``, as a user runs it, in this process, where the embedder's libraries
    load once (tests/test_cli.py runs the command in processes of its own); returns click's result."""
    from click.testing import CliRunner

    from semantic_skills.cli import main

    env = {"HERMES_HOME": str(home), "SEMANTIC_SKILLS_INDEX_DIR": None, "HF_HUB_OFFLINE": "1",
           "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = CliRunner().invoke(main, ["build", *args], env=env)
    assert done.exit_code == 0, f"{done.output}{done.exception!r}"
    return done


def snapshot_checkout(dest: Path) -> Path:
    """A git repository holding this working tree as one commit (uncommitted changes included)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True)
    if listed.returncode != 0:
        pytest.skip("the project is not a git checkout, so it cannot be installed with `hermes plugins install`")
    for name in filter(None, listed.stdout.decode().split("\0")):
        source = REPO / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    git(dest, "init", "-q")
    git(dest, "add", "-A")
    git(dest, "commit", "-qm", "snapshot for the Hermes tests")
    return dest


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.email=tests@example.invalid", "-c", "user.name=tests", *args],
                          cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


# Hermes pip-installs a missing optional backend the first time something asks for it: building an
# AIAgent runs every tool's check, and the tts tool's check asks for edge-tts. A test home forbids it
# with Hermes' own switch, so no test installs a package at run time.
NO_RUNTIME_INSTALLS = {"security": {"allow_lazy_installs": False}}


def write_settings(home: Path, **settings) -> None:
    """Set ``plugins.entries.semantic-skills.settings`` in ``home``'s config.yaml."""
    config = _read_config(home)
    entries = config.setdefault("plugins", {}).setdefault("entries", {})
    entries.setdefault(PLUGIN, {})["settings"] = settings
    _write_config(home, config)


def forbid_runtime_installs(home: Path) -> None:
    """Set ``security.allow_lazy_installs: false`` in ``home``'s config.yaml (see NO_RUNTIME_INSTALLS)."""
    _write_config(home, {**_read_config(home), **NO_RUNTIME_INSTALLS})


def _read_config(home: Path) -> dict:
    path = home / "config.yaml"
    return (yaml.safe_load(path.read_text()) if path.exists() else None) or {}


def _write_config(home: Path, config: dict) -> None:
    (home / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


@dataclass
class HermesHome:
    """A Hermes home with the plugin installed from ``checkout`` (``install_output``: what the install printed),
    its ``settings`` and an index in ``index_dir``."""

    path: Path
    checkout: Path
    install_output: str
    settings: dict

    @property
    def index_dir(self) -> Path:
        return self.path / "skills_index"

    def configure(self, **changes) -> None:
        """Write the home's settings with ``changes``; with none, the home's own settings again."""
        write_settings(self.path, index_dir=str(self.index_dir), **{**self.settings, **changes})


def install_home(home: Path, checkout: Path, **settings) -> HermesHome:
    """A Hermes home at ``home``: the example skills, the plugin installed from ``checkout`` and enabled with
    ``hermes plugins install``, these plugin ``settings``, and an index built with ``semantic-skills build``."""
    shutil.copytree(EXAMPLE_SKILLS, home / "skills")
    installed = run_hermes(home, "plugins", "install", checkout.as_uri(), "--enable")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    forbid_runtime_installs(home)
    made = HermesHome(home, checkout, installed.stdout, settings)
    made.configure()
    build_index(home)
    return made


def set_active_org(skills_dir: Path, organisation: str) -> None:
    """Name ``organisation`` as the active one of ``skills_dir``'s ``_org`` mirrors, as Hermes 0.21 records it."""
    marker = skills_dir / "_org" / ".active_org"
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(organisation + "\n", encoding="utf-8")


def resolve_auto_load_skills(user_config=None):
    """upstream agent/skill_commands.py:resolve_auto_load_skills (restated): ``skills.auto_load`` of the given
    config as stripped, non-empty strings, first occurrence kept; anything but a list pins nothing."""
    skills = user_config.get("skills") if isinstance(user_config, dict) else None
    entries = skills.get("auto_load") if isinstance(skills, dict) else None
    if not isinstance(entries, list):
        return []
    return list(dict.fromkeys(e.strip() for e in entries if isinstance(e, str) and e.strip()))


# --------------------------------------------------------------------------- gateway


def worker_processes(index_dir: Path) -> dict[int, int]:
    """Routing workers serving ``index_dir``: pid -> parent pid."""
    found = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            command = (proc / "cmdline").read_bytes().split(b"\0")
            status = (proc / "status").read_text()
        except OSError:
            continue
        if b"semantic_skills.worker" in command and any(str(index_dir).encode() in part for part in command):
            found[int(proc.name)] = int(status.split("PPid:")[1].split()[0])
    return found


_user_numbers = itertools.count(1000)


@dataclass
class AgentTurn:
    """What the agent got for one message: the text and the ``pre_llm_call`` context."""

    text: str
    context: str
    session_id: str


class Gateway:
    """A real ``GatewayRunner`` built as Hermes' own tests build one.

    The agent run is replaced by what it does before calling the model: get
    or create the session, set the session's context (its key among it) as
    Hermes does for the run, then fire ``pre_llm_call`` with the agent's
    arguments and the session's history, which keeps each turn's text and, as
    Hermes' ``api_content``, the text with the hook's context that the model
    read. ``agent_run`` may replace that with a real agent.
    """

    def __init__(self, sessions_dir: Path):
        from gateway.config import GatewayConfig, Platform, PlatformConfig
        from gateway.run import GatewayRunner
        from gateway.session import SessionStore

        self.platform = Platform.WHATSAPP
        config = GatewayConfig(platforms={self.platform: PlatformConfig(enabled=True)})
        runner = object.__new__(GatewayRunner)
        runner.config = config
        runner.adapters = {self.platform: SimpleNamespace(send=AsyncMock())}
        runner.pairing_store = MagicMock()  # no pairing codes: unauthorized senders are just refused
        runner.pairing_store.is_approved.return_value = False
        runner.pairing_store._is_rate_limited.return_value = True
        runner.session_store = SessionStore(sessions_dir, config)
        runner._running_agents = {}
        runner._update_prompt_pending = {}
        self.turns: list[AgentTurn] = []
        self.histories: dict[str, list[dict]] = {}  # session id -> its messages, as Hermes keeps them
        self.agent_run = None

        async def run_agent_turn(event, source, _quick_key, _run_generation):
            from gateway.session import build_session_context

            entry = runner.session_store.get_or_create_session(source)
            tokens = runner._set_session_env(build_session_context(source, runner.config, entry))  # as Hermes does
            try:
                return await agent_turn(event, source, entry)
            finally:
                runner._clear_session_env(tokens)

        async def agent_turn(event, source, entry):
            if self.agent_run is not None:
                return await asyncio.to_thread(self.agent_run, event, source, entry.session_id)
            from hermes_cli.plugins import invoke_hook

            history = self.histories.setdefault(entry.session_id, [])
            message = {"role": "user", "content": event.text}
            turn_id = f"{entry.session_id}:t:{uuid.uuid4().hex[:8]}"  # unique per turn, as Hermes names it
            results = invoke_hook("pre_llm_call", session_id=entry.session_id, task_id="t", turn_id=turn_id,
                                  user_message=event.text, conversation_history=[*history, message],
                                  is_first_turn=not history, model="fake-model", platform=source.platform.value,
                                  sender_id=source.user_id or "")
            context = "\n\n".join(r["context"] for r in results if isinstance(r, dict) and r.get("context"))
            if context:
                message["api_content"] = f"{event.text}\n\n{context}"
            history += [message, {"role": "assistant", "content": "ok"}]
            self.turns.append(AgentTurn(event.text, context, entry.session_id))
            return "ok"

        runner._handle_message_with_agent = run_agent_turn
        self.runner = runner

    def new_user(self) -> str:
        """A sender no earlier test used, so each test starts with fresh sessions."""
        return f"1555{os.getpid()}{next(_user_numbers)}@s.whatsapp.net"

    def event(self, text: str, user: str, group: str | None = None, **fields):
        """A message from ``user``: in their direct chat, or in the group chat ``group``."""
        from gateway.platforms.base import MessageEvent
        from gateway.session import SessionSource

        source = SessionSource(platform=self.platform, user_id=user, chat_id=group or user, user_name="tester",
                               chat_type="group" if group else "dm")
        return MessageEvent(text=text, message_id="m1", source=source, **fields)

    def send(self, text: str, user: str, group: str | None = None, **fields) -> AgentTurn | None:
        """Deliver ``text`` through the real ``_handle_message``; the agent's turn, or None if none ran."""
        before = len(self.turns)
        asyncio.run(self.runner._handle_message(self.event(text, user, group, **fields)))
        return self.turns[-1] if len(self.turns) > before else None

    def session_key(self, user: str, group: str | None = None) -> str:
        return self.runner._session_key_for_source(self.event("", user, group).source)

    def session_id(self, user: str, group: str | None = None) -> str | None:
        return self.runner.session_store.peek_session_id(self.session_key(user, group))

    def reset_session(self, user: str) -> str:
        return self.runner.session_store.reset_session(self.session_key(user)).session_id
