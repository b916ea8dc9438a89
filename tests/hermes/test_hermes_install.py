"""Installing, loading and updating the plugin with the real ``hermes`` command line."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import yaml

from hermes_testkit import (
    HERMES,
    NO_RUNTIME_INSTALLS,
    PLUGIN,
    REPO,
    UserInstall,
    build_index,
    git,
    install_as_a_user,
    run_hermes,
    subprocess_env,
)

HOOKS = {"pre_gateway_dispatch", "pre_llm_call", "on_session_reset"}


def test_install_enables_the_plugin_and_shows_the_next_steps(hermes_home):
    installed = hermes_home.path / "plugins" / PLUGIN
    assert (installed / "plugin.yaml").is_file() and (installed / "after-install.md").is_file()
    config = yaml.safe_load((hermes_home.path / "config.yaml").read_text())
    assert PLUGIN in config["plugins"]["enabled"]
    assert "allow_tool_override" not in config["plugins"].get("entries", {}).get(PLUGIN, {})  # never asked
    for step in ('pip install -e "$PLUGIN"', 'PLUGIN="${HERMES_HOME:-$HOME/.hermes}/plugins/semantic-skills"',
                 "--index-url \"$CPU_TORCH\"", '"$HERMES_BIN" semantic-skills build',
                 '"$HERMES_BIN" semantic-skills doctor',
                 "Only if you run a gateway", "--no-allow-tool-override"):
        assert step in hermes_home.install_output
    assert "~/.hermes/plugins/semantic-skills" not in hermes_home.install_output


def test_after_install_commands_fit_the_panel_and_find_this_homes_plugin(hermes_home):
    text = (REPO / "after-install.md").read_text(encoding="utf-8")
    commands = [line for block in text.split("```bash\n")[1:] for line in block.split("```")[0].splitlines()]
    indented = [line for line in text.splitlines() if line.startswith("    ")]  # shown as code blocks too
    # Hermes shows them in an 80-column panel
    assert commands and indented and all(len(line) <= 74 for line in commands + [line[4:] for line in indented])
    assignments = [line for line in commands if line.startswith(("HERMES_BIN=", "HERMES_PY=", "PLUGIN=", "Q=",
                                                                 "HERMES_DIST="))]
    script = "\n".join(assignments + ['printf "%s\\n%s\\n%s" "$HERMES_PY" "$PLUGIN" "$HERMES_DIST"'])
    env = {"PATH": f"{HERMES.parent}:/usr/bin:/bin", "HOME": "/nonexistent", "HERMES_HOME": str(hermes_home.path)}
    python, plugin, distribution = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True,
                                                  check=True).stdout.splitlines()

    assert len(set(assignments)) == 5  # HERMES_BIN's line again wherever a block needs it
    assert Path(python) == HERMES.parent / "python" and Path(python).exists()  # the venv's own interpreter
    assert Path(plugin) == hermes_home.path / "plugins" / PLUGIN and Path(plugin, "pyproject.toml").is_file()
    assert distribution == "hermes-agent"  # what installed this Hermes: pip keeps its pins, installs no other


def test_plugin_manager_loads_both_hooks_and_the_tool(plugin_manager):
    from tools.registry import registry

    loaded = plugin_manager._plugins[PLUGIN]
    assert loaded.enabled and loaded.error is None
    assert loaded.manifest.source == "user"  # the folder, with its plugin.yaml: the package declares no entry point
    assert HOOKS <= set(loaded.hooks_registered)
    assert loaded.tools_registered == ["search_skills"]
    assert registry.get_entry("search_skills").toolset == "skills"  # Hermes declares it: checked before plugins load
    assert PLUGIN in plugin_manager._cli_commands


def test_hermes_semantic_skills_command_runs_the_plugin_cli(hermes_home):
    done = run_hermes(hermes_home.path, "semantic-skills", "status", "--json")

    assert done.returncode == 0, done.stdout + done.stderr
    status = json.loads(done.stdout.strip().splitlines()[-1])
    assert status["index_dir"] == str(hermes_home.index_dir) and status["skills"] >= 10


def test_hermes_semantic_skills_history_reads_this_homes_decision_record(hermes_home):
    from semantic_skills.decision_log import INJECTED, DecisionEntry, DecisionLog
    from semantic_skills.hermes.config import decision_record_path

    log = DecisionLog(decision_record_path(hermes_home.path), 4_000_000)
    for n in range(3):
        log.append(DecisionEntry(time.time(), "gateway", "whatsapp", INJECTED, skill="history-probe", mode="full",
                                 latency_ms=10.0 + n))
    log.close()

    as_json, as_text = (run_hermes(hermes_home.path, "semantic-skills", "history", *args) for args in (["--json"], []))

    assert as_json.returncode == as_text.returncode == 0, as_json.stderr + as_text.stderr
    summary = json.loads(as_json.stdout)
    assert summary["record"] == str(decision_record_path(hermes_home.path))
    assert {"skill": "history-probe", "injected": 3, "full": 3, "hint": 0} in summary["most_injected"]
    assert "history-probe (full 3, hint 0)" in as_text.stdout


def test_an_update_keeps_an_earlier_releases_index_and_the_next_command_moves_it_into_the_home(tmp_path,
                                                                                             plugin_checkout):
    home = tmp_path / "home"
    source = tmp_path / "source"
    git(tmp_path, "clone", "-q", str(plugin_checkout), str(source))
    assert run_hermes(home, "plugins", "install", source.as_uri(), "--enable").returncode == 0
    installed = home / "plugins" / PLUGIN
    legacy = installed / "skills_index"  # where earlier releases built the index: never tracked
    build_index(home, "--index-dir", str(legacy))
    index = (legacy / "manifest.json").read_bytes()
    (source / "CHANGES.md").write_text("a new release\n")
    git(source, "add", "CHANGES.md")
    git(source, "commit", "-qm", "release")

    updated = run_hermes(home, "plugins", "update", PLUGIN)
    kept = (legacy / "manifest.json").read_bytes()
    status = run_hermes(home, PLUGIN, "status", "--json")

    assert updated.returncode == 0, updated.stdout + updated.stderr
    assert (installed / "CHANGES.md").read_text() == "a new release\n" and kept == index
    moved_to = home / PLUGIN / "skills_index"
    assert status.returncode == 0, status.stdout + status.stderr
    assert status.stderr.strip() == f"moved this home's index from {legacy}, where earlier releases kept it, to " \
                                    f"{moved_to}"
    assert json.loads(status.stdout.strip().splitlines()[-1])["index_dir"] == str(moved_to)
    assert (moved_to / "manifest.json").read_bytes() == index and not legacy.exists()


NEW_PACKAGE = "not-a-package-anyone-installed"


def test_an_update_runs_from_the_next_start_and_doctor_names_a_dependency_it_adds(tmp_path, plugin_checkout,
                                                                                  default_hermes_home):
    """A user of the default install: doctor's fix is that install's pip step (the onnx embedder has its own)."""
    source = tmp_path / "source"
    git(tmp_path, "clone", "-q", str(plugin_checkout), str(source))
    user = install_as_a_user(tmp_path / "user", source.as_uri())
    assert user.run("config", "set", f"plugins.entries.{PLUGIN}.settings.index_dir",
                    str(default_hermes_home.index_dir)).returncode == 0  # an index, built
    assert user.run(PLUGIN, "--version").stdout.strip() == "semantic-skills, version 0.1.0"
    version_file, pyproject = source / "semantic_skills" / "__init__.py", source / "pyproject.toml"
    version_file.write_text(version_file.read_text().replace('__version__ = "0.1.0"', '__version__ = "0.2.0"'))
    added = f'"click>=8.1,<9", "{NEW_PACKAGE}>=1.0,<2",'
    pyproject.write_text(pyproject.read_text().replace('"click>=8.1,<9",', added))
    git(source, "commit", "-qam", "release 0.2.0: a new dependency")

    updated = user.run("plugins", "update", PLUGIN)
    version = user.run(PLUGIN, "--version")
    doctor = user.run(PLUGIN, "doctor", "--json")

    assert updated.returncode == 0, updated.stdout + updated.stderr
    assert version.stdout.strip() == "semantic-skills, version 0.2.0"  # live at the next start, no pip step
    report = json.loads(doctor.stdout.strip().splitlines()[-1])
    checks = {check["name"]: check for check in report["checks"]}
    dependencies = checks["dependencies"]
    assert dependencies["status"] == "warn" and dependencies["facts"]["missing"] == [NEW_PACKAGE]
    assert dependencies["detail"] == (f"the Python that runs the plugin ({user.python}) lacks {NEW_PACKAGE}, which "
                                      "the plugin's code declares; the worker check below shows whether routing "
                                      "works without it")
    # the pip step again, with the torch extra: PyTorch is installed here, so the default embedder is the one on it
    assert dependencies["fix"] == f"{user.python} -m pip install -e '{user.plugin}[torch]' hermes-agent"
    # it hides nothing that can still run: this release routes without the package, and doctor says so
    assert checks["index"]["status"] != "skip" and checks["worker"]["status"] == "ok"
    assert doctor.returncode == 0 and report["ok"] is True
    assert report["verdict"].startswith("routing works, with these warnings:\n  dependencies: ")


GATEWAY_PROCESS = textwrap.dedent("""
    import json, sys
    sys.path[:0] = [{testdir!r}, {supportdir!r}]
    from hermes_cli.plugins import get_plugin_manager, invoke_hook
    from hermes_testkit import Gateway
    from semantic_skills.hermes.runtime import current_runtime

    get_plugin_manager().discover_and_load(force=True)
    ready = current_runtime().client.wait_ready(240)
    from pathlib import Path
    gateway = Gateway(Path({sessions!r}))
    turn = gateway.send("My postgres container keeps restarting and the web service can't connect to it",
                        gateway.new_user())
    invoke_hook("pre_llm_call", session_id="cli-1", user_message="convert a scanned PDF to markdown",
                platform="cli", sender_id="")
    from tools.registry import registry
    found = json.loads(registry.dispatch("search_skills", {{"query": "pdf to markdown"}}))
    from hermes_cli.middleware import apply_llm_request_middleware
    from agent.prompt_builder import build_skills_system_prompt
    listing = build_skills_system_prompt(available_tools={{"skill_view", "search_skills"}})
    apply_llm_request_middleware({{"messages": [{{"role": "system", "content": "Hermes.\\n\\n" + listing}}]}},
                                 session_id="cli-1", platform="cli")
    heavy = sorted(m for m in ("numpy", "torch", "faiss", "sentence_transformers", "transformers", "litellm")
                   if m in sys.modules)
    print(json.dumps({{"ready": ready, "injected": turn.text.startswith("<skill-context"),
                       "tool": found["results"][0]["name"], "heavy": heavy}}))
