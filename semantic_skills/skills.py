"""Find SKILL.md files and parse them, tolerating the imperfect ones.

Discovery follows Hermes' rules: hidden folders (``.hub/quarantine``,
``.git``...), dependency and virtualenv folders and a skill's own
``references/ templates/ assets/ scripts/`` are never searched. A bad file is
reported with a reason and never stops discovery.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from .settings import SkillsRoot

SKILL_FILENAME = "SKILL.md"
MAX_SKILL_BYTES = 32 * 1024 * 1024
MAX_FIELD_NODES = 10_000  # values read from one front matter field
MAX_NAME_CHARS = 64  # Hermes' own limits: it cuts names and descriptions to these lengths
MAX_DESCRIPTION_CHARS = 1024
EXCLUDED_DIRS = frozenset(
    {"node_modules", "venv", "site-packages", "__pycache__", "dist-packages"}
)
VENV_MARKER = "pyvenv.cfg"  # a virtualenv of any name
SKILL_SUPPORT_DIRS = frozenset({"references", "templates", "assets", "scripts"})
_OS_NAMES = {"macos": "darwin", "linux": "linux", "windows": "win32"}

_FENCE = re.compile(r"^---[ \t]*$", re.MULTILINE)


@dataclass(frozen=True)
class Skill:
    """One parsed skill. ``content_hash`` is the SHA-256 of the file's bytes."""

    name: str
    description: str
    category: str
    path: str
    folder: str
    content_hash: str
    platforms: tuple[str, ...] = ()
    environments: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    external: bool = False
    body: str = field(default="", repr=False, compare=False)
    warnings: tuple[str, ...] = ()


def platforms_allow(platforms: Iterable[str]) -> bool:
    """True when Hermes would offer a skill with these ``platforms:`` entries on this machine.

    As in Hermes, no entries allow every machine, and each entry names an
    operating system: ``macos``, ``linux``, ``windows`` or a prefix of
    ``sys.platform`` (Termux counts as Linux). An entry such as ``telegram``
    matches no machine, so Hermes never offers that skill and the plugin never
    injects it. Chat platforms are Hermes' ``skills.platform_disabled``, applied
    by the caller.
    """
    termux = bool(os.environ.get("TERMUX_VERSION") or "com.termux/files/usr" in os.environ.get("PREFIX", ""))
    entries = list(platforms)
    for entry in entries:
        wanted = str(entry).strip().lower()
        wanted = _OS_NAMES.get(wanted, wanted)
        if sys.platform.startswith(wanted) or (termux and wanted in ("linux", "termux", "android")):
            return True
    return not entries


def environments_allow(environments: Iterable[str], inactive: frozenset[str]) -> bool:
    """True when Hermes would offer a skill with these ``environments:`` entries.

    ``inactive`` names the environments Hermes knows and finds inactive. As in
    Hermes, no entries allow every environment; otherwise one entry that is
    neither empty nor inactive is needed, so an unknown tag keeps the skill
    offered and ``[""]`` hides it.
    """
    entries = list(environments)
    return not entries or any(entry and entry not in inactive for entry in entries)


@dataclass(frozen=True)
class SkippedFile:
    """A SKILL.md (or folder) that was not indexed, and why."""

    path: str
    reason: str


@dataclass(frozen=True)
class Duplicate:
    """A skill name found twice; the ``kept`` file wins, ``dropped`` is ignored."""

    name: str
    kept: str
    dropped: str


@dataclass
class Discovery:
    """Everything discovery found: usable skills and what was left out."""

    skills: list[Skill] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)
    duplicates: list[Duplicate] = field(default_factory=list)


class SkillFileError(ValueError):
    """A SKILL.md that cannot become a skill; the message is the reason."""


# --------------------------------------------------------------------------- parsing


