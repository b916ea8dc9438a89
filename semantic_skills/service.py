"""Routing in a worker process, and the client a host process uses to reach it.

The host (for example a chat gateway) must never import torch or numpy or
wait on a model load, so routing runs in a child process::

    python -m semantic_skills.service --index-dir DIR [--inactive-environments kanban,s6]

The worker reads one JSON request per line on stdin and answers one JSON line
per request on stdout, in any order, matched by ``id``::

    {"id": 1, "op": "route",  "text": "...", "exclude": [...], "max_chars": 16000}
    {"id": 2, "op": "search", "text": "...", "limit": 3, "exclude": [], "max_chars": 16000}

``exclude`` names the skills the host's config turns off for this message
(``skills.disabled`` and the chat platform's ``skills.platform_disabled``).
    {"id": 3, "op": "ping"}

Answers are ``{"id": 1, "ok": true, ...}`` or ``{"id": 1, "ok": false,
"status": "index_missing" | "not_ready" | "error", "error": "..."}``. Lines with
an ``event`` key instead of an ``id`` report the worker's state
(``waiting_for_index``, ``loading``, ``ready``, ``error``) and log messages.

The worker waits for an index to appear, swaps in a rebuilt index at most
about once a second (keeping the old one if the new one cannot be used), and
exits when its stdin closes, so it never outlives its host. It never offers
a skill whose ``environments:`` are all among the host's inactive ones.

This module imports only the standard library at the top: the client side is
safe to import anywhere.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from .errors import first_line
from .limits import MAX_MESSAGE_CHARS
from .logs import OnceLogger, logger

RELOAD_INTERVAL_SECONDS = 1.0
RESTART_DELAYS_SECONDS = (1, 2, 5, 10, 30, 60)
# The worker embeds one short query at a time, so numpy, torch and onnxruntime
# run single-threaded there: a second thread saves little on such small inputs
# and, when the cores are busy, makes a query several times slower (see
# docs/performance.md). Builds, in their own processes, keep every core.
WORKER_THREAD_LIMITS = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
STABLE_AFTER_SECONDS = 60.0
STALL_SECONDS = 10.0  # a worker holding a request this long is hung: it is killed and restarted

# Worker states, as reported in ``state`` events.
STARTING = "starting"
WAITING_FOR_INDEX = "waiting_for_index"
LOADING = "loading"
READY = "ready"
FAILED = "error"

# Reply statuses.
OK = "ok"
TIMEOUT = "timeout"
NOT_READY = "not_ready"
INDEX_MISSING = "index_missing"
ERROR = "error"
UNAVAILABLE = "unavailable"


# =========================================================================== worker


class RoutingService:
    """The worker's state: one :class:`SkillRouter`, loaded and reloaded off the request thread."""

    def __init__(self, index_dir: Path, emit, inactive_environments: frozenset[str]):
        self.index_dir = Path(index_dir)
        self._emit = emit
        self._inactive_environments = inactive_environments
        self._router = None
        self._state = STARTING
        self._detail = ""
        self._markdown: collections.OrderedDict[str, tuple[tuple, str]] = collections.OrderedDict()

    # ------------------------------------------------------------------ loading

    def _set_state(self, state: str, detail: str = "", **extra) -> None:
        if (state, detail) == (self._state, self._detail) and not extra:
            return
        self._state, self._detail = state, detail
        self._emit({"event": "state", "state": state, "detail": detail, **extra})

    def _log(self, level: str, message: str) -> None:
        self._emit({"event": "log", "level": level, "message": message})

    def run_loader(self) -> None:
        """Open the index when it appears, then swap in rebuilds; returns only on a broken install."""
        try:
            from .index.store import manifest_stamp
            from .hermes.config import hermes_home, load_config, plugin_settings
        except Exception as exc:  # pragma: no cover - a broken install
            self._set_state(FAILED, f"cannot import semantic_skills ({first_line(exc)})")
            return
        failed_stamp = None
        while True:
            stamp = manifest_stamp(self.index_dir)
            if self._router is None:
                if stamp is None:
                    self._set_state(
                        WAITING_FOR_INDEX,
                        f"no skill index in {self.index_dir}; build one with: semantic-skills build",
                    )
                elif stamp != failed_stamp:
                    try:
                        self._open(plugin_settings(load_config(hermes_home())))
                        failed_stamp = None
                    except ImportError as exc:
                        self._set_state(
                            FAILED,
                            f"a dependency is missing ({first_line(exc)}); install the plugin into Hermes' "
                            f"Python with: {sys.executable} -m pip install -e <plugin folder>",
                        )
                        return
                    except Exception as exc:  # noqa: BLE001 - report it and wait for a rebuild
                        failed_stamp = stamp
                        self._set_state(FAILED, first_line(exc))
            elif stamp != failed_stamp:
                try:
                    if self._router.reload_if_changed(min_interval=0.0):
                        skills = len(self._router.manifest.skills)
                        self._log("info", f"reloaded the rebuilt index in {self.index_dir} ({skills} skills)")
                        self._set_state(READY, "", skills=skills, backend=self._router.embedder.identity.backend)
                except Exception as exc:  # noqa: BLE001 - keep serving the index we have
                    failed_stamp = stamp
                    self._log("warning", f"kept the previous index: {first_line(exc)}")
            time.sleep(RELOAD_INTERVAL_SECONDS)

    def _open(self, settings) -> None:
        from .router import SkillRouter

        self._set_state(LOADING, f"loading the index in {self.index_dir} and its embedder")
        router = SkillRouter.from_settings(self.index_dir, settings.embedder, floor=settings.floor,
                                           inactive_environments=self._inactive_environments)
        self._router = router
        self._set_state(
            READY, "", skills=len(router.manifest.skills), backend=router.embedder.identity.backend
        )

    # ------------------------------------------------------------------ requests

    def handle(self, request: dict) -> dict:
        """Answer one request; never raises."""
        op = request.get("op")
        try:
            if op == "ping":
                return {"ok": True, "state": self._state, "detail": self._detail}
            router = self._router
            if router is None:
                status = {WAITING_FOR_INDEX: INDEX_MISSING, FAILED: ERROR}.get(self._state, NOT_READY)
                return {"ok": False, "status": status, "error": self._detail or "the index is loading"}
            text = str(request.get("text") or "")[:MAX_MESSAGE_CHARS]
            exclude = frozenset(str(n) for n in request.get("exclude") or ())
            max_chars = int(request.get("max_chars") or 16000)
            if op == "route":
                return self._route(router, text, exclude, max_chars)
            if op == "search":
                limit = max(1, min(10, int(request.get("limit") or 3)))
                return self._search(router, text, limit, exclude, max_chars)
            return {"ok": False, "status": ERROR, "error": f"unknown op {op!r}"}
        except Exception as exc:  # noqa: BLE001 - one bad request must not kill the worker
            return {"ok": False, "status": ERROR, "error": f"{type(exc).__name__}: {first_line(exc)}"}

    def _route(self, router, text, exclude, max_chars) -> dict:
        from .injection import skill_block

        decision = router.route(text, exclude=exclude)
        answer = {"ok": True, "skill": None, "score": round(decision.score, 4), "reason": decision.reason}
        if decision.skill is not None:
            markdown = self._read_markdown(decision.skill.path, router.manifest.roots)
            if markdown is None:
                answer["reason"] = f"the file of skill {decision.skill.name!r} cannot be read"
            else:
                answer["skill"] = decision.skill.name
                answer["block"] = skill_block(decision.skill.name, decision.score, markdown, max_chars)
        return answer

    def _search(self, router, text, limit, exclude, max_chars) -> dict:
        from .injection import cap_body
        from .skills.parsing import strip_front_matter

        found = router.search(text, k=limit, exclude=exclude)
        results = [{"name": c.name, "description": c.description, "score": round(c.score, 4)} for c in found]
        best = None
        if found:
            markdown = self._read_markdown(found[0].path, router.manifest.roots)
            if markdown is not None:
                body = strip_front_matter(markdown).strip("\n")
                best = {"name": found[0].name, "content": cap_body(found[0].name, body, max_chars),
                        "truncated": len(body) > max_chars}
        return {"ok": True, "results": results, "best": best}

    def _read_markdown(self, path: str, roots: list[str]) -> str | None:
        """The text of a SKILL.md named by the index, cached on its inode, mtime and size.

        Only a regular file that still lies inside one of the index's skills
        roots is read: a SKILL.md swapped after the build for a link to another
        file (or for a FIFO, which would block) gives None.
        """
        from .files import file_stamp
        from .skills.discovery import read_skill_file
        from .skills.parsing import SkillFileError

        try:
            real = Path(path).resolve()
            if not any(real.is_relative_to(Path(root).resolve()) for root in roots):
                return None
            stamp = file_stamp(real)
            cached = self._markdown.get(path)
            if cached and cached[0] == stamp:
                self._markdown.move_to_end(path)
                return cached[1]
            text = read_skill_file(real).decode("utf-8", errors="replace")
        except (OSError, SkillFileError):
            return None
        self._markdown[path] = (stamp, text)
        if len(self._markdown) > 64:
            self._markdown.popitem(last=False)
        return text


