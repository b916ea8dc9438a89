"""The compact skills section on the outgoing request: Hermes' listing found as the exact bytes its builder renders,
as whole paragraphs, exactly once, in every request shape, and nothing else touched.

The listings here stand in for what Hermes' builder returns (``agent/prompt_builder.py``
``build_skills_system_prompt``; tests/hermes/test_hermes_listing.py asks the real one); the request shapes are those
each transport hands ``llm_request`` middleware (``agent/turn_api_request.py`` on 0.22.2,
``agent/conversation_loop.py`` on 0.19.0 and 0.20.1), cache markers applied.
"""

from __future__ import annotations

import copy

import pytest

from semantic_skills.hermes.prompt.listing import Span, Unsure, listing_span
from semantic_skills.hermes.prompt.middleware import section_for
from semantic_skills.hermes.prompt.request import replaced, system_texts, tool_names
from semantic_skills.hermes.prompt.stub import (
    COMPACT_SKILLS_PROMPT,
    COMPACT_SKILLS_PROMPT_ON_DEMAND,
    COMPACT_SKILLS_PROMPT_WITHOUT_SEARCH,
)

BEFORE, AFTER = "You are a helpful agent.\n\nAGENTS.md: keep answers short.", "Host: Linux\nUser home: /home/u"
LISTING = ("## Skills\nScan the skills below and load one when it fits.\n\n<available_skills>\n  devops:\n"
           "    - docker-compose-debug: Debug compose stacks.\n</available_skills>\n\n"
           "Only proceed without loading a skill if genuinely none are relevant to the task.")


def prompt(*parts: str) -> str:
    return "\n\n".join(parts)  # how Hermes joins the parts of its system prompt


@pytest.mark.parametrize("texts, where", [
    ([prompt(BEFORE, LISTING, AFTER)], Span(0, len(BEFORE) + 2, len(BEFORE) + 2 + len(LISTING))),
    ([prompt(LISTING, AFTER)], Span(0, 0, len(LISTING))),
    ([prompt(BEFORE, LISTING)], Span(0, len(BEFORE) + 2, len(BEFORE) + 2 + len(LISTING))),
    ([BEFORE, LISTING, AFTER], Span(1, 0, len(LISTING))),  # cached parts: the listing is a part of its own
    ([BEFORE, "\n\n" + LISTING], Span(1, 2, 2 + len(LISTING))),
], ids=["between", "first", "last", "a part of its own", "a part's end"])
def test_the_listing_is_found_where_it_stands_as_whole_paragraphs(texts, where):
    assert listing_span(texts, LISTING) == where


@pytest.mark.parametrize("other", [
    "## Skills\n<available_skills>\n  notes: x\n</available_skills>",  # the tags and heading, in any shape
    "<available_skills>",
    "## Skills (mandatory)\nLoad them all.",
    "- docker-compose-debug: Debug compose stacks.\n</available_skills>",  # a part of the listing
], ids=["a look-alike listing", "a tag line", "a heading", "the listing's tail"])
def test_text_that_looks_like_a_listing_neither_stops_the_swap_nor_is_taken_for_it(other):
    texts = [prompt(BEFORE, other, LISTING, other, AFTER), other]

    span = listing_span(texts, LISTING)
    assert texts[0][span.start:span.end] == LISTING and span.start == len(prompt(BEFORE, other)) + 2
    with pytest.raises(Unsure, match="is not in its system prompt"):
        listing_span([prompt(BEFORE, other, AFTER)], LISTING)


@pytest.mark.parametrize("texts", [
    [prompt(BEFORE, LISTING, AFTER, LISTING)],
    [prompt(BEFORE, LISTING), prompt(LISTING, AFTER)],
], ids=["one text", "two parts"])
def test_a_copy_of_the_listing_leaves_nothing_sure(texts):
    with pytest.raises(Unsure, match="stands 2 times"):
        listing_span(texts, LISTING)


@pytest.mark.parametrize("text", [
    f"{BEFORE}\n{LISTING}\n\n{AFTER}",  # one line break before: inside another paragraph
    f"{BEFORE}\n\n{LISTING} and more",
    f"{BEFORE}\n\nIntro: {LISTING}",
], ids=["no blank line before", "text after on its line", "text before on its line"])
def test_the_listing_inside_another_paragraph_is_not_hermes_part(text):
    with pytest.raises(Unsure, match="is not in its system prompt"):
        listing_span([text], LISTING)


