"""The command line's defaults, read from the Hermes configuration: settings, index folder, skills roots,
decision record.

``semantic_skills.hermes.config`` is imported on first use, so ``--help`` and
``--version`` stay quick.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..settings import EmbedderSettings

if TYPE_CHECKING:
    from ..hermes.config import PluginSettings
    from ..skills.discovery import SkillsRoot


def settings() -> PluginSettings:
    """The plugin's settings in the Hermes home's ``config.yaml``, read as the plugin runs on them (an invalid
    value at its default; ``doctor`` names it)."""
    hermes_config = _hermes_config()
    return hermes_config.plugin_settings(_config())


def index_dir(chosen: Path | None) -> Path:
    """``--index-dir``, else the configured or default index folder; into the default one, first, the index an
    earlier release left in the home's plugin folder, if it is this home's (a line on stderr says what became of
    it: see ``hermes.home_index``)."""
    if chosen:
        return Path(chosen)
    from ..errors import command
    from ..hermes.home_index import settle_index
    from .output import echo

    folder = _hermes_config().index_dir(settings(), home())
    earlier = settle_index(home(), _config(), folder)
    if earlier is not None:
        echo(earlier.said(command("build")), err=True)
    return folder


def skills_roots() -> list[SkillsRoot]:
    """The skills folders Hermes scans (asked of Hermes when it is installed here), else the Hermes skills
    folder and every ``skills.external_dirs`` folder of config.yaml."""
    from ..hermes.offer.roots import scanned_roots

    return scanned_roots(home(), _config())


def config_file() -> Path:
    """The Hermes home's ``config.yaml``, as a message names it: its real path."""
    return home() / "config.yaml"


def decision_record() -> Path:
    """The decision record of the Hermes home (see ``semantic_skills.hermes.record``)."""
    return _hermes_config().decision_record_path(home())


def disabled_skill_names(platform: str | None) -> frozenset[str]:
    """``skills.disabled``, plus ``skills.platform_disabled.<platform>`` when a platform is given."""
    return _hermes_config().disabled_skill_names(_config(), platform)


def embedder_settings(backend: str | None, model: str | None) -> EmbedderSettings:
    """The configured embedder, changed by ``--embedder`` (from that backend's defaults) and ``--model``."""
    chosen = settings().embedder
    if backend and backend != chosen.backend:
        chosen = EmbedderSettings(backend=backend)
    if model:
        chosen = replace(chosen, model=model)
    return chosen


def open_router(index_dir_option: Path | None, backend: str | None, model: str | None):
    """The router over the chosen index with the chosen embedder, loaded (a mismatch is refused here, in one line)."""
    from ..router import SkillRouter
    from .progress import announced

    folder, embedder = index_dir(index_dir_option), embedder_settings(backend, model)
    with announced(f"loading the index in {folder} and its embedder (the first use of a model takes a few "
                   "seconds)"):
        return SkillRouter.from_settings(folder, embedder, explicit=bool(backend or model), floor=settings().floor)


def _config() -> dict:
    return _hermes_config().load_config(home())


def home() -> Path:
    """The Hermes home this command line works on."""
    from ..hermes.host.home import hermes_home

    return hermes_home()


def _hermes_config():
    from ..hermes import config

    return config
