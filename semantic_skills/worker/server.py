"""The routing worker: one :class:`~semantic_skills.router.SkillRouter`, served over stdin and stdout.

Run by a host as ``python -m semantic_skills.worker STARTUP`` (see protocol.py).
The worker waits for an index to appear, swaps in a rebuilt index at most
about once a second (keeping the old one if the new one cannot be used),
rebuilds it when the host says a skill changed (see rebuild.py), and exits
when its stdin closes, so it never outlives its host. Everything it needs
comes from the host: it reads no configuration file.
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

from ..errors import DependencyMissing, command, first_line
from ..files import file_stamp
from ..gates import FULL
from ..limits import MAX_BODY_CHARS, MAX_MESSAGE_CHARS
from . import protocol
from .answer_times import warm_up_route_ms
from .priority import lower_this_threads_priority
from .protocol import FAILED, LOADING, READY, STARTING, WAITING_FOR_INDEX, Startup
from .rebuild import Rebuilder

RELOAD_INTERVAL_SECONDS = 1.0
BODY_CACHE_SIZE = 64
VERSION_CHARS = 32  # of a skill file's SHA-256, in hex: its version


class RoutingWorker:
    """The worker's state: one router, loaded and reloaded off the request thread."""

    def __init__(self, startup: Startup, emit):
        self.startup = startup
        self.index_dir = Path(startup.index_dir)
        self._emit = emit
        self._router = None
        self._state = STARTING
        self._detail = ""
        self._bodies: collections.OrderedDict[str, tuple[tuple, dict]] = collections.OrderedDict()
        self.rebuilder = Rebuilder(self.index_dir, lambda: self._router, self._log)

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
            from ..index.store import manifest_stamp
        except Exception as exc:  # pragma: no cover - a broken install
            self._set_state(FAILED, f"cannot import semantic_skills ({first_line(exc)})")
            return
        failed_stamp = None
        while True:
            stamp = manifest_stamp(self.index_dir)
            if stamp is None and self._router is None:
                self._set_state(WAITING_FOR_INDEX,
                                f"no skill index in {self.index_dir}; build one with: {command('build')}")
            elif stamp != failed_stamp:
                try:
                    self._open_or_reload()
                    failed_stamp = None
                except Exception as exc:  # noqa: BLE001 - report it, keep any index we have, wait for a rebuild
                    failed_stamp = stamp
                    if self._router is not None:
                        self._log("warning", f"kept the previous index: {first_line(exc)}")
                    else:
                        self._set_state(FAILED, self._load_failure(exc))
                        if isinstance(exc, ImportError):
                            return
            time.sleep(RELOAD_INTERVAL_SECONDS)

    def _open_or_reload(self) -> None:
        if self._router is None:
            self._open()
            return
        was_empty = not self._router.manifest.skills
        if self._router.reload_if_changed(min_interval=0.0):
            if was_empty and not self._prepared():
                return
            self._log("info", f"reloaded the rebuilt index in {self.index_dir} "
                              f"({len(self._router.manifest.skills)} skills)")
            self._set_ready(self._router)

    def _prepared(self) -> bool:
        """The first skills came in: load the embedder now, off the request thread; False (and failed, saying
        why) when it cannot load."""
        try:
            self._router.prepare()
        except Exception as exc:  # noqa: BLE001 - said in the worker's state, as a failed start is
            self._set_state(FAILED, self._load_failure(exc))
            return False
        return True

    def _load_failure(self, exc: Exception) -> str:
        """Why the index or its embedder could not load; for a missing module, the host's ``doctor``, which gives
        the one install for this machine (the host's log line says the same)."""
        if isinstance(exc, (ImportError, DependencyMissing)):
            module = exc.module if isinstance(exc, DependencyMissing) else getattr(exc, "name", None)
            return (f"{module or first_line(exc)} is not installed in {sys.executable}; `{command('doctor')}` "
                    "names the install for this machine")
        return first_line(exc)

    def _open(self) -> None:
        from ..router import SkillRouter

        self._set_state(LOADING, f"loading the index in {self.index_dir} and its embedder")
        router = SkillRouter.from_settings(self.index_dir, self.startup.embedder)
        route_ms = warm_up_route_ms(router)  # the host's first estimate of an answer's time (see answer_times)
        self._router = router
        self._set_ready(router, **({"route_ms": route_ms} if route_ms is not None else {}))
        lower_this_threads_priority()  # later swaps load while the old index answers: routing comes first

    def _set_ready(self, router, **extra) -> None:
        if router.second_problem:
            self._log("warning", router.second_problem)
        self._set_state(READY, "", skills=len(router.manifest.skills), backend=router.embedder.identity.backend,
                        gated=gated_skills(router.manifest), **extra)

    # ------------------------------------------------------------------ requests

    def handle(self, request: dict) -> dict:
        """Answer one request; never raises."""
        op = request.get("op")
        try:
            if op == protocol.PING:
                return {"ok": True, "state": self._state, "detail": self._detail}
            router = self._router
            if router is None:
                return {"ok": False, "status": protocol.status_for_state(self._state),
                        "error": self._detail or "the index is loading"}
            if op == protocol.REBUILD:
                self.rebuilder.request()
                return {"ok": True}
            if op == protocol.CLAIM:
                return {"ok": True, **_claim(router.manifest, str(request.get("path") or ""))}
            text = str(request.get("text") or "")[:MAX_MESSAGE_CHARS]
            exclude = frozenset(str(n) for n in request.get("exclude") or ())
            inactive = request.get("inactive_environments")
            inactive = frozenset(str(e) for e in inactive) if isinstance(inactive, list) else None
            if op == protocol.ROUTE:
                floor = request.get("floor")
                return self._route(router, text, exclude, float(floor) if floor is not None else None, inactive)
            if op == protocol.SEARCH:
                limit = int(request.get("limit") or protocol.DEFAULT_SEARCH_RESULTS)
                return self._search(router, text, max(1, min(protocol.MAX_SEARCH_RESULTS, limit)), exclude, inactive)
            return {"ok": False, "status": protocol.ERROR, "error": f"unknown op {op!r}"}
        except Exception as exc:  # noqa: BLE001 - one bad request must not kill the worker
            return {"ok": False, "status": protocol.ERROR, "error": f"{type(exc).__name__}: {first_line(exc)}"}

    def _route(self, router, text: str, exclude: frozenset[str], floor: float | None, inactive) -> dict:
        """The decision: nothing (``skill`` None), a hint (``mode`` "hint", the ``named`` skills with their
        descriptions and versions), or the whole skill (``mode`` "full", also its ``body`` and the ``omitted``
        count); ``version`` is the skill's."""
        decision = router.route(text, exclude=exclude, floor=floor, inactive_environments=inactive)
        answer = {"ok": True, "skill": None, "mode": None, "score": decision.score, "reason": decision.reason,
                  **_gate_view(decision)}
        if decision.skill is None:
            return answer
        files = [self._skill_file(c.path, router.manifest.roots) for c in decision.named]
        if decision.mode == FULL and files[0] is None:
            answer["reason"] = f"the file of skill {decision.skill.name!r} cannot be read"
            return answer
        named = [{"name": c.name, "description": c.description, "version": found and found["version"]}
                 for c, found in zip(decision.named, files)]
        body = _body_of(files[0]) if decision.mode == FULL else {}
        return {**answer, "skill": decision.skill.name, "mode": decision.mode, "named": named,
                "version": named[0]["version"], **body}

    def _search(self, router, text: str, limit: int, exclude: frozenset[str], inactive) -> dict:
        found = router.search(text, k=limit, exclude=exclude, inactive_environments=inactive)
        results = [{"name": c.name, "description": c.description, "score": round(c.score, 4)} for c in found]
        file = self._skill_file(found[0].path, router.manifest.roots) if found else None
        best = {"name": found[0].name, **_body_of(file)} if file is not None else None
        not_routed = [{"name": left_out.name, "reads_as": routed.name}
                      for left_out, routed in router.manifest.left_out_look_alikes()[:protocol.MAX_NOT_ROUTED]]
        return {"ok": True, "results": results, "best": best, **({"not_routed": not_routed} if not_routed else {})}

    def _skill_file(self, path: str, roots: list[str]) -> dict | None:
        """``{"body", "omitted", "escaped", "version"}`` of a SKILL.md named by the index, cached on the file's
        stamp.

        ``body`` has every tag neutralised (``injection.neutralise``, the
        block's own escaping; ``escaped`` says so): done here, once per version
        of the file, so a host caps it and frames it without reading it for
        tags again (on a hostile body of 200,000 characters that took a
        gateway's event loop tens of milliseconds per message). ``version``
        fingerprints the file's bytes as read now (the first 32 hex digits of
        their SHA-256): the version of the skill a block carries, so that the
        host counts a block as live only while it is the current one.
        Only a regular file that still lies inside one of the index's skills
        roots is read: a SKILL.md swapped after the build for a link to another
        file (or for a FIFO, which would block) gives None.
        """
        from ..injection import neutralise, skill_body
        from ..skills.discovery import read_skill_file
        from ..skills.parsing import SkillFileError

        try:
            real = Path(path).resolve()
            if not any(real.is_relative_to(Path(root).resolve()) for root in roots):
                return None
            stamp = file_stamp(real)
            cached = self._bodies.get(path)
            if cached and cached[0] == stamp:
                self._bodies.move_to_end(path)
                return cached[1]
            raw = read_skill_file(real)
        except (OSError, SkillFileError):
            return None
        body = skill_body(raw.decode("utf-8", errors="replace"))
        wire = {"body": neutralise(body[:MAX_BODY_CHARS]), "omitted": max(0, len(body) - MAX_BODY_CHARS),
                "escaped": True, "version": hashlib.sha256(raw).hexdigest()[:VERSION_CHARS]}
        self._bodies[path] = (stamp, wire)
        if len(self._bodies) > BODY_CACHE_SIZE:
            self._bodies.popitem(last=False)
        return wire


