"""semantic-skills: route each message to the one SKILL.md it needs.

``from semantic_skills import SkillRouter`` is cheap: torch, sentence-transformers
and litellm load only when an embedder first embeds.
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["SkillRouter", "Decision", "Candidate", "build_index", "SemanticSkillsError", "__version__"]


def __getattr__(name: str):
    if name in ("SkillRouter", "Decision", "Candidate"):
        from . import router

        return getattr(router, name)
    if name == "build_index":
        from .builder import build_index

        return build_index
    if name == "SemanticSkillsError":
        from .errors import SemanticSkillsError

        return SemanticSkillsError
    raise AttributeError(f"module 'semantic_skills' has no attribute {name!r}")
