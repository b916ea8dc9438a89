"""The doctor's code check: the plugin's code this command runs is the home's own plugin folder's, as Hermes runs
it for the home, and the package pip installed in this Python is not tied to a folder that is gone."""

from __future__ import annotations

import shlex
import sys

from ...requirements import CODE_FOLDER, editable_source
from ..config import hermes_command, plugin_folder
from ..installs import other_homes, running_elsewhere
from .report import OK, WARN, Check, Setup


def code_check(setup: Setup) -> Check:
    """Whose code runs here; a warning with the fix when it is not this home's plugin folder's, or when pip's
    editable install of the package points to a folder that no longer exists."""
    own, source = plugin_folder(setup.home), editable_source()
    facts = {"code": str(CODE_FOLDER), "plugin_folder": str(own), "pip_installed_from": str(source or ""),
             "other_homes": [str(home) for home in other_homes(setup.home)]}
    reinstall = f"{shlex.quote(sys.executable)} -m pip install --no-deps -e {shlex.quote(str(own))}"
    if not own.exists():
        return Check("code", OK, f"runs {CODE_FOLDER} (this home has no plugin folder: see the plugin check)",
                     facts=facts)
    elsewhere = running_elsewhere(setup.home)
    if elsewhere:
        what = f"{elsewhere}: what this command checks is that release, while Hermes runs this home's own"
        return Check("code", WARN, what, reinstall if setup.under_hermes else f"{hermes_command(setup.home)} doctor",
                     facts)
    if source is not None and not source.exists():
        return Check("code", WARN, f"the semantic-skills package pip installed in {sys.executable} is the folder "
                                   f"{source}, which no longer exists: the semantic-skills command fails outside "
                                   "Hermes (Hermes runs each home's own plugin folder)", reinstall, facts)
    shared = f"; pip's package in this Python is {source}'s, and Hermes runs each home's own plugin folder" \
        if source is not None and source.resolve() != CODE_FOLDER else ""
    return Check("code", OK, f"runs this home's plugin folder ({CODE_FOLDER}){shared}", facts=facts)
