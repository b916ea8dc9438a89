"""``semantic-skills doctor`` from the README's "Try it" venv (this one, with Hermes 0.19.0 in it) against a home each
build serves: it checks that build's Hermes, or says plainly that it runs under another Python and gives the command
that does, which then runs as pasted."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from buildkit import OWN_BUILD, Run, once, run
from hermes_testkit import PLUGIN

HERE = Path(sys.executable).parent  # the "Try it" venv's bin folder


def test_doctor_from_another_venv_names_the_hermes_that_serves_the_home(installed, elsewhere, shared):
    """The "Try it" venv first on PATH, the build's own bin after it: against a 0.20.1 home doctor said "Hermes
    0.19.0" and "routing works", of its own venv. Now, from a venv that is not the build's, its one line names the
    build's Hermes and Python, and its fix, run as pasted, is the build's own doctor (``hermesx semantic-skills
    doctor`` on 0.20.1), which says routing works."""
    build, home = installed.build, installed.home
    env = build.env(home)
    env["PATH"] = os.pathsep.join([str(HERE), env["PATH"]])

    def doctor_from_here() -> dict:
        done = run([str(HERE / "semantic-skills"), "doctor", "--json"], env, elsewhere, 300)
        report = json.loads(done.stdout.strip().splitlines()[-1])
        fix = report["checks"][0]["fix"]
        pasted = run(["bash", "-c", fix], env, elsewhere, 600) if fix else None
        return {"done": done, "report": report, "pasted": pasted}

    found = once(shared, build.label, "doctor_from_another_venv", doctor_from_here)
    done, report = Run(**found["done"]), found["report"]
    python = report["checks"][0]
    if build.label == OWN_BUILD:  # this very venv serves the home: every check runs
        assert report["ok"] and python["status"] == "ok", done.explain()
    else:
        assert done.returncode == 1 and not report["ok"] and "routing works" not in done.stdout, done.explain()
        assert [c["name"] for c in report["checks"]] == ["python"] and python["status"] == "fail", done.explain()
    served = python["facts"]["served_by"]  # what the build's Hermes recorded when it loaded the plugin
    assert Path(served["python"]).parent.resolve() == build.bin.resolve() and build.label in served["version"], served
    if build.label == OWN_BUILD:
        assert f"which {build.command} (Hermes {served['version']}) runs the plugin with" in python["detail"]
        return
    assert f"{build.command} (Hermes {served['version']}) runs the plugin for this home with" in python["detail"]
    command = python["fix"].removeprefix(f"HERMES_HOME={home} ").removesuffix(f" {PLUGIN} doctor")
    assert os.path.basename(command) == build.command, python["fix"]  # bare where PATH finds the build's own
    assert python["fix"] in report["verdict"], report
    pasted = Run(**found["pasted"])
    assert pasted.returncode == 0 and pasted.stdout.strip().splitlines()[-1] == "routing works", pasted.explain()
    assert f"Hermes {served['version']}" in pasted.stdout, pasted.explain()