def serve(index_dir: Path, inactive_environments: frozenset[str]) -> None:
    """Run the worker on this process's stdin and stdout until stdin closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Keep the protocol channel private: anything a library prints goes to stderr.
    protocol = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    write_lock = threading.Lock()

    def emit(message: dict) -> None:
        line = json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n"
        with write_lock:
            protocol.write(line)

    service = RoutingService(index_dir, emit, inactive_environments)
    threading.Thread(target=service.run_loader, name="semantic-skills-loader", daemon=True).start()
    for raw in sys.stdin.buffer:
        try:
            request = json.loads(raw)
            request_id = request["id"]
        except (ValueError, KeyError, TypeError):
            continue
        answer = service.handle(request)
        answer["id"] = request_id
        try:
            emit(answer)
        except OSError:
            break
    os._exit(0)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m semantic_skills.service", description=__doc__.split("\n\n")[0])
    parser.add_argument("--index-dir", type=Path, required=True, help="The index folder to serve.")
    parser.add_argument("--inactive-environments", default="", metavar="ENV,ENV",
                        help="Environments the host finds inactive (e.g. kanban,s6): skills whose "
                             "environments: are all among them are never offered.")
    args = parser.parse_args(argv)
    serve(args.index_dir, frozenset(e for e in args.inactive_environments.split(",") if e))


# =========================================================================== client


@dataclass(frozen=True)
class Reply:
    """The outcome of one request: ``status`` is ``ok`` or why there is no answer."""

    status: str
    data: dict = field(default_factory=dict)
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.status == OK


def worker_environment() -> dict[str, str]:
    """The environment for a child Python that must import this package.

    The package's parent folder goes first on ``PYTHONPATH``, so a plugin
    loaded as a plain folder (not pip-installed) works too.
    """
    env = dict(os.environ)
    package_parent = str(Path(__file__).resolve().parent.parent)
    current = env.get("PYTHONPATH", "")
    env["PYTHONPATH"] = package_parent + (os.pathsep + current if current else "")
    return env


class RouterClient:
    """Thread-safe access to a routing worker; no method raises or waits past its timeout.

    The worker starts on a background thread at :meth:`start`, is restarted
    with backoff if it dies or holds a request longer than ``stall_seconds``,
    and is stopped by :meth:`close` (or when this process exits, because its
    stdin closes). ``inactive_environments`` is called on that thread before
    each start; the worker never offers a skill whose ``environments:`` are
    all among them.
    """

    def __init__(self, index_dir: Path, python: str = sys.executable,
                 restart_delays: tuple[float, ...] = RESTART_DELAYS_SECONDS,
                 stall_seconds: float = STALL_SECONDS,
                 inactive_environments: Callable[[], Iterable[str]] = frozenset):
        self.index_dir = Path(index_dir)
        self._python = python
        self._inactive_environments = inactive_environments
        self._restart_delays = restart_delays
        self._stall_seconds = stall_seconds
        self._log_once = OnceLogger()
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._state_changed = threading.Condition(self._lock)
        self._stop = threading.Event()
        self._supervisor: threading.Thread | None = None
        self._process: subprocess.Popen | None = None
        self._outbox: collections.deque[bytes] = collections.deque()
        self._outbox_ready = threading.Condition(threading.Lock())
        self._pending: dict[int, tuple[Future, float]] = {}  # id -> (future, when it was sent)
        self._ids = itertools.count(1)
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=3)
        self.state = STARTING
        self.detail = ""
        self.backend = ""
        self.skills = 0

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

    def close(self, wait: float = 2.0) -> None:
        """Stop the worker and fail every open request."""
        self._stop.set()
        with self._outbox_ready:
            self._outbox_ready.notify_all()
        process = self._process
        if process is not None and process.poll() is None:
            try:
                process.stdin.close()
                process.wait(timeout=wait)
            except (OSError, ValueError, subprocess.TimeoutExpired):
                process.kill()
        self._fail_pending(UNAVAILABLE, "the routing worker was stopped")

    def _supervise(self) -> None:
        failures = 0
        while not self._stop.is_set():
            started = time.monotonic()
            process = self._launch()
            if process is None:
                code, reason = None, "could not start"
            else:
                threading.Thread(target=self._read_stderr, args=(process,), name="semantic-skills-stderr",
                                 daemon=True).start()
                self._read_stdout(process)
                code = process.wait()
                reason = f"exited with code {code}"
            self._on_worker_gone()
            if self._stop.is_set():
                return
            if time.monotonic() - started > STABLE_AFTER_SECONDS:
                failures = 0
            delay = self._restart_delays[min(failures, len(self._restart_delays) - 1)]
            failures += 1
            tail = " | ".join(self._stderr_tail) if process is not None else ""
            self._log_once(logging.WARNING, f"the routing worker {reason}{': ' + tail if tail else ''}; "
                                            f"restarting it in {delay} s")
            self._stop.wait(delay)

    def _launch(self) -> subprocess.Popen | None:
        self._stderr_tail = collections.deque(maxlen=3)
        command = [self._python, "-m", "semantic_skills.service", "--index-dir", str(self.index_dir),
                   "--inactive-environments", ",".join(sorted(self._inactive_environments()))]
        try:
            process = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env={**worker_environment(), **WORKER_THREAD_LIMITS}, start_new_session=True, close_fds=True,
            )
        except OSError as exc:
            self._log_once(logging.WARNING, f"cannot start the routing worker ({exc})")
            return None
        with self._lock:
            self._process = process
        if self._stop.is_set():  # closed while starting: let it exit at once
            process.stdin.close()
        return process

    def _on_worker_gone(self) -> None:
        with self._lock:
            self._process = None
            self._set_state_locked(STARTING, "the routing worker is restarting")
        self._fail_pending(UNAVAILABLE, "the routing worker exited")

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
                continue
            with self._lock:
                future, _sent = self._pending.pop(message.get("id"), (None, 0.0))
            if future is not None and not future.done():
                if message.get("ok"):
                    future.set_result(Reply(OK, message))
                else:
                    future.set_result(Reply(str(message.get("status") or ERROR), message,
                                            str(message.get("error") or "")))

    def _read_stderr(self, process: subprocess.Popen) -> None:
        for raw in process.stderr:
            line = raw.decode("utf-8", errors="replace").rstrip()
            if line:
                self._stderr_tail.append(line[:300])
                logger.debug("semantic-skills worker: %s", line)

    def _write_loop(self) -> None:
        while True:
            with self._outbox_ready:
                while not self._outbox and not self._stop.is_set():
                    self._outbox_ready.wait()
                if self._stop.is_set():
                    return
                line = self._outbox.popleft()
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
            return
        if message.get("event") == "state":
            with self._lock:
                self.backend = str(message.get("backend") or self.backend)
                self.skills = int(message.get("skills") or self.skills)
                self._set_state_locked(str(message.get("state")), str(message.get("detail") or ""))
            if self.state in (WAITING_FOR_INDEX, FAILED):
                self._log_once(logging.WARNING, self.detail)
            elif self.state == READY:
                self._log_once(logging.INFO, f"routing worker ready ({self.skills} skills, {self.backend})")

    def _set_state_locked(self, state: str, detail: str) -> None:
        self.state, self.detail = state, detail
        if state == READY:
            self._ready.set()
        else:
            self._ready.clear()
        self._state_changed.notify_all()

    def _fail_pending(self, status: str, error: str) -> None:
        with self._lock:
            pending, self._pending = self._pending, {}
        for future, _sent in pending.values():
            if not future.done():
                future.set_result(Reply(status, error=error))

    def _watch(self) -> None:
        """Kill a worker that sits on a request for ``stall_seconds``; the supervisor then restarts it."""
        while not self._stop.wait(min(1.0, self._stall_seconds / 2)):
            with self._lock:
                oldest = next(iter(self._pending.values()), None)
                process = self._process
            if oldest is None or process is None or time.monotonic() - oldest[1] < self._stall_seconds:
                continue
            self._log_once(logging.WARNING, f"the routing worker did not answer for {self._stall_seconds:.0f} s; "
                                            "restarting it")
            process.kill()

    # ------------------------------------------------------------------ requests

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    def wait_ready(self, timeout: float) -> bool:
        """Wait until the worker is ready, or it is clear it will not be soon; True if ready."""
        deadline = time.monotonic() + max(0.0, timeout)
        with self._lock:
            while self.state != READY:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.state in (WAITING_FOR_INDEX, FAILED) or self._stop.is_set():
                    return False
                self._state_changed.wait(remaining)
        return True

    def submit(self, op: str, **payload) -> Future:
        """Send a request now; the future always resolves to a :class:`Reply`."""
        future: Future = Future()
        with self._lock:
            if self.state != READY or self._process is None:
                status = {WAITING_FOR_INDEX: INDEX_MISSING, FAILED: ERROR}.get(self.state, NOT_READY)
                future.set_result(Reply(status, error=self.detail or "the routing worker is starting"))
                return future
            request_id = next(self._ids)
            self._pending[request_id] = (future, time.monotonic())
        if isinstance(payload.get("text"), str):
            payload["text"] = payload["text"][:MAX_MESSAGE_CHARS]
        # "replace": an unpaired surrogate (chat text can carry one) cannot be UTF-8; it becomes "?".
        request = json.dumps({"id": request_id, "op": op, **payload}, ensure_ascii=False)
        line = request.encode("utf-8", "replace") + b"\n"
        with self._outbox_ready:
            self._outbox.append(line)
            self._outbox_ready.notify()
        return future

    def route_async(self, text: str, exclude, max_chars: int) -> Future:
        """Ask which skill to inject for ``text``; the reply's ``data['block']`` holds it when one fits."""
        return self.submit("route", text=text, exclude=sorted(exclude),
                           max_chars=int(max_chars))

    def route(self, text: str, exclude, max_chars: int, timeout: float,
              wait_ready: float = 0.0) -> Reply:
        """:meth:`route_async`, waiting at most ``wait_ready`` for the worker plus ``timeout`` for the answer."""
        if wait_ready > 0:
            self.wait_ready(wait_ready)
        return result_within(self.route_async(text, exclude, max_chars), timeout)

    def search(self, text: str, limit: int, exclude, max_chars: int, timeout: float,
               wait_ready: float = 0.0) -> Reply:
        """The best skills for ``text`` and the capped body of the best one."""
        if wait_ready > 0:
            self.wait_ready(wait_ready)
        future = self.submit("search", text=text, limit=int(limit), exclude=sorted(exclude),
                             max_chars=int(max_chars))
        return result_within(future, timeout)


def result_within(future: Future, timeout: float) -> Reply:
    """The future's reply, or a ``timeout`` reply if it is not there within ``timeout`` seconds."""
    try:
        return future.result(timeout=max(0.0, timeout))
    except Exception:  # noqa: BLE001 - concurrent.futures.TimeoutError and anything unexpected
        return Reply(TIMEOUT, error=f"no answer within {timeout * 1000:.0f} ms")


if __name__ == "__main__":
    main()
