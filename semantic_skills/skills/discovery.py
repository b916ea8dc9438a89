"""Find SKILL.md files under skills roots and parse them; a bad file is reported with a reason, never fatal.

Discovery follows the agent's rules: hidden folders (``.hub/quarantine``,
``.git``...), dependency and virtualenv folders and a skill's own
``references/ templates/ assets/ scripts/`` are never searched, and of a
root's organisation mirrors (``_org/<org id>/``) only the one named in
``_org/.active_org`` is (none without that file). A file that lies in a
hub's quarantine is never read, however it is reached (a symlinked file or
folder, a root inside the quarantine); a hard link cannot be told apart from
its quarantined twin. Others write skills folders (a team repository in
``external_dirs``, the agent itself), so every file here is read through
``files.read_regular_file``: a FIFO, a device or a huge file, as a
``SKILL.md`` or as the marker, is skipped and reported, never waited on.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from ..files import NotRegularFile, read_regular_file
from .look_alikes import Claim
from .names import Duplicate, NameConflict, Placed, resolve_names
from .parsing import Skill, SkillFileError, parse_skill

SKILL_FILENAME = "SKILL.md"
MAX_SKILL_BYTES = 32 * 1024 * 1024
MAX_ORG_MARKER_BYTES = 4096  # the marker holds one organisation id, the name of a folder
EXCLUDED_DIRS = frozenset(
    {"node_modules", "venv", "site-packages", "__pycache__", "dist-packages"}
)
VENV_MARKER = "pyvenv.cfg"  # a virtualenv of any name
SKILL_SUPPORT_DIRS = frozenset({"references", "templates", "assets", "scripts"})
QUARANTINE = (".hub", "quarantine")  # where the agent's hub keeps skills it has not yet passed
ORG_MIRRORS = "_org"
ACTIVE_ORG_MARKER = ".active_org"
EXTERNAL = "external"
PROJECT = "project"


@dataclass(frozen=True)
class SkillsRoot:
    """A folder searched for SKILL.md files.

    Earlier roots win name clashes; ``external`` marks a root shared from
    elsewhere, ``project`` one that belongs to a project and is offered only
    where the host says that project is active.
    """

    path: Path
    external: bool = False
    project: bool = False

    @property
    def kind(self) -> str:
        return PROJECT if self.project else EXTERNAL if self.external else ""

    @property
    def tier(self) -> str:
        """Its precedence tier in the agent: all project roots share one, all external roots another, and any
        other root is a tier of its own."""
        return self.kind or str(self.path)


@dataclass(frozen=True)
class SkippedFile:
    """A SKILL.md, folder or marker that was not read, and why; ``kind`` says what it is when it is no regular
    file (a FIFO, a device...), which nothing reads."""

    path: str
    reason: str
    kind: str = ""


@dataclass
class Discovery:
    """Everything discovery found: the skills routed under their names, what was left out, and the groups of names
    that read alike in claim order (for the index to record: see ``look_alikes``)."""

    skills: list[Skill] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)
    duplicates: list[Duplicate] = field(default_factory=list)
    conflicts: list[NameConflict] = field(default_factory=list)
    look_alikes: list[tuple[Claim, ...]] = field(default_factory=list)


def iter_skill_files(root: Path, skipped: list[SkippedFile] | None = None) -> Iterator[Path]:
    """Yield SKILL.md paths under ``root`` in sorted order, following symlinks safely.

    Directory symlinks are followed only while they stay inside ``root`` and
    never twice to the same folder, so a symlink loop ends; escaping links are
    reported in ``skipped``.
    """
    skipped = skipped if skipped is not None else []
    try:
        real_root = root.resolve(strict=True)
    except OSError:
        return
    seen: set[tuple[int, int]] = set()
    active_org = _active_org(root, skipped)
    pending = [root]  # folders still to list, the next one last (a stack: nesting depth costs no recursion)
    while pending:
        directory = pending.pop()
        entries = _list_once(directory, seen, skipped)
        if entries is None:
            continue
        names = {e.name for e in entries}
        if VENV_MARKER in names:
            continue
        is_skill_dir = SKILL_FILENAME in names
        if is_skill_dir:
            yield Path(directory) / SKILL_FILENAME
        children = [child for entry in entries
                    if (child := _folder_to_search(entry, is_skill_dir, real_root, skipped)) is not None]
        pending.extend(reversed(_without_inactive_orgs(Path(directory), root, active_org, children)))


def _without_inactive_orgs(directory: Path, root: Path, active_org: str, children: list[Path]) -> list[Path]:
    """``children`` of ``directory`` less the organisation mirrors that are not the active one."""
    if directory == root:
        return [c for c in children if c.name != ORG_MIRRORS or active_org]
    if directory == root / ORG_MIRRORS:
        return [c for c in children if c.name == active_org]
    return children


def read_active_org(root: Path) -> str:
    """The organisation named in ``root/_org/.active_org``; "" without one, or when it is not UTF-8 text.

    Raises ``OSError`` for a marker that is there but cannot be read, such as
    :class:`~semantic_skills.files.NotRegularFile` (a FIFO, which would hang
    a plain read, or a link to ``/dev/zero``, which would fill the memory) and
    :class:`~semantic_skills.files.FileTooLarge` (over :data:`MAX_ORG_MARKER_BYTES`).
    """
    try:
        raw = read_regular_file(active_org_marker(root), MAX_ORG_MARKER_BYTES)
    except (FileNotFoundError, NotADirectoryError):
        return ""
    try:
        return raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        return ""


def _active_org(root: Path, skipped: list[SkippedFile]) -> str:
    """:func:`read_active_org`; a marker that cannot be read names no organisation and goes to ``skipped``."""
    try:
        return read_active_org(root)
    except OSError as exc:
        skipped.append(SkippedFile(str(active_org_marker(root)), f"{exc.strerror or exc}; no organisation's "
                                   "mirrored skills are read", _kind(exc)))
        return ""


def _kind(exc: OSError) -> str:
    """What a path refused as no regular file is (``SkippedFile.kind``); "" for any other error."""
    return exc.kind if isinstance(exc, NotRegularFile) else ""


def active_org_marker(root: Path) -> Path:
    """The file that names ``root``'s active organisation."""
    return Path(root) / ORG_MIRRORS / ACTIVE_ORG_MARKER


