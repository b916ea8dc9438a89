"""Plain helpers and paths shared by the test modules (fixtures live in conftest.py)."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# ../shared by default; SEMANTIC_SKILLS_SHARED_DIR points elsewhere (e.g. from a git worktree).
SHARED = Path(os.environ.get("SEMANTIC_SKILLS_SHARED_DIR") or REPO.parent / "shared")
EXAMPLES = REPO / "examples"


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
