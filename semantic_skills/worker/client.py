"""The host's side of the routing worker: start it, feed it, restart it, and never wait past a timeout.

Only the standard library is imported here, so a chat gateway can use this
module without loading torch or numpy; the worker is ``python -m
semantic_skills.worker`` (see server.py and, for the wire, protocol.py).
"""

from __future__ import annotations

import collections
import json
import logging
import queue
import subprocess
import sys
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Iterable

from ..errors import DEFAULT_COMMAND
from ..limits import MAX_MESSAGE_CHARS
from ..logs import OnceLogger, logger
from ..settings import EmbedderSettings
from . import protocol
from .answer_times import AnswerTimes
from .launch import launch
from .pending import PendingRequests, result_within
from .protocol import FAILED, READY, STARTING, UNAVAILABLE, WAITING_FOR_INDEX, Reply, Startup
from .status import WorkerStatus

RESTART_DELAYS_SECONDS = (1, 2, 5, 10, 30, 60)
STABLE_AFTER_SECONDS = 60.0
STALL_SECONDS = 10.0  # a worker holding a request this long is hung: it is killed and restarted


class RouterClient:
    """Thread-safe access to a routing worker; no method raises or waits past its timeout.

    The worker starts on a background thread at :meth:`start` with the index
    folder and embedder settings given here or to :meth:`configure` (which
    restarts it when they change), is restarted with backoff if it dies or
    holds a request longer than ``stall_seconds``, and is stopped by
    :meth:`close` (or when this process exits, because its stdin closes).
    ``cli_command`` is how the host's user runs this package's command line,
    for the fixes that messages name, and ``host`` the host's distribution, for
    their install commands. A worker that exits twice in a row is
    reported as failed (requests then fail at once instead of waiting for it)
    until a restart comes up.
    """

    def __init__(self, index_dir: Path, embedder: EmbedderSettings = EmbedderSettings(),
                 python: str = sys.executable, restart_delays: tuple[float, ...] = RESTART_DELAYS_SECONDS,
                 stall_seconds: float = STALL_SECONDS, cli_command: str = DEFAULT_COMMAND, host: str = ""):
        self.index_dir = Path(index_dir)
        self.embedder = embedder
        self._python = python
        self._restart_delays = restart_delays
        self._stall_seconds = stall_seconds
        self._log_once = OnceLogger()
        self._cli_command = cli_command
        self._host = host
        self._lock = threading.Lock()
        self.status = WorkerStatus()
        self._stop = threading.Event()
        self._wake = threading.Event()  # set to cut a restart delay short: settings changed, or closing
        self._supervisor: threading.Thread | None = None
        self._process: subprocess.Popen | None = None
        self._outbox: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()  # None tells the writer to stop
        self._pending = PendingRequests()
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=3)
        self.route_times = AnswerTimes()  # this worker's recent route answers (see answer_times.py)

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start the worker in the background (idempotent)."""
        with self._lock:
            if self._supervisor is not None or self._stop.is_set():
                return
            self._supervisor = threading.Thread(target=self._supervise, name="semantic-skills-supervisor",
                                                daemon=True)
            self._supervisor.start()
            threading.Thread(target=self._write_loop, name="semantic-skills-writer", daemon=True).start()
            threading.Thread(target=self._watch, name="semantic-skills-watchdog", daemon=True).start()

    def configure(self, index_dir: Path, embedder: EmbedderSettings) -> None:
        """Serve ``index_dir`` with ``embedder``; a worker started with other settings is restarted at once."""
        with self._lock:
            if (Path(index_dir), embedder) == (self.index_dir, self.embedder):
                return
            self.index_dir, self.embedder = Path(index_dir), embedder
            process = self._process
        self.status.update(STARTING, "the routing worker is restarting with new settings")
        self._log_once(logging.INFO, f"restarting the routing worker for {index_dir} with the {embedder.backend} "
                                     "embedder settings now configured")
        self._wake.set()
        if process is not None:
            process.kill()

    def close(self, wait: float = 2.0) -> None:
        """Stop the worker and fail every open request, within about ``wait`` + 1 s whatever the worker's state.

        Closing its stdin asks the worker to exit. The writer thread may be
        blocked in a write to a worker that reads nothing (stopped with
        ``SIGSTOP``, hung) with the pipe full, holding the pipe's buffer: the
        close then waits for it, so it runs on a thread of its own, and a
        worker still there after ``wait`` is killed (``SIGKILL`` ends a stopped
        process too), which fails the blocked write and lets everything go.
        """
        self._stop.set()
        self._wake.set()
        self._outbox.put(None)
        process = self._process
        if process is not None and process.poll() is None:
            threading.Thread(target=_close_quietly, args=(process.stdin,), name="semantic-skills-close",
                             daemon=True).start()
            try:
                process.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                process.kill()
                try:
                    process.wait(timeout=1.0)
                except subprocess.TimeoutExpired:
                    pass
        self._pending.fail_all(UNAVAILABLE, "the routing worker was stopped")

    def _supervise(self) -> None:
        failures = 0
        while not self._stop.is_set():
            started = time.monotonic()
            self._wake.clear()
            process = self._launch()
            if process is None:
                code, reason = None, "could not start"
            else:
                stderr = threading.Thread(target=self._read_stderr, args=(process,), name="semantic-skills-stderr",
                                          daemon=True)
                stderr.start()
                self._read_stdout(process)
                code = process.wait()
                stderr.join(timeout=1.0)  # its last lines say why it exited
                reason = f"exited with code {code}"
            self._on_worker_gone()
            if self._stop.is_set():
                return
            if self._wake.is_set():  # stopped for new settings: start again now
                continue
            if time.monotonic() - started > STABLE_AFTER_SECONDS:
                failures = 0
            delay = self._restart_delays[min(failures, len(self._restart_delays) - 1)]
            failures += 1
            self._report_exit(reason, process is not None, failures)
            self._wake.wait(delay)

    def _report_exit(self, reason: str, launched: bool, failures: int) -> None:
        """Say once (per distinct cause) that the worker is gone and how to look into it; fail requests
        at once from the second exit in a row."""
        tail = " | ".join(self._stderr_tail) if launched else ""
        detail = (f"the routing worker {reason}{': ' + tail if tail else ''}; messages are not routed until it "
                  f"runs; check with: {self._cli_command} doctor")
        if failures >= 2:
            self.status.update(FAILED, detail)
        else:
            self.status.update(STARTING, detail)
        self._log_once(logging.WARNING, f"{detail} (it is restarted with backoff)")

    def _launch(self) -> subprocess.Popen | None:
        self._stderr_tail = collections.deque(maxlen=3)
        with self._lock:
            settings = (self.index_dir, self.embedder)
        try:
            process = launch(self._python, Startup(str(settings[0]), settings[1]), self._cli_command,
                             self._host)
        except OSError as exc:
            self._log_once(logging.WARNING, f"cannot start the routing worker ({exc})")
            return None
        with self._lock:
            self._process = process
            outdated = settings != (self.index_dir, self.embedder)
        if self._stop.is_set() or outdated:  # closed or configured anew while starting: let it exit at once
            process.stdin.close()
        return process

    def _on_worker_gone(self) -> None:
        with self._lock:
            self._process = None
        self.route_times.clear()
        self.status.update(STARTING, "the routing worker is restarting")
        self._pending.fail_all(UNAVAILABLE, "the routing worker exited")

    # ------------------------------------------------------------------ pipes

    def _read_stdout(self, process: subprocess.Popen) -> None:
        for raw in process.stdout:
            try:
                message = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(message, dict):
                continue
            if "event" in message:
                self._on_event(message)
            else:
                self._pending.answer(message)

    def _read_stderr(self, process: subprocess.Popen) -> None:
        for raw in process.stderr:
            line = raw.decode("utf-8", errors="replace").rstrip()
            if line:
                self._stderr_tail.append(line[:300])
                logger.debug("semantic-skills worker: %s", line)

    def _write_loop(self) -> None:
        while (line := self._outbox.get()) is not None:
            process = self._process
            try:
                process.stdin.write(line)
                process.stdin.flush()
            except (AttributeError, OSError, ValueError):
                pass  # the worker is gone; its requests fail when the supervisor notices

    def _on_event(self, message: dict) -> None:
        if message.get("event") == "log":
            level = logging.WARNING if message.get("level") == "warning" else logging.INFO
            self._log_once(level, str(message.get("message", "")))
        elif message.get("event") == "state":
            status = self.status
            gated = message.get("gated")
            status.update(str(message.get("state")), str(message.get("detail") or ""),
                          str(message.get("backend") or ""), int(message.get("skills") or 0),
                          tuple(g for g in gated if isinstance(g, dict)) if isinstance(gated, list) else None)
            if isinstance(message.get("route_ms"), (int, float)):  # its warm-up routes: the first estimate
                self.route_times.add(message["route_ms"] / 1000)
            if status.state in (WAITING_FOR_INDEX, FAILED):
                self._log_once(logging.WARNING, status.detail)
            elif status.state == READY:
                self._log_once(logging.INFO, f"routing worker ready ({status.skills} skills, {status.backend})")

    def _watch(self) -> None:
        """Kill a worker that sits on a request for ``stall_seconds``; the supervisor then restarts it."""
        while not self._stop.wait(min(1.0, self._stall_seconds / 2)):
            age, process = self._pending.oldest_age(), self._process
            if age is None or process is None or age < self._stall_seconds:
                continue
            self._log_once(logging.WARNING, f"the routing worker did not answer for {self._stall_seconds:.0f} s; "
                                            "restarting it")
            process.kill()

    # ------------------------------------------------------------------ requests

    @property
    def ready(self) -> bool:
        return self.status.ready

    def wait_ready(self, timeout: float) -> bool:
        """Wait until the worker is ready, or it is clear it will not be soon; True if ready."""
        return self.status.wait_ready(timeout, self._stop.is_set)

    def submit(self, op: str, **payload) -> Future:
        """Send a request now; the future always resolves to a :class:`Reply`."""
        with self._lock:
            if not self.status.ready or self._process is None:
                future: Future = Future()
                future.set_result(Reply(protocol.status_for_state(self.status.state),
                                        error=self.status.detail or "the routing worker is starting"))
                return future
            request_id, future = self._pending.add()
        if isinstance(payload.get("text"), str):
            payload["text"] = payload["text"][:MAX_MESSAGE_CHARS]
        self._outbox.put(protocol.encode({"id": request_id, "op": op, **payload}))
        return future

    def route_async(self, text: str, exclude, floor: float | None = None,
                    inactive_environments: Iterable[str] | None = None) -> Future:
        """Ask which skill to inject for ``text``; an answer with a ``skill`` carries its ``body``.

        ``floor`` overrides the index's similarity floor for this message; a
        skill whose ``environments:`` are all in ``inactive_environments`` is not offered. Each answer's round
        trip, late or not, goes into :attr:`route_times` when it arrives.
        """
        sent = time.monotonic()
        future = self.submit(protocol.ROUTE, text=text, exclude=sorted(exclude), floor=floor,
                             **_environments(inactive_environments))
        future.add_done_callback(lambda done: self._time_answer(done.result(), sent))
        return future

    def _time_answer(self, reply: Reply, sent: float) -> None:
        if reply.ok:  # an answer from the worker: a request it could not take resolves at once, untimed
            self.route_times.add(reply.at - sent)

    def route(self, text: str, exclude, timeout: float, floor: float | None = None, wait_ready: float = 0.0,
              inactive_environments: Iterable[str] | None = None) -> Reply:
        """:meth:`route_async`, waiting at most ``wait_ready`` for the worker plus ``timeout`` for the answer."""
        if wait_ready > 0:
            self.wait_ready(wait_ready)
        return result_within(self.route_async(text, exclude, floor, inactive_environments), timeout)

    def search(self, text: str, limit: int, exclude, timeout: float, wait_ready: float = 0.0,
               inactive_environments: Iterable[str] | None = None) -> Reply:
        """The best skills for ``text`` and the body of the best one."""
        if wait_ready > 0:
            self.wait_ready(wait_ready)
        future = self.submit(protocol.SEARCH, text=text, limit=int(limit), exclude=sorted(exclude),
                             **_environments(inactive_environments))
        return result_within(future, timeout)

    def rebuild(self) -> Future:
        """Ask the worker to bring its index up to date with the skills on disk (see protocol.py)."""
        return self.submit(protocol.REBUILD)

    def claim(self, path: str, timeout: float) -> Reply:
        """Whether the skill at ``path`` would be left out because its name reads as a routed skill's (see
        protocol.py)."""
        return result_within(self.submit(protocol.CLAIM, path=str(path)), timeout)


def _close_quietly(pipe) -> None:
    try:
        pipe.close()
    except (OSError, ValueError):
        pass  # the worker is gone (a broken pipe) or the pipe was closed already


def _environments(inactive: Iterable[str] | None) -> dict:
    return {} if inactive is None else {"inactive_environments": sorted(inactive)}

