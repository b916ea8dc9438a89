"""Plain helpers and paths shared by the test modules (fixtures live in conftest.py)."""

from __future__ import annotations

import builtins
import errno
import hashlib
import json
import os
import queue
import re
import socket
import subprocess
import sys
import textwrap
import threading
import time
import unicodedata
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from semantic_skills.index import MANIFEST
from semantic_skills.worker.launch import launch
from semantic_skills.worker.protocol import Startup

REPO = Path(__file__).resolve().parent.parent
# ../shared by default; SEMANTIC_SKILLS_SHARED_DIR points elsewhere (e.g. from a git worktree).
SHARED = Path(os.environ.get("SEMANTIC_SKILLS_SHARED_DIR") or REPO.parent / "shared")
EXAMPLES = REPO / "examples"


# Invisible characters outside the format, control and unassigned categories: joiners, fillers, selectors.
_INVISIBLE_MARKS_AND_FILLERS = re.compile("[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164\ufe00-\ufe0f"
                                          "\uffa0\U000e0100-\U000e01ef]")
_SKILL_CONTEXT_TAG = re.compile(r"<\s*/?\s*skill[\s_\-\u2010-\u2015]*context", re.IGNORECASE)


def skill_context_tags(text: str) -> int:
    """The ``skill-context`` tags, opening or closing, in ``text`` as issue #18's probe counts them: after NFKC,
    with invisible characters removed, in any case and spacing."""
    readable = _INVISIBLE_MARKS_AND_FILLERS.sub("", unicodedata.normalize("NFKC", text))
    readable = "".join(c for c in readable if unicodedata.category(c) not in ("Cf", "Cn", "Cs", "Cc") or c.isspace())
    return len(_SKILL_CONTEXT_TAG.findall(readable))


def shared_path(*parts: str) -> Path:
    """A path under ../shared, or skip the test with a clear reason."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent (the ../shared data folder is not next to this checkout)")
    return path


def write_skill(root: Path, rel: str, text: str | bytes) -> Path:
    """Write ``root/rel/SKILL.md`` and return its path; ``text`` is dedented when a str."""
    path = root / rel / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, str):
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    else:
        path.write_bytes(text)
    return path


# Four skills of a few words each, from the examples: embedded in a fraction of a second by any model, and enough for
# the gate's relative gap (RUSSIAN_DOCKER and ENGLISH_DOCKER find docker-compose-debug; MiniLM does not name it for
# the Russian one).
SMALL_LIBRARY = {
    "docker-compose-debug": ("Diagnose Docker Compose services that fail to start, restart in a loop, or cannot reach "
                             "each other.", "Run `docker compose ps -a`, then `docker compose logs SERVICE`."),
    "pdf-to-markdown": ("Extract text and tables from PDF files and convert them to clean Markdown.",
                        "Try `pdftotext -layout` first; scanned PDFs need OCR."),
    "meeting-notes": ("Turn a meeting transcript into a summary with decisions, action items and owners.",
                      "Write the summary, the decisions, and the action items with owners."),
    "image-resize": ("Resize, crop and compress images for the web.", "Use `magick in.png -resize 800x out.webp`."),
}
RUSSIAN_DOCKER = "Мой контейнер с postgres в docker compose постоянно перезапускается, как это исправить?"
ENGLISH_DOCKER = "the postgres container in a docker compose stack keeps restarting, and it is not the image"


def write_small_library(root: Path) -> Path:
    """:data:`SMALL_LIBRARY` as SKILL.md files under ``root``; returns ``root``."""
    for name, (description, body) in SMALL_LIBRARY.items():
        write_skill(root, name, f"---\nname: {name}\ndescription: {description}\n---\n\n{body}\n")
    return root


def vectors_path(index_dir: Path) -> Path:
    """The vectors file the index's manifest points to."""
    return index_dir / json.loads((index_dir / MANIFEST).read_text())["vectors"]["file"]


def edit_manifest(index_dir: Path, change) -> None:
    """Apply ``change`` to the manifest's JSON in place."""
    data = json.loads((index_dir / MANIFEST).read_text())
    change(data)
    (index_dir / MANIFEST).write_text(json.dumps(data))


