"""Misspelt settings on each build: ``doctor``'s fix, run as pasted with the build's own Hermes, moves each value to
the setting meant, whatever Hermes' ``config set`` makes of the text it is given."""

from __future__ import annotations

import json
import subprocess

import yaml

from semantic_skills.hermes.config import PluginSettings, read_settings, unknown_settings

from buildkit import Run, once
from hermes_testkit import PLUGIN

FOLDER = "/tmp/it's a $HOME `x`; folder"  # quotes, a variable, a command and a separator: text to the shell
MISSPELT = {"treshold": 0.5, "prompt_mod": "full", "index_dri": FOLDER, "record_decision": False,
            "embeder": {"batch_size": 16}, "max_skill_char": [1000, 2000]}


def test_doctors_fix_for_misspelt_settings_moves_each_value_to_the_setting_meant(installed, elsewhere, shared):
    """``treshold: 0.5`` beside ``threshold: 0.45`` (set earlier, as the README's Configure block does): the fix
    unset the typo and kept 0.45, so the 0.5 the user typed was gone. Now each value goes to the setting meant (a
    mapping field by field, text with shell characters intact), and ``or:`` keeps the 0.45 instead."""
    build, home = installed.build, installed.home

    def misspell_and_fix() -> dict:
        path = home / "config.yaml"
        original = path.read_text()
        config = yaml.safe_load(original)
        entry = config["plugins"].setdefault("entries", {}).setdefault(PLUGIN, {})
        settings = entry.setdefault("settings", {})
        settings.update(threshold=0.45, **MISSPELT)
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        try:
            doctor = build.run(home, PLUGIN, "doctor", "--json", cwd=elsewhere)
            line = {c["name"]: c for c in json.loads(doctor.stdout.strip().splitlines()[-1])["checks"]}["settings"]
            fixed = subprocess.run(["bash", "-c", line["fix"]], env=build.env(home), cwd=elsewhere, text=True,
                                   capture_output=True, stdin=subprocess.DEVNULL, timeout=600)
            return {"doctor": doctor, "line": line, "fixed": {"returncode": fixed.returncode,
                                                             "output": fixed.stdout + fixed.stderr},
                    "config": yaml.safe_load(path.read_text())}
        finally:
            path.write_text(original)

    done = once(shared, build.label, "misspelt_settings", misspell_and_fix)
    line, fixed, config = done["line"], done["fixed"], done["config"]
    assert line["status"] == "warn" and fixed["returncode"] == 0, Run(**done["doctor"]).explain() + fixed["output"]
    assert line["alternative"].endswith(f"config unset plugins.entries.{PLUGIN}.settings.treshold"), line
    assert "settings.threshold at 0.45" in line["alternative"], line
    settings, problems = read_settings(config)
    assert not unknown_settings(config), config["plugins"]["entries"][PLUGIN]
    assert (settings.floor, settings.prompt_mode, settings.index_dir, settings.record_decisions,
            settings.embedder.batch_size) == (0.5, "full", FOLDER, False, 16)
    # a list: Hermes 0.22 reads the flow sequence back as a list, 0.19 and 0.20 keep its text; no setting takes one
    assert [(p.key, p.using) for p in problems] == [("max_skill_chars", PluginSettings.max_skill_chars)], problems
    assert problems[0].value in ([1000, 2000], "[1000, 2000]"), problems
    assert PLUGIN in config["plugins"]["enabled"]
