"""What the agent is told about a skill left out because its name reads as a routed skill's (see
``skills.look_alikes``): in the result of the ``skill_manage`` call that wrote it, and in every ``search_skills``
answer while the index leaves it out.

A name that reads like another's cannot take that skill's place in routing,
so the skill with the later name is neither injected nor returned by
``search_skills``; the agent that wrote it would otherwise never learn why.
Names and paths are the skill author's text: each is quoted as a block
quotes a name (``injection.name_for_model``).
"""

from __future__ import annotations

import json
from pathlib import Path

from ..injection import name_for_model
from ..worker.protocol import MAX_NOT_ROUTED
from .budget import AGENT_ANSWER_TIMEOUT_SECONDS
from .runtime import PluginRuntime

NOTE_KEY = "semantic_skills"  # the key of the note added to a skill_manage result
FIX = "rename it (the name: line of its SKILL.md) so that its name reads differently"
SEARCH_NOTE = ("These skills are neither injected nor returned by search_skills: each name reads as the name of "
               f"another skill, which keeps it. To use one, {FIX}.")


def skill_manage_note(rt: PluginRuntime, result) -> str | None:
    """``result`` (a ``skill_manage`` result) with a note added when the SKILL.md it wrote is left out of routing
    for its name; None to leave the result as it is."""
    payload = _json_object(result)
    written = _written_skill_file(payload) if payload is not None else None
    if written is None or not rt.client.ready:
        return None
    reply = rt.client.claim(str(written), AGENT_ANSWER_TIMEOUT_SECONDS)
    kept_by = reply.data.get("kept_by") if reply.ok else None
    if not isinstance(kept_by, dict) or not isinstance(reply.data.get("name"), str):
        return None
    note = (f'semantic-skills will not route this skill (nor return it from search_skills): its name '
            f'"{name_for_model(reply.data["name"])}" reads as "{name_for_model(str(kept_by.get("name")))}", the name '
            f'of the skill at {name_for_model(str(kept_by.get("path")))}, which keeps it. To use this skill, {FIX}.')
    return json.dumps({**payload, NOTE_KEY: note}, ensure_ascii=False)


def search_note(found: dict) -> dict:
    """The ``not_routed`` part of a ``search_skills`` answer: the look-alikes the worker named, and why."""
    listed = [entry for entry in found.get("not_routed") or () if isinstance(entry, dict)][:MAX_NOT_ROUTED]
    skills = [{"name": name_for_model(str(entry.get("name"))), "reads_as": name_for_model(str(entry.get("reads_as")))}
              for entry in listed]
    return {"not_routed": {"skills": skills, "note": SEARCH_NOTE}} if skills else {}


def _json_object(result) -> dict | None:
    try:
        payload = json.loads(result) if isinstance(result, str) else None
    except ValueError:
        return None
    return payload if isinstance(payload, dict) else None


def _written_skill_file(payload: dict) -> Path | None:
    """The SKILL.md a successful ``skill_manage`` create or edit wrote (Hermes names it ``skill_md``, or the
    skill's folder as ``path``); None for any other result."""
    if payload.get("success") is not True:
        return None
    if isinstance(payload.get("skill_md"), str):
        return Path(payload["skill_md"])
    folder = Path(payload["path"]) if isinstance(payload.get("path"), str) else None
    return folder / "SKILL.md" if folder is not None and folder.is_absolute() else None
