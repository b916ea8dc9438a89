"""The doctor's routing checks: which skills Hermes offers, the index, and a real routing worker.

``index_check`` needs the core libraries (numpy, faiss) and ``worker_check``
the embedder's packages too; the doctor runs each as soon as what it needs
imports. An index without skills is a state, not a fault: routing then
injects nothing and new sessions keep Hermes' own skills listing.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from ...errors import IndexMissing, SemanticSkillsError
from ...logs import OnceLogger
from ...settings import EmbedderSettings
from ..home_index import EarlierIndex
from ..offer.roots import scanned_roots
from ..offer.rules import DISABLED, ENVIRONMENTS, PLATFORMS, Eligibility, has_conditions
from .report import FAIL, OK, SKIP, WARN, Check, Setup

PROBE = "doctor: does the routing worker answer a message?"
ANSWER_SECONDS = 30.0


def index_check(setup: Setup, earlier: EarlierIndex | None = None) -> Check:
    """The index exists, is readable, fits the configured embedder and matches the skills on disk; ``earlier``, what
    became of the index an earlier release left in the plugin folder, is said on the same line."""
    check = _index_check(setup)
    if earlier is None:
        return check
    facts = {**check.facts, "earlier_index": {"folder": str(earlier.legacy), "moved": earlier.moved,
                                              "reason": earlier.reason}}
    return replace(check, detail=f"{check.detail}; {earlier.said()}", facts=facts)


def _index_check(setup: Setup) -> Check:
    from ...embedders.factory import configured_identity
    from ...index.diff import diff_with_disk
    from ...index.store import load_index

    try:
        manifest, _vectors = load_index(setup.index_dir)
    except IndexMissing:
        return Check("index", FAIL, f"no index in {setup.index_dir}: until there is one, new sessions keep Hermes' "
                                    "own skills listing and search_skills matches words", setup.run("build"))
    except SemanticSkillsError as exc:
        return Check("index", FAIL, str(exc), setup.run("build --full"))
    embedder = setup.settings.embedder
    facts = {"index_dir": str(setup.index_dir), "skills": len(manifest.skills), "built_at": manifest.built_at,
             "embedder": manifest.embedder.describe(), "roots": manifest.roots}
    if embedder != EmbedderSettings() and not manifest.embedder.same_space(configured_identity(embedder)):
        return Check("index", FAIL, f"built with {manifest.embedder.describe()}, but the embedder setting asks for "
                                    f"{configured_identity(embedder).describe()}", setup.run("build --full"), facts)
    diff = diff_with_disk(manifest)
    stale = {"changed": sorted(r.name for r, _ in diff.changed()), "new": sorted(s.name for s in diff.added()),
             "deleted": sorted(r.name for r in diff.removed())}
    facts["stale"] = stale
    wanted = [str(root.path) for root in scanned_roots(setup.home, setup.config)]
    if {_resolved(r) for r in manifest.roots} != {_resolved(r) for r in wanted}:
        return Check("index", WARN, f"built from {', '.join(manifest.roots)}, not from Hermes' skills folders "
                                    f"{', '.join(wanted)}", setup.run("build"), facts)
    if any(stale.values()):
        counts = ", ".join(f"{len(names)} {label}" for label, names in stale.items() if names)
        return Check("index", WARN, f"stale: {counts} since the build", setup.run("build"), facts)
    if not manifest.skills:
        return Check("index", OK, f"holds no skills (built {manifest.built_at} from {', '.join(manifest.roots)}, "
                                  "which hold none): routing injects nothing and new sessions keep Hermes' own skills "
                                  f"listing until SKILL.md files are added there and `{setup.run('build')}` runs",
                     facts=facts)
    return Check("index", OK, f"{len(manifest.skills)} skills, built {manifest.built_at} with "
                              f"{manifest.embedder.describe()}, up to date with the skills on disk", facts=facts)


def names_check(setup: Setup, index: Check) -> Check:
    """The skills the index leaves out because each one's name reads as a routed skill's (which keeps it)."""
    from ...index.manifest import read_manifest

    if index.status == FAIL:
        return Check("names", SKIP, "checked once the index above is fixed")
    try:
        left_out = read_manifest(setup.index_dir).left_out_look_alikes()
    except SemanticSkillsError as exc:
        return Check("names", SKIP, f"the index cannot be read: {exc}")
    if not left_out:
        return Check("names", OK, "no skill is left out for a name that reads as another's")
    facts = {"left_out": [{"name": skill.name, "path": skill.path, "reads_as": kept.name, "kept_by": kept.path}
                          for skill, kept in left_out]}
    listed = "; ".join(f'"{skill.name}" ({skill.path}) reads as "{kept.name}" ({kept.path})'
                       for skill, kept in left_out)
    return Check("names", WARN, f"{len(left_out)} skill(s) neither injected nor returned by search_skills, each for a "
                                f"name that reads as the name of a skill routed before it, which keeps it: {listed}",
                 f"rename each (the name: line of its SKILL.md) so that its name reads differently, then run "
                 f"`{setup.run('build')}`", facts)


def _resolved(path: str) -> Path:
    return Path(path).expanduser().resolve()


def worker_check(setup: Setup, timeout: float) -> Check:
    """A real routing worker, started as Hermes starts it, comes up and answers a route."""
    from ...worker.client import RouterClient

    client = RouterClient(setup.index_dir, setup.settings.embedder, restart_delays=(0.5,),
                          cli_command=setup.command)
    started = time.monotonic()
    try:
        client.start()
        ready = client.wait_ready(timeout)
        seconds = time.monotonic() - started
        reply = client.route(PROBE, (), ANSWER_SECONDS, floor=setup.settings.floor) if ready else None
    finally:
        client.close()
    status = client.status
    if reply is None:
        detail = status.detail or f"not ready after {timeout:.0f} s"
        slow = not status.detail or status.detail.startswith("loading")
        fix = f"{setup.run('doctor --timeout 600')}    # a slow machine" if slow else "see the reason above"
        return Check("worker", FAIL, detail, fix)
    if not reply.ok:
        return Check("worker", FAIL, f"started, but a route failed: {reply.error}", "see the reason above")
    empty = "; the index holds no skills, so it injects nothing" if not status.skills else ""
    return Check("worker", OK, f"started in {seconds:.1f} s and answered a route ({status.skills} skills, "
                               f"{status.backend}){empty}",
                 facts={"seconds": round(seconds, 1), "backend": status.backend, "skills": status.skills})


def skills_check(setup: Setup) -> Check:
    """How many skills Hermes' folders hold, how many are offered, and which rule hides the rest."""
    from ...skills.discovery import discover_skills

    roots = scanned_roots(setup.home, setup.config)
    found = discover_skills(roots)
    skills = found.skills
    eligibility = Eligibility(setup.home, lambda: setup.config, OnceLogger())  # Hermes' own rules, as routing
    offer = eligibility.offer("", ())
    hidden = {DISABLED: 0, PLATFORMS: 0, ENVIRONMENTS: 0}
    offered = []
    for skill in skills:
        rule = offer.hidden_by(skill)
        if rule:
            hidden[rule] += 1
        else:
            offered.append(skill)
    disabled = eligibility.disabled("")
    per_platform = {}
    for platform in _configured_platforms(setup.config):
        names = eligibility.disabled(platform) - disabled
        per_platform[platform] = sum(1 for s in offered if s.name in names or s.folder in names)
    conditional = sum(1 for s in offered if has_conditions(s))
    facts = {"on_disk": len(skills), "offered": len(offered), "hidden": hidden, "hidden_on_platform": per_platform,
             "conditional": conditional, "roots": [str(r.path) for r in roots]}
    if not skills:
        return _with_unread_parts(Check(
            "skills", OK, f"no SKILL.md under {', '.join(facts['roots'])} yet: an empty library, so routing injects "
                          f"nothing; add skill folders (each with a SKILL.md) to {setup.home / 'skills'}, then run "
                          f"`{setup.run('build')}`", facts=facts), found)
    detail = f"{len(offered)} offered of {len(skills)} on disk; hidden: " + ", ".join(
        f"{count} by {rule}" for rule, count in hidden.items())
    if per_platform:
        detail += "; by skills.platform_disabled: " + ", ".join(f"{n} more on {p}" for p, n in per_platform.items())
    if conditional:
        detail += (f"; {conditional} offered only in sessions whose tools meet their metadata.hermes requires_* / "
                   "fallback_for_* / session_platforms")
    return _with_unread_parts(Check("skills", OK, detail, facts=facts), found)


