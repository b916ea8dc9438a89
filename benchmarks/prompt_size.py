"""Measure the system prompt a provider receives with the skills of a folder installed: ``full`` against
``compact``, and what the plugin's ``llm_request`` middleware costs per request.

    python benchmarks/prompt_size.py [--skills-dir ../shared/data/corpora] [--requests 500]

The skills are not copied: a temporary Hermes home lists the folder in
``skills.external_dirs``, the plugin is linked into its ``plugins/``, and an
index of the folder is built first (without one the plugin keeps Hermes' own
listing in ``compact`` mode too: the agent must still see its skills).
For each ``prompt_mode`` an ``AIAgent`` builds its system prompt (Hermes' own,
listing included), and a chat-completions request carrying it goes through
Hermes' ``apply_llm_request_middleware`` as a turn's request does. One JSON
line per mode gives the size of Hermes' skills section and of the system
prompt sent, in characters and tokens, and the middleware pass's median and
99th-percentile time per request: on a session's first request (up to 100
new sessions: in ``compact`` mode the plugin asks Hermes' builder for the
session's listing and finds it) and on the requests after it (one session). Tokens are counted with the o200k_base
tokenizer when the ``bpe-openai`` package is importable, else estimated as
Hermes does (characters / 4).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent


def token_counter():
    try:
        import bpe_openai

        encoding = bpe_openai.get_encoding("o200k_base")
        return "o200k_base (bpe-openai)", lambda text: len(encoding.encode(text))
    except ImportError:
        from agent.model_metadata import estimate_tokens_rough

        return "Hermes estimate (characters / 4)", estimate_tokens_rough


def measure(skills_dir: Path, requests: int) -> list[dict]:
    home = Path(tempfile.mkdtemp(prefix="prompt-size-home-"))
    (home / "plugins").mkdir()
    (home / "plugins" / "semantic-skills").symlink_to(REPO, target_is_directory=True)
    os.environ["HERMES_HOME"] = str(home)
    os.environ["SEMANTIC_SKILLS_INDEX_DIR"] = index_dir = tempfile.mkdtemp(prefix="prompt-size-index-")
    subprocess.run([sys.executable, "-m", "semantic_skills", "build", "--skills-dir", str(skills_dir),
                    "--index-dir", index_dir], check=True, stdout=subprocess.DEVNULL)

    from hermes_cli.plugins import discover_plugins

    def configure(mode: str) -> None:
        config = {"skills": {"external_dirs": [str(skills_dir)]},
                  "plugins": {"enabled": ["semantic-skills"],
                              "entries": {"semantic-skills": {"settings": {"prompt_mode": mode}}}}}
        (home / "config.yaml").write_text(yaml.safe_dump(config))

    configure("compact")
    discover_plugins(force=True)
    import run_agent
    from hermes_cli.middleware import apply_llm_request_middleware

    tokenizer, count = token_counter()
    rows = []
    for mode in ("full", "compact"):
        configure(mode)
        agent = run_agent.AIAgent(base_url="http://127.0.0.1:9/v1", api_key="unused", model="fake-model",
                                  quiet_mode=True, skip_context_files=True, skip_memory=True, platform="cli")
        section = run_agent.build_skills_system_prompt(available_tools=agent.valid_tool_names)
        built = agent._build_system_prompt()
        request = {"model": "fake-model", "messages": [{"role": "system", "content": built},
                                                       {"role": "user", "content": "hello"}], "tools": agent.tools}
        def timed(session: str, turn: int) -> tuple[float, dict]:
            started = time.perf_counter()
            sent = apply_llm_request_middleware(request, session_id=session, platform="cli",
                                                turn_id=f"{session}:{turn}").payload
            return time.perf_counter() - started, sent

        firsts = [timed(f"size-{mode}-new-{n}", 0)[0] for n in range(min(requests, 100))]
        seconds, sent = [], request
        for turn in range(requests):
            took, sent = timed(f"size-{mode}", turn)
            seconds.append(took)
        system = sent["messages"][0]["content"]
        rows.append({
            "prompt_mode": mode,
            "skills_listed": section.count("\n    - "),
            "skills_section_chars": len(section),
            "skills_section_tokens": count(section),
            "system_prompt_built_chars": len(built),
            "system_prompt_sent_chars": len(system),
            "system_prompt_sent_tokens": count(system),
            "middleware_ms_p50": milliseconds(seconds, 0.5),
            "middleware_ms_p99": milliseconds(seconds, 0.99),
            "first_request_ms_p50": milliseconds(firsts, 0.5),
            "first_request_ms_p99": milliseconds(firsts, 0.99),
            "tokenizer": tokenizer,
        })
    return rows


def milliseconds(seconds: list[float], quantile: float) -> float:
    return round(sorted(seconds)[int(quantile * (len(seconds) - 1))] * 1000, 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skills-dir", type=Path, default=REPO.parent / "shared" / "data" / "corpora",
                        help="Folder of SKILL.md files to install (default: ../shared/data/corpora).")
    parser.add_argument("--requests", type=int, default=500, help="Requests timed per mode (default 500).")
    args = parser.parse_args()
    if not args.skills_dir.is_dir():
        sys.exit(f"prompt_size: {args.skills_dir} is not a folder")
    skills = sum(1 for _ in args.skills_dir.resolve().rglob("SKILL.md"))
    for row in measure(args.skills_dir.resolve(), args.requests):
        print(json.dumps({"skill_files": skills, **row}))
    sys.stdout.flush()
    os._exit(0)  # skip the routing worker's shutdown wait


if __name__ == "__main__":
    main()
