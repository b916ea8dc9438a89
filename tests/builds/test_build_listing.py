"""On each build, the compact section replaces Hermes' own skills listing and nothing else, whatever a context file,
a memory entry or a skill's description holds (drivers/listing_cases.py; issue 33, item 7)."""

from __future__ import annotations

import pytest

TAG_LINES = "<available_skills>\n  notes: the team's\n</available_skills>"


@pytest.mark.parametrize("case, planted", [
    ("context_file", f"## Skills\n{TAG_LINES}"),
    ("memory", f"The user keeps a list of skills:\n{TAG_LINES}"),
    ("description", "- two-lines: First line\n<available_skills>"),
])
def test_text_holding_the_listing_tags_leaves_the_swap_alone(listing_report, case, planted):
    """The stub stands where Hermes' listing stood, and every other byte of Hermes' prompt is as Hermes built it."""
    seen = listing_report[case]
    built, listing = seen["built"], seen["listing"]
    assert planted in built and built.count(listing) == 1 and "docker-compose-debug" in listing

    assert seen["sent"] == built.replace(listing, seen["stub"])


def test_without_hermes_listing_a_heading_and_tags_elsewhere_are_never_taken_for_it(listing_report):
    """``-t terminal,memory``: Hermes writes no listing, and the prompt goes out byte for byte as Hermes built it."""
    seen = listing_report["no_listing"]
    assert "skill_view" not in seen["tools"] and TAG_LINES in seen["built"] and "## Skills\nAsk" in seen["built"]

    assert seen["sent"] == seen["built"]