def _with_unread_parts(check: Check, found) -> Check:
    """``check``, a warning naming each FIFO, device or socket in the skills folders that was never read, and each
    SKILL.md read only in part (invalid front matter, bad bytes), with its line and reason."""
    special = [s for s in found.skipped if s.kind]
    misread = [(s.path, warning) for s in found.skills for warning in s.warnings]
    if not special and not misread:
        return check
    problems, fixes = [], []
    if special:
        check.facts["special_files"] = [s.path for s in special]
        problems.append("never read: " + "; ".join(f"{s.path}: {s.reason}" for s in special))
        fixes.append("remove each special file, or replace it with a regular file")
    if misread:
        check.facts["misread_files"] = [{"path": path, "warning": warning} for path, warning in misread]
        problems.append("read in part: " + "; ".join(f"{path}: {warning}" for path, warning in misread))
        fixes.append("edit each SKILL.md read in part where its warning says, then build")
    return Check(check.name, WARN, "; ".join([check.detail, *problems]), "; ".join(fixes), check.facts)


def _configured_platforms(config: dict) -> list[str]:
    skills = config.get("skills") if isinstance(config.get("skills"), dict) else {}
    per_platform = skills.get("platform_disabled")
    return sorted(str(p) for p in per_platform) if isinstance(per_platform, dict) else []