def _claim(manifest, path: str) -> dict:
    """The ``claim`` answer for the SKILL.md at ``path``: its name, and the routed skill that keeps the way it
    reads (``kept_by``), if one does; both None for a file that is no readable skill."""
    from ..skills.discovery import read_skill_file
    from ..skills.look_alikes import Claim
    from ..skills.parsing import SkillFileError, parse_skill

    try:
        skill = parse_skill(read_skill_file(Path(path)), Path(path), Path(path).parent)
    except (OSError, SkillFileError, ValueError):
        return {"name": None, "kept_by": None}
    kept_by = manifest.keeper_of(Claim(skill.path, skill.name))
    return {"name": skill.name, "kept_by": kept_by and {"name": kept_by.name, "path": kept_by.path}}


def _gate_view(decision) -> dict:
    """What the gate judged, for every decision (also when nothing is injected): the top skill, its
    similarity, relative gap and relative margin (None when the gate did not run) and the thresholds they
    were held to, the hint's (``threshold``, ``min_relative_gap``) and the full injection's; with two vector
    sets, which ranked the message and why (``vector_set``, ``routed_by``, ``language``)."""
    features, gate = decision.features, decision.gate
    return {"top": decision.candidates[0].name if decision.candidates else None,
            "similarity": _rounded(features.get("similarity")), "relative_gap": _rounded(features.get("relative_gap")),
            "relative_margin": _rounded(features.get("relative_margin")),
            "threshold": gate.floor, "min_relative_gap": gate.min_relative_gap,
            "full_relative_gap": gate.full_relative_gap, "full_relative_margin": gate.full_relative_margin,
            **decision.vector_set}