def decode_skill_bytes(raw: bytes) -> tuple[str, list[str]]:
    """Decode bytes to text: BOM stripped, CRLF/CR normalised, bad bytes replaced."""
    warnings = []
    if not raw.strip():
        raise SkillFileError("empty file")
    if b"\x00" in raw[:8192]:
        raise SkillFileError("binary file (contains NUL bytes)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = raw.decode("utf-8", errors="replace")
        warnings.append(f"not valid UTF-8 (first bad byte at offset {exc.start}); replaced undecodable bytes")
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise SkillFileError("empty file")
    return text, warnings


def split_front_matter(text: str) -> tuple[str | None, str]:
    """Split ``---``-fenced front matter from the body.

    The closing fence must be a line of its own, so ``---`` inside a quoted or
    indented value does not end the block. Returns ``(None, text)`` when there
    is no complete front matter block.
    """
    if not text.startswith("---"):
        return None, text
    first_newline = text.find("\n")
    if first_newline == -1 or text[:first_newline].strip() != "---":
        return None, text
    closing = _FENCE.search(text, first_newline + 1)
    if closing is None:
        return None, text
    return text[first_newline + 1 : closing.start()], text[closing.end() :].lstrip("\n")


def parse_front_matter(block: str) -> tuple[dict[str, Any], list[str]]:
    """``yaml.safe_load`` the block; on invalid YAML fall back to ``key: value`` lines."""
    import yaml

    try:
        data = yaml.load(block, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""
        data = {}
        for line in block.split("\n"):
            key, sep, value = line.partition(":")
            if sep and key.strip() and not line.startswith((" ", "\t")):
                data[key.strip()] = value.strip().strip("'\"")
        return data, [f"invalid YAML front matter{where}; read simple 'key: value' lines instead"]
    if data is None:
        return {}, []
    if not isinstance(data, dict):
        return {}, [f"front matter is a {type(data).__name__}, not a mapping; ignored it"]
    return data, []


def first_paragraph(body: str) -> str:
    """The first prose paragraph of a markdown body (headings only as a last resort)."""
    heading = ""
    in_code = False
    paragraph: list[str] = []
    for line in body.split("\n"):
        stripped = line.strip()
        if stripped.startswith("```"):
            in_code = not in_code
            if paragraph:
                break
            continue
        if in_code:
            continue
        if not stripped:
            if paragraph:
                break
            continue
        if stripped.startswith("#"):
            if paragraph:
                break
            heading = heading or stripped.lstrip("#").strip()
            continue
        paragraph.append(stripped)
    return " ".join(paragraph) or heading


def _scalars(value: Any) -> list[str]:
    """The non-empty scalars inside a front matter value, in order, whitespace collapsed.

    Lists and mappings are walked with a stack and a budget of
    ``MAX_FIELD_NODES`` values, so YAML aliases nesting a list inside itself
    many times over (an "alias bomb") cost no more than a long list.
    """
    found: list[str] = []
    pending, budget = [value], MAX_FIELD_NODES
    while pending and budget:
        item = pending.pop()
        budget -= 1
        if isinstance(item, dict):
            pending.extend(reversed(list(item.values())))
        elif isinstance(item, (list, tuple, set)):
            pending.extend(reversed(list(item)))
        elif item is not None:
            text = " ".join(str(item).split())
            if text:
                found.append(text)
    return found


def _text_value(value: Any) -> str:
    return " ".join(_scalars(value))


def _string_list(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(v for v in re.split(r"[,\s]+", value) if v)
    return tuple(_scalars(value))


def _platforms(value: Any) -> tuple[str, ...]:
    """``platforms:`` as Hermes reads it: a list's items, or one value as a single entry.

    A nested list or mapping stays an entry (one that names no operating
    system), so it can never widen where a skill is offered.
    """
    if not value:
        return ()
    items = value if isinstance(value, list) else [value]
    return tuple("(nested value)" if isinstance(item, (list, tuple, set, dict)) else str(item).strip()
                 for item in items[:MAX_FIELD_NODES])


def _environments(value: Any) -> tuple[str, ...]:
    """``environments:`` as Hermes reads it: like ``platforms:``, each entry lowercased and stripped.

    A nested list or mapping stays an entry that names no environment, so it
    keeps the skill offered, as in Hermes.
    """
    return tuple(entry.lower() for entry in _platforms(value))


def _tags(front: dict[str, Any]) -> tuple[str, ...]:
    tags = list(_string_list(front.get("tags")))
    metadata = front.get("metadata")
    if isinstance(metadata, dict):
        hermes = metadata.get("hermes")
        for source in (metadata, hermes if isinstance(hermes, dict) else {}):
            tags.extend(_string_list(source.get("tags")))
    return tuple(dict.fromkeys(tags))


def parse_skill(raw: bytes, path: Path, root: Path, external: bool = False) -> Skill:
    """Parse one SKILL.md's bytes into a :class:`Skill`; raises :class:`SkillFileError`."""
    text, warnings = decode_skill_bytes(raw)
    block, body = split_front_matter(text)
    front: dict[str, Any] = {}
    if block is None:
        if text.startswith("---"):
            warnings.append("front matter has no closing '---'; treated the whole file as the body")
        else:
            warnings.append("no front matter; used the folder name and first paragraph")
    else:
        front, yaml_warnings = parse_front_matter(block)
        warnings.extend(yaml_warnings)
    folder = path.parent.name
    name = (_text_value(front.get("name")) or folder)[:MAX_NAME_CHARS]
    description = _text_value(front.get("description")) or first_paragraph(body)
    if len(description) > MAX_DESCRIPTION_CHARS:
        description = description[: MAX_DESCRIPTION_CHARS - 3] + "..."
    try:
        relative = path.parent.relative_to(root)
        category = "/".join(relative.parts[:-1])
    except ValueError:
        category = ""
    return Skill(
        name=name,
        description=description,
        category=category,
        path=str(path),
        folder=folder,
        content_hash=hashlib.sha256(raw).hexdigest(),
        platforms=_platforms(front.get("platforms")),
        environments=_environments(front.get("environments")),
        tags=_tags(front),
        external=external,
        body=body,
        warnings=tuple(warnings),
    )


def strip_front_matter(text: str) -> str:
    """The markdown body of a SKILL.md text (front matter removed)."""
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    return split_front_matter(text)[1]


# --------------------------------------------------------------------------- discovery


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
    pending = [root]  # folders still to list, the next one last (a stack: nesting depth costs no recursion)
    while pending:
        directory = pending.pop()
        try:
            st = directory.stat()
        except OSError as exc:
            skipped.append(SkippedFile(str(directory), f"cannot read folder: {exc.strerror or exc}"))
            continue
        key = (st.st_dev, st.st_ino)
        if key in seen:
            continue
        seen.add(key)
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            skipped.append(SkippedFile(str(directory), f"cannot read folder: {exc.strerror or exc}"))
            continue
        names = {e.name for e in entries}
        if VENV_MARKER in names:
            continue
        is_skill_dir = SKILL_FILENAME in names
        if is_skill_dir:
            yield Path(directory) / SKILL_FILENAME
        children = []
        for entry in entries:
            if entry.name.startswith(".") or entry.name in EXCLUDED_DIRS:
                continue
            if is_skill_dir and entry.name in SKILL_SUPPORT_DIRS:
                continue
            try:
                if not entry.is_dir(follow_symlinks=True):
                    continue
            except OSError:
                continue
            child = Path(entry.path)
            if entry.is_symlink():
                try:
                    target = child.resolve(strict=True)
                except (OSError, RuntimeError):
                    skipped.append(SkippedFile(str(child), "broken or looping symlink"))
                    continue
                if not target.is_relative_to(real_root):
                    skipped.append(
                        SkippedFile(
                            str(child),
                            f"symlink leads outside the skills root (to {target}); "
                            "add that folder to skills.external_dirs to index it",
                        )
                    )
                    continue
            children.append(child)
        pending.extend(reversed(children))


def _read_skill_bytes(path: Path, real_root: Path) -> bytes:
    if path.is_symlink():
        try:
            target = path.resolve(strict=True)
        except (OSError, RuntimeError):  # Python < 3.13 raises RuntimeError on a loop
            raise SkillFileError("broken or looping symlink") from None
        if not target.is_relative_to(real_root):
            raise SkillFileError(f"symlink leads outside the skills root (to {target})")
    return read_skill_file(path)


def read_skill_file(path: Path) -> bytes:
    """The bytes of ``path`` if it is a regular file of at most ``MAX_SKILL_BYTES``.

    Raises :class:`SkillFileError` (or ``OSError``) otherwise. The file is
    opened without blocking, so a FIFO named SKILL.md cannot hang the caller.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SkillFileError("not a regular file")
        if st.st_size > MAX_SKILL_BYTES:
            raise SkillFileError(
                f"file is {st.st_size // (1024 * 1024)} MB, over the {MAX_SKILL_BYTES // (1024 * 1024)} MB limit"
            )
        return b"".join(iter(lambda: os.read(fd, 1 << 20), b""))
    finally:
        os.close(fd)


def discover_skills(
    roots: Iterable[SkillsRoot],
    reuse: dict[tuple[str, str], Skill] | None = None,
) -> Discovery:
    """Find and parse every skill under ``roots``.

    Earlier roots win name clashes (local before external, as in Hermes); the
    losers are reported as duplicates. ``reuse`` maps ``(path, content_hash)``
    to an already-parsed skill, which is returned as is instead of re-parsed.
    """
    found = Discovery()
    by_name: dict[str, Skill] = {}
    for root in roots:
        root_path = Path(root.path)
        if not root_path.is_dir():
            continue
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
                found.skipped.append(SkippedFile(str(path), f"cannot read file: {exc.strerror or exc}"))
                continue
            kept = by_name.get(skill.name)
            if kept is not None:
                found.duplicates.append(Duplicate(skill.name, kept=kept.path, dropped=skill.path))
                continue
            by_name[skill.name] = skill
            found.skills.append(skill)
    return found