def org_of(path: str | Path, root: str | Path) -> str | None:
    """The organisation whose mirror under ``root`` holds ``path``, or None outside ``root/_org/<org id>/``."""
    mirrors = os.path.join(str(root), ORG_MIRRORS, "")
    if not str(path).startswith(mirrors):
        return None
    organisation, separator, rest = str(path)[len(mirrors):].partition(os.sep)
    return organisation if separator and rest else None


def _list_once(directory: Path, seen: set[tuple[int, int]], skipped: list[SkippedFile]) -> list[os.DirEntry] | None:
    """The entries of ``directory`` sorted by name; None if it was listed before or cannot be read."""
    try:
        st = directory.stat()
    except OSError as exc:
        skipped.append(SkippedFile(str(directory), f"cannot read folder: {exc.strerror or exc}"))
        return None
    key = (st.st_dev, st.st_ino)
    if key in seen:
        return None
    seen.add(key)
    try:
        return sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as exc:
        skipped.append(SkippedFile(str(directory), f"cannot read folder: {exc.strerror or exc}"))
        return None


def _folder_to_search(entry: os.DirEntry, in_skill_dir: bool, real_root: Path,
                      skipped: list[SkippedFile]) -> Path | None:
    """``entry`` as a folder to search, or None: not a folder, excluded, or a link out of the root."""
    if entry.name.startswith(".") or entry.name in EXCLUDED_DIRS:
        return None
    if in_skill_dir and entry.name in SKILL_SUPPORT_DIRS:
        return None
    try:
        if not entry.is_dir(follow_symlinks=True):
            return None
    except OSError:
        return None
    child = Path(entry.path)
    if not entry.is_symlink():
        return child
    try:
        target = child.resolve(strict=True)
    except (OSError, RuntimeError):
        skipped.append(SkippedFile(str(child), "broken or looping symlink"))
        return None
    if not target.is_relative_to(real_root):
        skipped.append(SkippedFile(str(child), f"symlink leads outside the skills root (to {target}); "
                                               "add that folder to skills.external_dirs to index it"))
        return None
    return child