def import_refused(monkeypatch, module: str) -> None:
    """Make ``import module`` fail as it does where the package is not installed (this test only)."""
    real_import = builtins.__import__

    def without_it(name, *args, **kwargs):
        if name == module:
            raise ImportError(f"No module named {module!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without_it)


def closed_port_url() -> str:
    """An ``/v1`` base URL on 127.0.0.1 where nothing listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


class FakeEmbeddingServer:
    """An OpenAI-compatible ``POST .../embeddings`` on 127.0.0.1 answering hashed bag-of-words vectors.

    Texts sharing words get similar vectors. Faults, all changeable while it runs:
    ``failures`` lists HTTP statuses for the next requests, ``ragged`` makes one
    vector in a batch shorter, ``dimension`` changes the vectors' length and
    ``delay`` (seconds) holds every answer back. Every request is recorded
    (input count, model, Authorization header).
    """

    def __init__(self, dimension: int = 256):
        self.dimension = dimension
        self.failures: list[int] = []
        self.ragged = False
        self.delay = 0.0
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    @property
    def batch_sizes(self) -> list[int]:
        return [r["inputs"] for r in self.requests]

    def vector(self, text: str) -> list[float]:
        vector = [0.0] * self.dimension
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            digest = hashlib.sha256(word.encode()).digest()
            vector[int.from_bytes(digest[:4], "little") % self.dimension] += 1.0 if digest[4] & 1 else -1.0
        return vector

    def _answer(self, body: dict) -> tuple[int, dict]:
        with self._lock:
            inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
            self.requests.append({"inputs": len(inputs), "model": body.get("model"), "auth": body.get("_auth")})
            if self.failures:
                status = self.failures.pop(0)
                return status, {"error": {"message": f"fake failure {status}", "type": "server_error", "code": status}}
            rows = [self.vector(t) for t in inputs]
            if self.ragged:
                rows[0] = rows[0][:-1]
        data = [{"object": "embedding", "index": i, "embedding": row} for i, row in enumerate(rows)]
        usage = {"prompt_tokens": len(inputs), "total_tokens": len(inputs)}
        return 200, {"object": "list", "data": data, "model": body.get("model"), "usage": usage}

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                body["_auth"] = self.headers.get("Authorization")
                status, payload = server._answer(body) if self.path.endswith("/embeddings") else (404, {})
                if server.delay:
                    time.sleep(server.delay)
                raw = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                except OSError:
                    pass  # the client gave up waiting

            def log_message(self, *args):
                pass

        return Handler

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._httpd.shutdown()
        self._httpd.server_close()


WORKER_READY_SECONDS = 240  # a cold worker on a loaded 2-core machine


class Worker:
    """``python -m semantic_skills.worker`` on real pipes: send requests, read answers and events."""

    def __init__(self, startup: Startup):
        self.process = launch(sys.executable, startup)
        self.events: list[dict] = []
        self._answers: queue.Queue[dict] = queue.Queue()
        self._ids = iter(range(1, 1_000_000))
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for raw in self.process.stdout:
            message = json.loads(raw)
            (self.events.append if "event" in message else self._answers.put)(message)

    def send_line(self, line: bytes) -> None:
        self.process.stdin.write(line)
        self.process.stdin.flush()

    def ask(self, op: str, timeout: float = 60, **payload) -> dict:
        request_id = next(self._ids)
        self.send_line(json.dumps({"id": request_id, "op": op, **payload}).encode() + b"\n")
        answer = self._answers.get(timeout=timeout)
        assert answer["id"] == request_id
        return answer

    def wait_for_state(self, state: str, timeout: float = WORKER_READY_SECONDS) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.ask("ping")["state"] == state:
                return next(e for e in reversed(self.events) if e.get("state") == state)
            time.sleep(0.1)
        raise AssertionError(f"the worker did not reach {state!r}: {self.ask('ping')}")

    def close(self) -> int:
        self.process.stdin.close()
        return self.process.wait(timeout=30)


def thread_nice_values(pid: int) -> dict[int, int]:
    """Each thread's nice value in process ``pid``, from /proc (field 19 of a task's stat line)."""
    values = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        values[int(task.name)] = int(fields[16])
    return values


def wait_until(predicate, timeout: float, interval: float = 0.1) -> bool:
    """Poll ``predicate`` until it is true or ``timeout`` seconds pass; its last answer."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


@contextmanager
def small_disk(path: Path, size: str = "2M"):
    """A real tmpfs of ``size`` mounted at ``path`` while the block runs; skips where mounting is not allowed."""
    if os.geteuid() != 0:
        pytest.skip("filling a real disk needs a tmpfs, and mounting one needs root")
    path.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip() or mounted.returncode}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "--lazy", str(path)], check=False)


def fill_disk(disk: Path, leave: int = 0) -> Path:
    """Fill ``disk``'s filesystem with the file ``disk/filler``, then free about ``leave`` bytes of it again."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        for chunk in (1 << 16, 1 << 12, 1):
            try:
                while True:
                    os.write(fd, bytes(chunk))
            except OSError as exc:
                assert exc.errno == errno.ENOSPC, exc
    finally:
        os.close(fd)
    if leave:
        os.truncate(filler, max(0, filler.stat().st_size - leave))
    return filler


_TERMINAL_CODES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def on_terminal(argv: list[str], timeout: float = 300, **popen) -> tuple[int, list[tuple[float, str]]]:
    """Run ``argv`` on a pseudo-terminal of 120 columns: its exit status and each piece of screen it printed (a line,
    or a bar as each redraw leaves it), with when it came, in seconds since the start. Escape sequences are removed."""
    import fcntl
    import pty
    import select
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    started = time.monotonic()
    child = subprocess.Popen(argv, stdin=follower, stdout=follower, stderr=follower, start_new_session=True, **popen)
    os.close(follower)
    pieces = []
    try:
        while time.monotonic() - started < timeout:
            if not select.select([leader], [], [], 0.5)[0]:
                if child.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            at = time.monotonic() - started
            text = _TERMINAL_CODES.sub("", chunk.decode("utf-8", "replace"))
            pieces += [(at, piece.strip()) for piece in re.split(r"[\r\n]+", text) if piece.strip()]
    finally:
        os.close(leader)
        if child.poll() is None:
            child.kill()
        child.wait(timeout=30)
    return child.returncode, pieces
