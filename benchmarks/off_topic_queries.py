"""Write a set of real off-topic messages, labelled "inject nothing", for ``semantic-skills eval``.

    pip install chatterbot-corpus
    python benchmarks/off_topic_queries.py > off-topic.jsonl
    semantic-skills eval --queries off-topic.jsonl --index-dir ...

The messages are the user turns of the English ChatterBot dialog corpus
(BSD-3-Clause; read from the installed package, never copied here): chit-chat
with the assistant, emotions, and general-knowledge trivia. Its computing
categories (coding, computers, tech support) are left out by default, since a
coding skill may fairly answer them. Every message is labelled ``gold: []``,
so every injection ``eval`` reports is a false one; ``source`` is the corpus
category.
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib import resources

import yaml

COMPUTING = ("coding", "computers", "tech_support")


def user_turns(language: str = "english", skip: tuple[str, ...] = COMPUTING):
    """``(category, message)`` for each distinct user turn of the corpus, in file order."""
    folder = resources.files("chatterbot_corpus") / "data" / language
    seen = set()
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        category = entry.name.rsplit(".", 1)[0]
        if not entry.name.endswith(".yml") or category in skip:
            continue
        for conversation in yaml.safe_load(entry.read_text(encoding="utf-8")).get("conversations") or []:
            for message in conversation[::2]:  # the user speaks first, then every other turn
                text = str(message).strip()
                if text and text not in seen:
                    seen.add(text)
                    yield category, text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--include-computing", action="store_true",
                        help="keep the coding, computers and tech-support categories")
    args = parser.parse_args()
    try:
        turns = list(user_turns(skip=() if args.include_computing else COMPUTING))
    except ModuleNotFoundError:
        print("error: the chatterbot-corpus package is not installed; fix: pip install chatterbot-corpus",
              file=sys.stderr)
        return 1
    for category, text in turns:
        print(json.dumps({"query": text, "gold": [], "source": category}, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
