"""Run with a Hermes build's own Python: two agent turns, then the same turn with a FIFO as
``$HERMES_HOME/skills/_org/.active_org``, through the plugin as Hermes loads it from ``$HERMES_HOME/plugins``;
prints one JSON line: whether the plugin loaded and its worker was ready, each turn's seconds, and the requests the
fake model on 127.0.0.1 received.

``python fifo_marker.py``. A turn that waits on the FIFO longer than ``HUNG_SECONDS`` is reported as hung (None);
the FIFO is then opened for writing and closed, so the stuck reader goes and the process can end.
"""

import json
import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from agent_turns import DOCKER, load_plugin, make_agent, use_model  # noqa: E402

HUNG_SECONDS = 90


def turn(base_url: str, session_id: str) -> float | None:
    """Seconds one agent turn on ``DOCKER`` took, or None when it had not ended after ``HUNG_SECONDS``."""
    ended = threading.Event()

    def run() -> None:
        make_agent(base_url, session_id, platform="cli").run_conversation(DOCKER)
        ended.set()

    started = time.monotonic()
    threading.Thread(target=run, daemon=True).start()
    return time.monotonic() - started if ended.wait(HUNG_SECONDS) else None


def main() -> None:
    report = load_plugin()
    from fake_llm import FakeChatServer

    marker = Path(os.environ["HERMES_HOME"]) / "skills" / "_org" / ".active_org"
    with FakeChatServer() as llm:
        use_model(llm.base_url)
        report["first"] = turn(llm.base_url, "first-turn")  # what a process pays once (10 s on 0.22) is paid here
        report["without"] = turn(llm.base_url, "before-the-fifo")
        marker.parent.mkdir(exist_ok=True)
        os.mkfifo(marker)
        start = len(llm.requests)
        try:
            report["with_fifo"] = turn(llm.base_url, "with-the-fifo")
        finally:
            try:
                os.close(os.open(marker, os.O_WRONLY | os.O_NONBLOCK))  # a reader stuck opening it goes
            except OSError:  # none: the plugin never opened it
                pass
        report["requests"] = llm.requests[start:]
    print(json.dumps(report))


if __name__ == "__main__":
    main()
