"""``search``, ``route`` and ``demo``: what the router makes of a message."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import click

from ..errors import SemanticSkillsError, command
from ..gates import FULL
from . import defaults
from .app import index_options, json_option, main
from .output import echo, echo_json
from .progress import build_progress

EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples"
EXAMPLE_MESSAGES_BYTES = 1 << 20  # examples/messages.txt is a few KB
SCORE_WORDS = ("score ranks the skills: the similarity plus a small bonus for words and names the message "
               "shares with the skill; similarity (cosine, of the whole skill and of its best-matching "
               "sentence) is what the floor checks")


@main.command()
@click.argument("query")
@click.option("-k", "k", default=5, show_default=True, type=click.IntRange(1, 100), help="How many skills to list.")
@click.option("--platform", help="Also leave out the skills skills.platform_disabled turns off on this chat platform.")
@index_options
@json_option
def search(query, k, platform, index_dir, backend, model, as_json):
    """List the skills that best match QUERY, best first (skills.disabled left out)."""
    if not query.strip():
        raise SemanticSkillsError('QUERY is empty; describe the task in a few words, for example: '
                                  'search "convert a PDF to markdown"')
    router = defaults.open_router(index_dir, backend, model)
    results = router.search(query, k=k, exclude=defaults.disabled_skill_names(platform))
    if as_json:
        echo_json([c.as_dict() for c in results])
        return
    if not router.manifest.skills:
        echo(f"the index in {router.index_dir} holds no skills: add SKILL.md files and run `{command('build')}`")
    for rank, c in enumerate(results, 1):
        echo(f"{rank:>2}. {c.score:.3f}  {c.name}  {c.description[:100]}")


def _decision(query, decision) -> dict:
    return {"query": query, **decision.as_dict()}


def _what(decision) -> str:
    """What a decision that injects something injects, in words."""
    if decision.mode == FULL:
        return f"inject {decision.skill.name} whole"
    return "inject a hint naming " + " and ".join(c.name for c in decision.named)


def _scored(skill) -> str:
    """A chosen skill's score in words: the similarity the gate reads, plus the word-match bonus when there is one."""
    bonus = skill.score - skill.similarity
    if abs(bonus) < 0.0005:
        return f"score {skill.score:.3f}"
    return f"score {skill.score:.3f} = similarity {skill.similarity:.3f} + word match {bonus:.3f}"


@main.command()
@click.argument("message", required=False)
@click.option("--queries", type=click.File("r", encoding="utf-8"),
              help='A JSONL file with one {"query": ...} per line; prints one JSON decision per line, in order.')
@click.option("--platform", help="Route as the hook would for this chat platform (its skills.platform_disabled).")
@index_options
@json_option
def route(message, queries, platform, index_dir, backend, model, as_json):
    """Decide what would be injected for MESSAGE: a skill whole, a hint naming one or two, or nothing
    (skills.disabled left out). With --json or --queries, "mode" is "full" or "hint" (null for nothing)."""
    if (message is None) == (queries is None):
        raise click.UsageError("give either MESSAGE or --queries FILE")
    router = defaults.open_router(index_dir, backend, model)
    exclude = defaults.disabled_skill_names(platform)
    if queries is None:
        decision = router.route(message, exclude=exclude)
        if as_json:
            echo_json(_decision(message, decision))
        elif decision.skill:
            echo(f"{_what(decision)} ({_scored(decision.skill)}): {decision.reason}")
            echo(f"({SCORE_WORDS})")
        else:
            echo(f"inject nothing: {decision.reason}")
        return
    for number, line in enumerate(queries, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            query = record["query"] if isinstance(record, dict) else None
            if not isinstance(query, str):
                raise ValueError('no string "query" field')
        except (ValueError, KeyError) as exc:
            echo_json({"query": None, "skill": None, "score": 0.0, "reason": f"line {number}: invalid input ({exc})",
                      "candidates": []})
            continue
        echo_json(_decision(query, router.route(query, exclude=exclude)))


@main.command()
@click.option("--show", "show_chars", default=300, show_default=True, type=click.IntRange(0, None),
              help="How many characters of each injected message to print.")
def demo(show_chars):
    """Build an index over examples/skills and route the sample messages (offline, no API key)."""
    from ..builder import build_index
    from ..files import read_regular_file
    from ..injection import inject, skill_block, skill_body
    from ..router import SkillRouter
    from ..settings import EmbedderSettings
    from ..skills.discovery import SkillsRoot, read_skill_file

    skills_dir = EXAMPLES_DIR / "skills"
    messages_file = EXAMPLES_DIR / "messages.txt"
    if not skills_dir.is_dir() or not messages_file.is_file():
        raise click.ClickException(f"the examples are missing from {EXAMPLES_DIR}; run the demo from a source checkout")
    lines = read_regular_file(messages_file, EXAMPLE_MESSAGES_BYTES).decode("utf-8").splitlines()
    messages = [m.strip() for m in lines if m.strip() and not m.startswith("#")]
    echo(f"Building an index of the example skills in {skills_dir} with the default embedder...")
    with tempfile.TemporaryDirectory(prefix="semantic-skills-demo-") as tmp:
        report = build_index([SkillsRoot(skills_dir)], Path(tmp), EmbedderSettings(), progress=build_progress())
        second = f" and {report.multilingual}" if report.multilingual else ""
        echo(f"Built an index of {report.skills} example skills with {report.embedder}{second} "
             f"in {report.seconds:.1f} s\n")
        router = SkillRouter.open(tmp)
        for message in messages:
            decision = router.route(message)
            echo(f"> {message}")
            if decision.skill is None:
                best = decision.candidates[0] if decision.candidates else None
                nearest = f"; nearest {best.name} at {best.score:.3f}" if best else ""
                echo(f"  inject nothing ({decision.reason}{nearest})\n")
                continue
            echo(f"  {_what(decision)} ({_scored(decision.skill)})")
            if decision.mode != FULL:
                echo(f"  ({decision.reason})\n")
                continue
            body = skill_body(read_skill_file(Path(decision.skill.path)).decode("utf-8"))
            text = inject(message, skill_block(decision.skill.name, body).text)
            if show_chars:
                more = len(text) - show_chars
                preview = text if more <= 0 else text[:show_chars] + f"... [{more} more characters]"
                echo("  " + preview.replace("\n", "\n  ") + "\n")