def _rounded(value: float | None) -> float | None:
    return round(value, 4) if value is not None else None


def gated_skills(manifest) -> list[dict]:
    """The skills whose offer the host decides (see protocol.py): offer conditions, a project root, or an
    organisation mirror (with the file that names the active organisation)."""
    from ..skills.discovery import PROJECT, active_org_marker, org_of

    project_roots = [Path(root) for root, kind in manifest.root_kinds.items() if kind == PROJECT]
    roots = [Path(root) for root in manifest.roots]
    gated = []
    for record in manifest.skills:
        project_root = next((str(r) for r in project_roots if Path(record.path).is_relative_to(r)), None)
        org, org_root = next(((o, r) for r in roots if (o := org_of(record.path, r))), (None, None))
        if record.conditions or project_root or org:
            gated.append({"name": record.name, "folder": record.folder, "path": record.path,
                          "conditions": record.condition_map(), "project_root": project_root,
                          **({"org": org, "org_marker": str(active_org_marker(org_root))} if org else {})})
    return gated


def serve(startup: Startup) -> None:
    """Run the worker on this process's stdin and stdout until stdin closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Keep the protocol channel private: anything a library prints goes to stderr.
    channel = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    write_lock = threading.Lock()

    def emit(message: dict) -> None:
        line = protocol.encode(message)
        with write_lock:
            channel.write(line)

    worker = RoutingWorker(startup, emit)
    threading.Thread(target=worker.run_loader, name="semantic-skills-loader", daemon=True).start()
    for raw in sys.stdin.buffer:
        try:
            request = json.loads(raw)
            request_id = request["id"]
        except (ValueError, KeyError, TypeError):
            continue
        answer = worker.handle(request)
        answer["id"] = request_id
        try:
            emit(answer)
        except OSError:
            break
    os._exit(0)


def main(argv: list[str] | None = None) -> None:
    """``python -m semantic_skills.worker STARTUP``: serve until stdin closes."""
    args = sys.argv[1:] if argv is None else argv
    try:
        startup = Startup.from_json(args[0])
    except (IndexError, ValueError, TypeError) as exc:
        sys.exit(f"usage: python -m semantic_skills.worker STARTUP (the start-up settings as JSON): {exc}")
    except Exception as exc:  # noqa: BLE001 - ConfigError for bad embedder settings
        sys.exit(f"invalid start-up settings: {first_line(exc)}")
    serve(startup)


def _body_of(file: dict) -> dict:
    """What an answer carries of a skill file (see :meth:`RoutingWorker._skill_file`): its body, how much of it was
    left out, and whether it is escaped."""
    return {key: file[key] for key in ("body", "omitted", "escaped")}
