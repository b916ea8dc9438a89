"""Parse one SKILL.md: YAML front matter (``name``, ``description``, ``platforms``...) and a markdown body.

Imperfect files are tolerated: a BOM, CRLF line ends, bad bytes and invalid
YAML each become a warning; an empty or binary file is refused, and so is a
name a reader would not read as written (see :func:`skill_name`).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from itertools import chain, islice
from pathlib import Path
from typing import Any, Iterator

from ..glyphs import misreading, one_line, visible
from .front_matter import parse_front_matter, split_front_matter

MAX_FIELD_NODES = 10_000  # values read from one front matter field
MAX_NAME_CHARS = 64  # the agent's own limits: it cuts names and descriptions to these lengths
MAX_DESCRIPTION_CHARS = 1024
MAX_NAMESPACES = 64  # agent namespaces (mappings under ``metadata``) read per skill
# Keys of an agent's namespace that make a skill's offer depend on the session (its tools, toolsets, chat platform).
CONDITION_KEYS = ("requires_tools", "requires_toolsets", "fallback_for_tools", "fallback_for_toolsets",
                  "session_platforms")

Condition = tuple[str, tuple[str, ...] | str]  # a condition key and its value, as the agent reads it
Conditions = tuple[tuple[str, tuple[Condition, ...]], ...]  # per agent namespace, the conditions it sets

_WORD = re.compile(r"[^,\s]+")


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
    conditions: Conditions = ()
    body: str = field(default="", repr=False, compare=False)
    warnings: tuple[str, ...] = ()


class SkillFileError(ValueError):
    """A SKILL.md that cannot become a skill; the message is the reason."""


# How names are made (stored in the index: a parsed skill of an index made otherwise is read again).
NAMING = "as written, or refused when a reader would misread them"


def skill_name(raw: str, source: str = "the name") -> str:
    """The one name a skill goes by in the index, its block and everything that recognises it: ``raw`` (its
    ``name:`` or folder name) cut to ``MAX_NAME_CHARS`` as the agent cuts it, and otherwise exactly as the agent
    has it, so the name a block gives is the one the agent's ``skill_view`` loads.

    Raises :class:`SkillFileError` (``source`` names it) when a reader would
    not read it as written (:func:`glyphs.misreading`): a name with a
    zero-width or other invisible character would pass for another skill's.
    """
    name = raw[:MAX_NAME_CHARS]
    why = misreading(name)
    if why:
        raise SkillFileError(f'{source} "{visible(name)}" {why}')
    return name


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


def _description(text: str) -> str:
    """``text`` on one line (see :func:`one_line`), cut to ``MAX_DESCRIPTION_CHARS`` as the agent cuts it."""
    description = one_line(text[: 2 * MAX_DESCRIPTION_CHARS])  # cleaning only shortens: twice the limit is enough
    if len(description) > MAX_DESCRIPTION_CHARS:
        return description[: MAX_DESCRIPTION_CHARS - 3] + "..."
    return description


def _text_value(value: Any) -> str:
    return " ".join(_scalars(value))


def _words(value: Any) -> Iterator[str]:
    """A list's scalars, or a string's words split at commas and whitespace (lazily, however long it is)."""
    if isinstance(value, str):
        return (match.group() for match in _WORD.finditer(value))
    return iter(_scalars(value))


def _platforms(value: Any) -> tuple[str, ...]:
    """``platforms:`` as the agent reads it: a list's items, or one value as a single entry.

    A nested list or mapping stays an entry (one that names no operating
    system), so it can never widen where a skill is offered.
    """
    if not value:
        return ()
    items = value if isinstance(value, list) else [value]
    return tuple(_entry(item).strip() for item in items[:MAX_FIELD_NODES])


def _entry(item: Any) -> str:
    """A list item as a string; a nested list or mapping becomes an entry naming nothing (never walked)."""
    return "(nested value)" if isinstance(item, (list, tuple, set, dict)) else str(item)


def _environments(value: Any) -> tuple[str, ...]:
    """``environments:`` as the agent reads it: like ``platforms:``, each entry lowercased and stripped.

    A nested list or mapping stays an entry that names no environment, so it
    keeps the skill offered, as in the agent.
    """
    return tuple(entry.lower() for entry in _platforms(value))


def _namespaces(metadata: Any) -> list[tuple[str, dict]]:
    """The agent namespaces: each mapping under ``metadata`` with its name (the first ``MAX_NAMESPACES``)."""
    if not isinstance(metadata, dict):
        return []
    found = ((name, value) for name, value in metadata.items() if isinstance(name, str) and isinstance(value, dict))
    return list(islice(found, MAX_NAMESPACES))


def _tags(front: dict[str, Any], namespaces: list[tuple[str, dict]]) -> tuple[str, ...]:
    """``tags``, ``metadata.tags`` and every namespace's ``tags``, each once, at most ``MAX_FIELD_NODES``."""
    metadata = front.get("metadata")
    sources = [front, metadata] if isinstance(metadata, dict) else [front]
    sources += [namespace for _, namespace in namespaces]
    found = chain.from_iterable(_words(source.get("tags")) for source in sources)
    return tuple(dict.fromkeys(islice(found, MAX_FIELD_NODES)))


