"""Plain helpers for the reliability catalogue (fixtures live in conftest.py)."""

from __future__ import annotations

import os
import shutil
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "hermes"))  # hermes_testkit

from support import EXAMPLES, REPO, write_skill  # noqa: E402

WORKER_READY_SECONDS = 240
KEY_ENV = "RELIABILITY_EMBEDDINGS_KEY"

# Skills Hermes would not offer, each the best match for its own query.
FORBIDDEN = {
    "quarantined": ("tarot-reading", ".hub/quarantine/tarot-reading",
                    "Read my tarot cards and interpret a three card spread about my career"),
    "disabled": ("sourdough-baking", "cooking/sourdough-baking",
                 "Bake sourdough bread: feed the starter, stretch and fold the dough, proof and score the loaf"),
    "disabled on whatsapp": ("bird-watching", "nature/bird-watching",
                             "Identify garden birds from their song, their plumage and their flight"),
    "for macos only": ("macos-keychain", "macos/macos-keychain",
                       "Store and look up passwords in the macOS Keychain with the security command"),
    "for a chat platform, not an OS": ("telegram-stickers", "chat/telegram-stickers",
                                       "Design animated Telegram sticker packs and upload them with the sticker bot"),
}
PLATFORMS = {"macos-keychain": "[macos]", "telegram-stickers": "[telegram]"}
HERMES_CONFIG = {
    "skills": {"disabled": ["sourdough-baking"], "platform_disabled": {"whatsapp": ["bird-watching"]}},
    "plugins": {"enabled": ["semantic-skills"]},
}


def write_forbidden_skills(skills_dir: Path) -> None:
    for name, folder, description in FORBIDDEN.values():
        platforms = f"platforms: {PLATFORMS[name]}\n" if name in PLATFORMS else ""
        write_skill(skills_dir, folder, f"---\nname: {name}\ndescription: {description}\n{platforms}---\n"
                                        f"# {name}\n\n{description}.\n")


def make_home(root: Path, settings: dict | None = None, skills: Path | None = EXAMPLES / "skills") -> Path:
    """A Hermes home under ``root``: the plugin linked into ``plugins/``, ``skills`` copied, config written."""
    home = root / "hermes_home"
    (home / "plugins").mkdir(parents=True)
    (home / "plugins" / "semantic-skills").symlink_to(REPO, target_is_directory=True)
    if skills is not None:
        shutil.copytree(skills, home / "skills")
    config = yaml.safe_load(yaml.safe_dump(HERMES_CONFIG))
    config["plugins"]["entries"] = {"semantic-skills": {"settings": {
        "index_dir": str(home / "skills_index"), **(settings or {})}}}
    (home / "config.yaml").write_text(yaml.safe_dump(config))
    return home


@contextmanager
def plugin_loaded(home: Path):
    """The plugin loaded for ``home`` by a fresh Hermes plugin manager; yields its runtime."""
    import hermes_cli.plugins as hermes_plugins
    from tools.registry import registry

    from semantic_skills.hermes import runtime as runtime_module
    from semantic_skills.hermes import tool

    previous_tool = registry._tools.get(tool.NAME)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HERMES_HOME", str(home))
        patch.setattr(hermes_plugins, "_plugin_manager", hermes_plugins.PluginManager())
        patch.setattr(runtime_module, "_current", None)
        hermes_plugins.get_plugin_manager().discover_and_load(force=True)
        runtime = runtime_module.current_runtime()
        assert runtime is not None and runtime.home == home, "the plugin did not load"
        try:
            yield runtime
        finally:
            runtime.close()
            with registry._lock:
                if previous_tool is None:
                    registry._tools.pop(tool.NAME, None)
                else:
                    registry._tools[tool.NAME] = previous_tool


def litellm_settings(url: str, **extra) -> dict:
    """Plugin settings for a litellm embedder at ``url``."""
    return {"embedder": {"backend": "litellm", "model": "openai/fake-embed", "api_base": url,
                         "api_key_env": KEY_ENV, **extra}}


def rss_kib(pid: int | None = None) -> int:
    """Resident memory of a process (this one by default), in KiB, from /proc."""
    status = Path(f"/proc/{pid or os.getpid()}/status").read_text()
    return int(status.split("VmRSS:")[1].split()[0])