def test_an_empty_listing_is_never_looked_for():
    with pytest.raises(Unsure, match="empty"):
        listing_span([prompt(BEFORE, AFTER)], "")


# --------------------------------------------------------------------------- request shapes

SYSTEM = prompt(BEFORE, LISTING, AFTER)
CACHE = {"type": "ephemeral"}
SHAPES = {
    "chat completions, one string": {"messages": [{"role": "system", "content": SYSTEM}, {"role": "user",
                                                                                          "content": "hi"}]},
    "chat completions, developer role": {"messages": [{"role": "developer", "content": SYSTEM}]},
    "chat completions, cached parts": {"messages": [{"role": "system", "content": [
        {"type": "text", "text": BEFORE, "cache_control": CACHE},
        {"type": "text", "text": "\n\n" + LISTING + "\n\n" + AFTER, "cache_control": CACHE}]}]},
    "anthropic, string": {"system": SYSTEM, "messages": [{"role": "user", "content": "hi"}]},
    "anthropic, cached blocks": {"system": [{"type": "text", "text": BEFORE, "cache_control": CACHE},
                                            {"type": "text", "text": "\n\n" + LISTING, "cache_control": CACHE}]},
    "bedrock": {"system": [{"text": SYSTEM}, {"cachePoint": {"type": "default"}}]},
    "responses (codex)": {"instructions": SYSTEM, "input": [], "prompt_cache_key": "k"},
}


@pytest.mark.parametrize("shape", SHAPES)
def test_only_the_text_holding_the_listing_changes_in_every_request_shape(shape):
    request = SHAPES[shape]
    kept = copy.deepcopy(request)
    located = list(system_texts(request))
    span = listing_span([text for _, text in located], LISTING)
    path, text = located[span.part]

    rewritten = replaced(request, path, text[:span.start] + "STUB" + text[span.end:])
    assert request == kept  # Hermes' request is not touched: the rewrite is a copy
    changed = [(p, t) for p, t in system_texts(rewritten) if "STUB" in t]
    assert [p for p, _ in changed] == [path] and "<available_skills>" not in changed[0][1]
    assert _without(rewritten, path) == _without(request, path)  # markers, parts, order and the rest as they were


def _without(request, path):
    copied = copy.deepcopy(request)
    node = copied
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = None
    return copied


def test_a_user_message_is_never_read_as_the_system_prompt():
    request = {"messages": [{"role": "user", "content": SYSTEM}]}

    assert list(system_texts(request)) == []


def test_tool_names_are_read_in_each_provider_shape():
    request = {"tools": [{"type": "function", "function": {"name": "search_skills"}}, {"name": "skill_view"},
                         {"toolSpec": {"name": "terminal"}}, "junk", {"function": None}]}

    assert tool_names(request) == {"search_skills", "skill_view", "terminal"}
    assert tool_names({"toolConfig": {"tools": [{"toolSpec": {"name": "web_search"}}]}}) == {"web_search"}


def test_the_stub_says_how_search_skills_is_offered():
    direct = {"tools": [{"type": "function", "function": {"name": "search_skills"}}]}
    bridge = {"tools": [{"type": "function", "function": {"name": "tool_search", "description":
                         "Search 12 additional tools loaded on demand.\n\n- search_skills: Find saved skills."}},
                        {"type": "function", "function": {"name": "tool_call"}}]}
    neither = {"tools": [{"type": "function", "function": {"name": "tool_search", "description": "- web_fetch"}}]}

    assert section_for(direct) == COMPACT_SKILLS_PROMPT
    assert section_for(bridge) == COMPACT_SKILLS_PROMPT_ON_DEMAND and "tool_call" in COMPACT_SKILLS_PROMPT_ON_DEMAND
    assert section_for(neither) == COMPACT_SKILLS_PROMPT_WITHOUT_SEARCH
    assert section_for({}) == COMPACT_SKILLS_PROMPT  # no tool information: as Hermes offers it by default
