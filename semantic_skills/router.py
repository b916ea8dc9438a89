"""SkillRouter: rank skills for a message and decide which one, if any, to inject."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import numpy as np

from .embedders import Embedder, create_embedder, configured_identity, settings_for_identity
from .errors import EmbedderMismatch
from .gates import is_small_talk
from .index import Manifest, load_index, manifest_stamp
from .settings import EmbedderSettings, default_index_dir
from .skills import platforms_allow

DEFAULT_THRESHOLD = 0.30
MAX_QUERY_CHARS = 2048
QUERY_CACHE_SIZE = 512


@dataclass(frozen=True)
class Candidate:
    """A ranked skill."""

    name: str
    score: float
    path: str
    description: str
    category: str = ""

    def as_dict(self) -> dict:
        return {"name": self.name, "score": round(self.score, 4), "path": self.path,
                "description": self.description, "category": self.category}


@dataclass(frozen=True)
class Decision:
    """What to inject for a message (``skill`` is None for nothing) and why."""

    skill: Candidate | None
    score: float
    reason: str
    candidates: list[Candidate] = field(default_factory=list)
    threshold: float = DEFAULT_THRESHOLD

    def as_dict(self) -> dict:
        return {
            "skill": self.skill.name if self.skill else None,
            "score": round(self.score, 4),
            "reason": self.reason,
            "threshold": self.threshold,
            "candidates": [{"name": c.name, "score": round(c.score, 4)} for c in self.candidates],
        }


@dataclass(frozen=True)
class _State:
    """One loaded index; replaced as a whole on reload so readers never see a mix."""

    manifest: Manifest
    vectors: np.ndarray
    row_starts: np.ndarray
    single_view: bool
    stamp: tuple | None
    eligibility: dict = field(default_factory=dict)


class SkillRouter:
    """Ranks the skills of one index against messages.

    >>> router = SkillRouter.open("skills_index")      # doctest: +SKIP
    >>> router.route("convert this PDF to markdown")   # doctest: +SKIP
    """

    def __init__(self, index_dir: Path, manifest: Manifest, vectors: np.ndarray, embedder: Embedder,
                 threshold: float | None = None, stamp: tuple | None = None):
        self.index_dir = Path(index_dir)
        self.embedder = embedder
        self._threshold_override = threshold
        self._state = self._make_state(manifest, vectors, stamp)
        self._query_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_lock = threading.Lock()
        self._reload_lock = threading.Lock()
        self._last_reload_check = time.monotonic()

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(cls, index_dir: str | Path | None = None, embedder: Embedder | EmbedderSettings | None = None,
             threshold: float | None = None) -> "SkillRouter":
        """Open the index in ``index_dir`` (default: the plugin's ``skills_index/``).

        With no ``embedder`` the one recorded in the index is used; a given
        embedder must match it, or :class:`EmbedderMismatch` is raised.
        """
        index_dir = Path(index_dir) if index_dir is not None else default_index_dir()
        stamp = manifest_stamp(index_dir)
        manifest, vectors = load_index(index_dir)
        if embedder is None:
            embedder = create_embedder(settings_for_identity(manifest.embedder))
        elif isinstance(embedder, EmbedderSettings):
            _check_same_space(manifest, configured_identity(embedder), index_dir)
            embedder = create_embedder(embedder)
        else:
            _check_same_space(manifest, embedder.identity, index_dir)
        return cls(index_dir, manifest, vectors, embedder, threshold, stamp)

    def _make_state(self, manifest: Manifest, vectors: np.ndarray, stamp: tuple | None) -> _State:
        counts = np.array([r.row_count for r in manifest.skills], dtype=np.int64)
        starts = np.array([r.row_start for r in manifest.skills], dtype=np.int64)
        return _State(manifest, vectors, starts, bool((counts == 1).all()), stamp)

    def warm(self) -> None:
        """Load the embedder now and check it produces this index's dimension."""
        self.embedder.load()
        self._check_dimension()

    def _check_dimension(self) -> None:
        have = self.embedder.identity.dimension
        want = self._state.vectors.shape[1]
        if have and have != want:
            raise EmbedderMismatch(
                f"the embedder {self.embedder.identity.describe()} gives {have}-d vectors but the index in "
                f"{self.index_dir} holds {want}-d ones; rebuild with: semantic-skills build --full"
            )

    # ------------------------------------------------------------------ reloading

    def reload_if_changed(self, min_interval: float = 1.0) -> bool:
        """Swap in a rebuilt index if ``manifest.json`` changed; at most one check per ``min_interval``.

        Raises the load error (corrupt index, other embedder) and keeps serving
        the current index when the new one cannot be used.
        """
        now = time.monotonic()
        if now - self._last_reload_check < min_interval:
            return False
        with self._reload_lock:
            self._last_reload_check = now
            stamp = manifest_stamp(self.index_dir)
            if stamp == self._state.stamp:
                return False
            manifest, vectors = load_index(self.index_dir)
            _check_same_space(manifest, self.embedder.identity, self.index_dir)
            self._state = self._make_state(manifest, vectors, stamp)
            return True

    # ------------------------------------------------------------------ properties

    @property
    def manifest(self) -> Manifest:
        return self._state.manifest

    @property
    def threshold(self) -> float:
        if self._threshold_override is not None:
            return max(DEFAULT_THRESHOLD, float(self._threshold_override))
        calibrated = self._state.manifest.router.get("threshold")
        return max(DEFAULT_THRESHOLD, float(calibrated)) if calibrated is not None else DEFAULT_THRESHOLD

    # ------------------------------------------------------------------ scoring

    def embed_query(self, text: str) -> np.ndarray:
        """The query vector for ``text`` (clipped to ``MAX_QUERY_CHARS``), cached by text."""
        text = text[:MAX_QUERY_CHARS]
        with self._cache_lock:
            cached = self._query_cache.get(text)
            if cached is not None:
                self._query_cache.move_to_end(text)
                return cached
        vector = self.embedder.embed_query(text)
        with self._cache_lock:
            self._query_cache[text] = vector
            if len(self._query_cache) > QUERY_CACHE_SIZE:
                self._query_cache.popitem(last=False)
        return vector

    def _eligible(self, state: _State, platform: str | None, exclude: frozenset[str]) -> np.ndarray:
        key = (platform, exclude)
        mask = state.eligibility.get(key)
        if mask is None:
            mask = np.array(
                [
                    platforms_allow(r.platforms, platform) and r.name not in exclude and r.folder not in exclude
                    for r in state.manifest.skills
                ],
                dtype=bool,
            )
            if len(state.eligibility) > 64:
                state.eligibility.clear()
            state.eligibility[key] = mask
        return mask

    def _skill_scores(self, state: _State, query: np.ndarray) -> np.ndarray:
        row_scores = state.vectors @ query
        if state.single_view:
            return row_scores
        return np.maximum.reduceat(row_scores, state.row_starts)

    def _rank(self, text: str, k: int, platform: str | None, exclude: Iterable[str]) -> list[Candidate]:
        state = self._state
        if not state.manifest.skills:
            return []
        scores = self._skill_scores(state, self.embed_query(text))
        mask = self._eligible(state, platform, frozenset(exclude))
        scores = np.where(mask, scores, -np.inf)
        k = max(0, min(int(k), int(mask.sum())))
        if k == 0:
            return []
        top = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
        top = top[np.lexsort((top, -scores[top]))]
        records = state.manifest.skills
        return [
            Candidate(records[i].name, float(scores[i]), records[i].path, records[i].description, records[i].category)
            for i in top
        ]

    # ------------------------------------------------------------------ public API

    def search(self, text: str, k: int = 5, platform: str | None = None, exclude: Iterable[str] = ()) -> list[Candidate]:
        """The ``k`` best skills for ``text``, best first, among those allowed on ``platform``."""
        if not text or not text.strip():
            return []
        return self._rank(text, k, platform, exclude)

    def route(self, text: str, platform: str | None = None, exclude: Iterable[str] = ()) -> Decision:
        """Decide which skill to inject for ``text``: the top one if it clears the gate, else none."""
        threshold = self.threshold
        if not text or not text.strip():
            return Decision(None, 0.0, "empty message", [], threshold)
        candidates = self._rank(text, 5, platform, exclude)
        if not candidates:
            return Decision(None, 0.0, "no eligible skills", [], threshold)
        top = candidates[0]
        if is_small_talk(text):
            return Decision(None, top.score, "small talk", candidates, threshold)
        if top.score < threshold:
            return Decision(None, top.score, f"top score {top.score:.3f} below threshold {threshold:.2f}",
                            candidates, threshold)
        return Decision(top, top.score, f"top score {top.score:.3f} >= threshold {threshold:.2f}",
                        candidates, threshold)


def _check_same_space(manifest: Manifest, identity, index_dir: Path) -> None:
    if not manifest.embedder.same_space(identity):
        raise EmbedderMismatch(
            f"the index in {index_dir} was built with {manifest.embedder.describe()}, but the configured "
            f"embedder is {identity.describe()}; rebuild with: semantic-skills build --full, "
            "or configure the embedder that built it"
        )