""")


def test_hermes_process_never_imports_the_heavy_libraries(default_hermes_home, tmp_path):
    """On the default install, whose worker imports PyTorch: Hermes' own process imports none of it."""
    env = dict(subprocess_env(default_hermes_home.path), WHATSAPP_ALLOWED_USERS="*")
    script = GATEWAY_PROCESS.format(testdir=str(REPO / "tests" / "hermes"), supportdir=str(REPO / "tests"),
                                    sessions=str(tmp_path / "sessions"))
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)

    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"ready": True, "injected": True, "tool": "pdf-to-markdown", "heavy": []}


# --------------------------------------------------------------------------- removing it


def hermes_start(user: UserInstall, llm) -> str:
    """A one-shot ``hermes chat`` against the fake model: everything the start prints and logs."""
    config_path = user.home / "config.yaml"
    config = {**yaml.safe_load(config_path.read_text()), **NO_RUNTIME_INSTALLS}
    config["model"] = {"default": "fake-model", "provider": "custom", "base_url": llm.base_url, "api_key": "sk-test"}
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    log = user.home / "logs" / "agent.log"
    before = log.read_text() if log.exists() else ""
    done = user.run("chat", "-q", "hello", "-Q", timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr + log.read_text()[len(before):]


def test_removing_the_plugin_leaves_hermes_starting_clean_and_the_rest_takes_one_command_each(tmp_path,
                                                                                                plugin_checkout, llm):
    user = install_as_a_user(tmp_path, plugin_checkout.as_uri())
    assert user.run("config", "set", f"plugins.entries.{PLUGIN}.settings.threshold", "0.45").returncode == 0
    (user.home / PLUGIN).mkdir()  # the plugin's state folder, as a routed chat leaves it
    (user.home / PLUGIN / "dedupe.json").write_text('{"version": 3, "clean": true, "chats": [], "blocks": []}')
    (user.home / PLUGIN / "decisions.jsonl").write_text("")
    planned = user.run(PLUGIN, "uninstall", "--json")
    assert planned.returncode == 0, planned.stdout + planned.stderr
    steps = json.loads(planned.stdout.strip().splitlines()[-1])
    commands = [step["command"] for step in steps]
    assert "decision record" in steps[-1]["removes"]  # what the state folder holds, named

    removed = user.run("plugins", "remove", PLUGIN)
    listed = user.run("plugins", "list", "--plain")
    started = hermes_start(user, llm)

    assert removed.returncode == listed.returncode == 0
    assert PLUGIN not in listed.stdout, listed.stdout
    assert "Failed to load plugin" not in started and PLUGIN not in started, started
    hermes = f"HERMES_HOME={user.home} hermes"
    pip, packages = commands[3].split()[:5], commands[3].split()[5:]
    assert commands[:3] == [f"{hermes} config unset plugins.entries.{PLUGIN}",  # config.yaml first (0.22's
                            f"{hermes} config unset plugins.enabled.0",  # `plugins remove` changes plugins.enabled)
                            f"{hermes} plugins remove {PLUGIN}"]
    assert pip == [str(user.python), "-m", "pip", "uninstall", "-y"] and packages[0] == "semantic-skills"
    assert {"torch", "sentence-transformers", "faiss-cpu", "bm25s"} <= set(packages)
    assert not {"pyyaml", "packaging", "httpx", "hermes-agent", "pip"} & set(packages)  # Hermes' own stay
    assert commands[4:] == [f"rm -rf {user.home / PLUGIN}"]

    # The packages are this test's own venv's, lent to the user's: only the plugin's package is removed here.
    for command in [*commands[:2], f"{user.python} -m pip uninstall -y semantic-skills", *commands[4:]]:
        done = subprocess.run(["bash", "-c", command], env={"PATH": f"{user.bin}:/usr/bin:/bin"}, text=True,
                              capture_output=True, timeout=300, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, command + "\n" + done.stdout + done.stderr
    config = yaml.safe_load((user.home / "config.yaml").read_text())
    assert PLUGIN not in config["plugins"].get("entries", {}) and PLUGIN not in config["plugins"]["enabled"]
    assert not (user.home / PLUGIN).exists() and not (user.bin / PLUGIN).exists()
    assert subprocess.run([str(user.python), "-m", "pip", "show", "semantic-skills"],
                          capture_output=True).returncode == 1
