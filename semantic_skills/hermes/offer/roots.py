"""The skills folders of a Hermes home: those the running Hermes scans, else those its config.yaml names."""

from __future__ import annotations

from pathlib import Path

from ...skills.discovery import SkillsRoot
from ..config import skills_roots
from ..host.home import hermes_home_bound
from ..host.skills import skills_roots as hermes_skills_roots


def scanned_roots(home: Path, config: dict) -> list[SkillsRoot]:
    """The folders a build for ``home`` indexes and the fallback searches, in Hermes' order of precedence."""
    with hermes_home_bound(home):
        return hermes_skills_roots() or skills_roots(config, home)
