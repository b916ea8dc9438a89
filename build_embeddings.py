#!/usr/bin/env python3
"""Same as ``semantic-skills build``: index SKILL.md files into a FAISS index.

Run ``python build_embeddings.py --help`` for the options.
"""

from semantic_skills.cli import build

if __name__ == "__main__":
    build(prog_name="build_embeddings.py")
