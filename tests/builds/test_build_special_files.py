"""A FIFO as the active organisation's marker costs an agent turn on each build nothing (#33.1).

Hermes 0.19 and 0.22 never read ``skills/_org/.active_org`` themselves; the
plugin did, with a plain read that waits for a writer: on 0.19 ``hermes chat
-q`` hung past 120 s with no model call, on 0.22 Hermes gave the hook up after
30 s, so each turn cost 40 s instead of 10 s. drivers/fifo_marker.py runs a
real ``AIAgent`` turn, as ``hermes chat -q`` does, before and with the FIFO, in
a copy of the build's installed home (its plugin, settings and index).
"""

from __future__ import annotations

import json
import shutil

import pytest

from buildkit import DOCKER, DRIVERS, agent_loop, reads_the_org_marker_itself, user_message

MARGIN_SECONDS = 1.5  # a turn with the FIFO may take this much more than one without: 30 s on 0.22, or forever


def test_a_fifo_as_the_active_org_marker_costs_an_agent_turn_nothing(build, elsewhere, tmp_path, request):
    if reads_the_org_marker_itself(build):
        pytest.skip(f"Hermes {build.version} reads _org/.active_org itself, so a FIFO there hangs it without the "
                    "plugin")
    installed = request.getfixturevalue("installed")  # only now: installing a build takes a minute or more
    home = tmp_path / "home"
    shutil.copytree(installed.home, home, symlinks=True, ignore=shutil.ignore_patterns("logs", "sessions", "state.db*"))

    done = build.run_python(home, str(DRIVERS / "fifo_marker.py"), cwd=elsewhere)

    assert done.returncode == 0, done.explain()
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["loaded"] and report["ready"], report
    assert report["with_fifo"] is not None, "the agent turn waited on the FIFO"
    assert report["with_fifo"] < report["without"] + MARGIN_SECONDS, (report["with_fifo"], report["without"])
    sent = agent_loop(report["requests"])
    assert len(sent) == 1 and user_message(sent[0]).startswith(DOCKER)
    assert user_message(sent[0]).count('<skill-context name="docker-compose-debug"') == 1