def offer_conditions(metadata: Any) -> Conditions:
    """The offer conditions of each agent namespace under a skill's ``metadata`` (see :func:`_conditions`)."""
    return _conditions(_namespaces(metadata))


def _conditions(namespaces: list[tuple[str, dict]]) -> Conditions:
    """Each namespace's offer conditions that are set, as its agent reads them, keyed by namespace.

    A list keeps its items as strings and a string stays one string (the
    agent iterates whatever it finds); other values are not conditions. All
    namespaces together keep at most ``MAX_FIELD_NODES`` list items and string characters.
    """
    found, budget = [], MAX_FIELD_NODES
    for name, namespace in namespaces:
        conditions = []
        for key in CONDITION_KEYS:
            value = namespace.get(key)
            if isinstance(value, list):
                value = tuple(_entry(item) for item in value[:budget])
            elif isinstance(value, str):
                value = value[:budget]
            else:
                continue
            if value:
                conditions.append((key, value))
                budget -= len(value)
        if conditions:
            found.append((name, tuple(conditions)))
    return tuple(found)


def _name(front: dict[str, Any], folder: str) -> str:
    """The skill's name as the agent gives it: its ``name:`` as written, else its folder's name (see
    :func:`skill_name`); a ``name:`` that is not text is refused, as the agent does not list it."""
    if "name" not in front:
        try:
            return skill_name(folder, "its folder's name")
        except SkillFileError as exc:
            raise SkillFileError(f"{exc}: rename the folder, or give the skill a name: line") from None
    value = front["name"]
    if not isinstance(value, str):
        raise SkillFileError(f"its name: is {_kind(value)}, not text, so the agent does not list it: write it in "
                             "quotes, or remove the line to go by the folder's name")
    try:
        return skill_name(value, "its name:")
    except SkillFileError as exc:
        raise SkillFileError(f"{exc}: write the name with visible characters and single spaces only") from None


def _kind(value: Any) -> str:
    if value is None:
        return "empty"
    kinds = ((bool, "true or false"), ((int, float), "a number"), (dict, "a mapping"), (list, "a list"))
    return next((kind for types, kind in kinds if isinstance(value, types)), f"a {type(value).__name__}")


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
    name = _name(front, folder)
    description = _description(_text_value(front.get("description"))) or _description(first_paragraph(body))
    try:
        relative = path.parent.relative_to(root)
        category = "/".join(relative.parts[:-1])
    except ValueError:
        category = ""
    namespaces = _namespaces(front.get("metadata"))
    return Skill(
        name=name,
        description=description,
        category=category,
        path=str(path),
        folder=folder,
        content_hash=hashlib.sha256(raw).hexdigest(),
        platforms=_platforms(front.get("platforms")),
        environments=_environments(front.get("environments")),
        tags=_tags(front, namespaces),
        external=external,
        conditions=_conditions(namespaces),
        body=body,
        warnings=tuple(warnings),
    )
