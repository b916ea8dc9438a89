"""A Hermes home's index is the home's own: the index an earlier release kept in the plugin folder is moved into
the home, when it is this home's, or left where it is and never read.

Earlier releases kept the default index in ``HOME/plugins/semantic-skills/
skills_index``. That folder is the plugin's code, and often a link to one
checkout that several homes (profiles) share, so one home's index served
another. The default is now ``HOME/semantic-skills/skills_index``
(:func:`~semantic_skills.hermes.config.default_index_dir`); the first start or
command of a home that has none there looks for the old one once.

An old index is this home's when every skills folder it was built from is
one this home scans: then it holds nothing this home could not read itself,
and it is moved into the home (under both build locks, published at once),
which also takes a home's private skills out of a folder others may share.
Otherwise (another home's folders, ``--skills-dir`` ones, an unreadable
manifest) it stays where it is, unread, and this home builds its own.
Standard library only: the Hermes process runs this before it starts the
routing worker.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import SemanticSkillsError, first_line
from ..index import MANIFEST
from ..index.relocate import move_index
from ..skills.discovery import SkillsRoot
from .config import INDEX_FOLDER, default_index_dir, plugin_folder
from .offer.roots import scanned_roots

EARLIER = "where earlier releases kept it"


@dataclass(frozen=True)
class EarlierIndex:
    """The index an earlier release left in a home's plugin folder (``legacy``): moved to ``target``, or left where
    it was for ``reason``."""

    legacy: Path
    target: Path
    reason: str = ""  # why it stays where it is; "" once moved

    @property
    def moved(self) -> bool:
        return not self.reason

    def said(self, build: str = "") -> str:
        """What became of it, in one line; ``build``, the command that builds this home's own, ends the line when
        the old one stays."""
        if self.moved:
            return f"moved this home's index from {self.legacy}, {EARLIER}, to {self.target}"
        own = f"; this home's own goes in {self.target}: {build}" if build else ""
        return f"the index in {self.legacy}, {EARLIER}, is not used ({self.reason}){own}"


def legacy_index_dir(home: Path) -> Path:
    """Where earlier releases kept the default index of ``home``: inside the plugin folder."""
    return plugin_folder(home) / INDEX_FOLDER


def settle_index(home: Path, config: dict, index_dir: Path) -> EarlierIndex | None:
    """Move into ``home`` the index an earlier release left in its plugin folder, if it is this home's.

    Only when ``index_dir``, the folder the caller serves, is the home's
    default and holds no index yet, and the old folder holds one; None
    otherwise (nothing is read then but two ``stat`` calls).
    """
    target, legacy = default_index_dir(home), legacy_index_dir(home)
    if Path(index_dir) != target or (target / MANIFEST).exists() or not (legacy / MANIFEST).exists():
        return None
    scanned = {_resolved(root) for root in scanned_roots(home, config)}
    try:
        reason = move_index(legacy, target, lambda roots: _not_scanned(roots, scanned))
    except (SemanticSkillsError, OSError) as exc:  # a build holds a folder, or the disk said no
        reason = f"it could not be moved: {first_line(exc)}"
    return EarlierIndex(legacy, target, reason)


def _not_scanned(indexed: list[str], scanned: set[Path]) -> str:
    """Why an index built from ``indexed`` is not this home's: the folders it holds skills of that this home does
    not scan; "" when it scans them all."""
    foreign = [root for root in indexed if _resolved(root) not in scanned]
    if foreign:
        return f"it was built from {', '.join(foreign)}, which this home does not scan"
    return ""


def _resolved(root: SkillsRoot | str) -> Path:
    return Path(root.path if isinstance(root, SkillsRoot) else root).expanduser().resolve()
