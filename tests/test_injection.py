"""The skill block: the exact text a skill travels in, and how a long body is cut."""

from __future__ import annotations

from semantic_skills.injection import CLOSE_TAG, cap_body, inject, is_injected, skill_block, skill_body

BODY = "\n".join(f"Line {i}: do the next step carefully." for i in range(100))


def test_the_body_is_the_file_without_front_matter_or_blank_lines_at_either_end():
    assert skill_body("---\nname: x\ndescription: y\n---\n\n\n# Title\n\nText.\n\n") == "# Title\n\nText."


def test_a_long_body_is_cut_at_a_line_break_and_says_how_much_is_left():
    capped = cap_body("steps", BODY, 500)

    kept = capped.split("\n\n[Skill truncated:")[0]
    assert len(kept) <= 500 and BODY.startswith(kept) and kept.endswith("carefully.")
    assert f"[Skill truncated: {len(BODY) - len(kept)} more characters." in capped
    assert capped.endswith('Load the full skill with skill_view("steps").]')
    assert cap_body("steps", BODY, len(BODY)) == BODY


def test_a_body_clipped_before_it_arrived_is_capped_as_if_it_were_whole():
    for clipped_at in (600, 1000, len(BODY) - 1):
        for cap in (500, 600):
            assert cap_body("steps", BODY[:clipped_at], cap, len(BODY) - clipped_at) == cap_body("steps", BODY, cap)


def test_the_block_depends_only_on_name_score_and_body():
    block = skill_block('a "quoted" name', 0.6249, "Body.")

    assert block == skill_block('a "quoted" name', 0.6249, "Body.")
    assert block.startswith('<skill-context name="a &quot;quoted&quot; name" score="0.62">\n')
    assert block.endswith(f"\n\nBody.\n{CLOSE_TAG}\n\n")
    assert inject("the user's text", block) == block + "the user's text"
    assert is_injected(inject("the user's text", block)) and not is_injected("the user's text")