def _read_skill_bytes(path: Path, real_root: Path) -> bytes:
    if path.is_symlink():
        target = real_path(path)
        if not target.is_relative_to(real_root):
            raise SkillFileError(f"symlink leads outside the skills root (to {target})")
    return read_skill_file(path)


def read_skill_file(path: Path) -> bytes:
    """The bytes of ``path`` if it is a regular file of at most ``MAX_SKILL_BYTES`` outside any quarantine.

    Raises :class:`SkillFileError` (or ``OSError``, such as
    :class:`~semantic_skills.files.NotRegularFile`) otherwise. Where the file
    really lies is resolved and checked, then that very path is read without
    following any link (``files.read_regular_file``'s exact read), so a folder
    or link swapped after the check cannot lead into a quarantine; a FIFO named
    SKILL.md cannot hang the caller.
    """
    real = real_path(path)
    if in_quarantine(real):
        raise SkillFileError(f"lies in the hub's quarantine ({'/'.join(QUARANTINE)}), which is never indexed")
    return read_regular_file(real, MAX_SKILL_BYTES, exact=True)


def real_path(path: Path) -> Path:
    """Where ``path`` really lies: every link on it followed (:class:`SkillFileError` for a broken or looping one)."""
    try:
        return Path(os.path.realpath(path, strict=True))
    except (OSError, RuntimeError):  # Python < 3.13 raises RuntimeError on a loop
        raise SkillFileError("broken or looping symlink") from None


def in_quarantine(path: str | Path) -> bool:
    """True when ``path`` lies in a hub's quarantine: a ``.hub/quarantine`` folder anywhere on it."""
    parts = Path(path).parts
    return any(parts[i:i + len(QUARANTINE)] == QUARANTINE for i in range(len(parts)))


def discover_skills(
    roots: Iterable[SkillsRoot],
    reuse: dict[tuple[str, str], Skill] | None = None,
    earlier: dict[str, list[Claim]] | None = None,
) -> Discovery:
    """Find and parse every skill under ``roots``, each routed under its name only if that name loads it.

    Earlier roots win name clashes across tiers of roots (see
    :mod:`~semantic_skills.skills.names`: as in the agent); the losers are
    reported as duplicates, and names no skill or several answer to as
    conflicts, as are names that read like one routed earlier (``earlier``:
    the claims an index recorded, see :mod:`~semantic_skills.skills.look_alikes`).
    ``reuse`` maps ``(path, content_hash)`` to an already-parsed skill, which
    is returned as is instead of re-parsed.
    """
    found = Discovery()
    placed: list[Placed] = []
    tiers: dict[str, int] = {}
    for root in roots:
        root_path = Path(root.path)
        if not root_path.is_dir():
            continue
        tier = tiers.setdefault(root.tier, len(tiers))
        real_root = root_path.resolve()
        for path in iter_skill_files(root_path, found.skipped):
            try:
                raw = _read_skill_bytes(path, real_root)
                digest = hashlib.sha256(raw).hexdigest()
                skill = (reuse or {}).get((str(path), digest))
                if skill is None or skill.external != root.external:
                    skill = parse_skill(raw, path, root_path, external=root.external)
            except SkillFileError as exc:
                found.skipped.append(SkippedFile(str(path), str(exc)))
                continue
            except OSError as exc:
                found.skipped.append(SkippedFile(str(path), f"cannot read file: {exc.strerror or exc}", _kind(exc)))
                continue
            placed.append(Placed(skill, tier, str(root_path)))
    resolved = resolve_names(placed, earlier)
    found.skills, found.duplicates, found.conflicts = resolved.skills, resolved.duplicates, resolved.conflicts
    found.look_alikes = resolved.look_alikes
    return found
