"""SkillRouter: rank skills for a message and decide which one, if any, to inject.

Ranking, per message, with one query embedding:

1. every skill's main vector is scored (one matrix-vector product), plus a
   small BM25 bonus (``LEXICAL_WEIGHT`` x the lexical score scaled to 0..1);
2. the best ``SHORTLIST`` skills are re-scored with their sentence views: a
   skill's similarity is the mean of its main cosine and its best sentence
   cosine, and its score is that similarity plus the lexical bonus.

The decision is :class:`~semantic_skills.gates.Gate`'s: a floor on the top
similarity and a relative gap over the next skills (see gates.py).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import numpy as np

from .embedders.base import Embedder
from .embedders.factory import configured_identity, create_embedder, settings_for_identity
from .errors import EmbedderMismatch
from .gates import COMPETITORS, FLOOR, NEIGHBOURS, Gate, is_small_talk, relative_gap
from .index.manifest import Manifest
from .index.store import load_index, manifest_stamp
from .lexical import LexicalIndex
from .limits import MAX_QUERY_CHARS
from .settings import EmbedderSettings, default_index_dir
from .skills import environments_allow, platforms_allow

DEFAULT_THRESHOLD = FLOOR
QUERY_CACHE_SIZE = 512
LEXICAL_WEIGHT = 0.05
SHORTLIST = 64
ROUTE_CANDIDATES = 5


@dataclass(frozen=True)
class Candidate:
    """A ranked skill: ``score`` ranks it; ``similarity`` (cosine scale) is what the floor checks."""

    name: str
    score: float
    path: str
    description: str
    category: str = ""
    similarity: float = 0.0
    lexical: float = 0.0

    def as_dict(self) -> dict:
        return {"name": self.name, "score": round(self.score, 4), "path": self.path,
                "description": self.description, "category": self.category,
                "similarity": round(self.similarity, 4), "lexical": round(self.lexical, 4)}


@dataclass(frozen=True)
class Decision:
    """What to inject for a message (``skill`` is None for nothing) and why.

    ``features`` holds what the gate saw (empty when it did not run, e.g. for
    small talk); ``threshold`` is the similarity floor.
    """

    skill: Candidate | None
    score: float
    reason: str
    candidates: list[Candidate] = field(default_factory=list)
    threshold: float = DEFAULT_THRESHOLD
    features: dict = field(default_factory=dict)
    min_relative_gap: float | None = None

    def as_dict(self) -> dict:
        return {
            "skill": self.skill.name if self.skill else None,
            "score": round(self.score, 4),
            "reason": self.reason,
            "threshold": self.threshold,
            "min_relative_gap": self.min_relative_gap,
            "features": {k: round(v, 4) for k, v in self.features.items()},
            "candidates": [{"name": c.name, "score": round(c.score, 4)} for c in self.candidates],
        }


@dataclass(frozen=True)
class _State:
    """One loaded index and what is precomputed from it; replaced as a whole on reload.

    ``views[i]`` holds skill ``i``'s sentence vectors, padded to a common count
    by repeating one (``None`` when no skill has any). ``separation[i]`` is 1
    minus the mean cosine of skill ``i``'s main vector to its ``NEIGHBOURS``
    nearest other skills. ``offered`` marks the skills this machine may offer
    (``platforms:``, ``environments:``); ``positions`` maps each name and
    folder to its skills, so a message's exclusions cost a lookup per name.
    """

    manifest: Manifest
    main: np.ndarray
    views: np.ndarray | None
    separation: np.ndarray
    lexical: LexicalIndex
    stamp: tuple | None
    offered: np.ndarray
    positions: dict[str, list[int]]


@dataclass(frozen=True)
class _Ranking:
    """The eligible shortlist of one message, best first (arrays are aligned)."""

    skills: np.ndarray
    scores: np.ndarray
    similarity: np.ndarray
    main_cosine: np.ndarray
    view_cosine: np.ndarray
    lexical: np.ndarray


class SkillRouter:
    """Ranks the skills of one index against messages.

    >>> router = SkillRouter.open("skills_index")      # doctest: +SKIP
    >>> router.route("convert this PDF to markdown")   # doctest: +SKIP
    """

    def __init__(self, index_dir: Path, manifest: Manifest, vectors: np.ndarray, embedder: Embedder,
                 threshold: float | None = None, stamp: tuple | None = None,
                 inactive_environments: frozenset[str] = frozenset()):
        self.index_dir = Path(index_dir)
        self.embedder = embedder
        self.inactive_environments = frozenset(inactive_environments)
        self._threshold_override = threshold
        self._state = self._make_state(manifest, vectors, stamp)
        self._query_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_lock = threading.Lock()
        self._reload_lock = threading.Lock()
        self._last_reload_check = time.monotonic()

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(cls, index_dir: str | Path | None = None, embedder: Embedder | EmbedderSettings | None = None,
             threshold: float | None = None, inactive_environments: frozenset[str] = frozenset()) -> "SkillRouter":
        """Open the index in ``index_dir`` (default: the plugin's ``skills_index/``).

        With no ``embedder`` the one recorded in the index is used; a given
        embedder must match it, or :class:`EmbedderMismatch` is raised. Skills
        whose ``environments:`` are all in ``inactive_environments`` are never
        offered (see :func:`~semantic_skills.skills.environments_allow`).
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
        return cls(index_dir, manifest, vectors, embedder, threshold, stamp, inactive_environments)

    def _make_state(self, manifest: Manifest, vectors: np.ndarray, stamp: tuple | None) -> _State:
        starts = np.array([r.row_start for r in manifest.skills], dtype=np.int64)
        counts = np.array([r.row_count for r in manifest.skills], dtype=np.int64)
        main = np.ascontiguousarray(vectors[starts]) if len(starts) else vectors[:0]
        offered = np.array([platforms_allow(r.platforms) and environments_allow(r.environments, self.inactive_environments)
                            for r in manifest.skills], dtype=bool)
        positions: dict[str, list[int]] = {}
        for i, record in enumerate(manifest.skills):
            for key in {record.name, record.folder}:
                positions.setdefault(key, []).append(i)
        return _State(manifest, main, _padded_views(vectors, starts, counts), _separation(main),
                      LexicalIndex.for_skills(manifest.skills), stamp, offered, positions)

    def warm(self) -> None:
        """Load the embedder now and check it produces this index's dimension."""
        self.embedder.load()
        self._check_dimension(self.embedder.identity.dimension, self._state)

    def _check_dimension(self, have: int | None, state: _State) -> None:
        want = state.main.shape[1]
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
        """The similarity floor: the override, else the index's calibrated value, never below 0.30."""
        return self.gate.floor

    @property
    def gate(self) -> Gate:
        """The decision gate: the index's calibrated settings, with the floor override applied."""
        return Gate.from_router_settings(self._state.manifest.router, self._threshold_override)

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

    def _eligible(self, state: _State, exclude: Iterable[str]) -> np.ndarray:
        """Skills this machine may offer whose name and folder are not in ``exclude``."""
        mask = state.offered.copy()
        for name in exclude:
            mask[state.positions.get(name, [])] = False
        return mask

    def _rank(self, state: _State, text: str, exclude: Iterable[str]) -> _Ranking | None:
        """Score the eligible skills for ``text``; None when there are none."""
        if not state.manifest.skills:
            return None
        mask = self._eligible(state, exclude)
        eligible = int(mask.sum())
        if eligible == 0:
            return None
        query = self.embed_query(text)
        self._check_dimension(query.shape[-1], state)
        # einsum: one single-threaded pass over the matrix; BLAS threads stall when the machine is busy
        main_cosine = np.einsum("ij,j->i", state.main, query)
        lexical = state.lexical.scores(text)
        first_pass = np.where(mask, main_cosine + LEXICAL_WEIGHT * lexical, -np.inf)
        size = min(SHORTLIST, eligible)
        if size < len(first_pass):
            shortlist = np.argpartition(-first_pass, size - 1)[:size]
        else:
            shortlist = np.flatnonzero(mask)
        main_cosine, lexical = main_cosine[shortlist], lexical[shortlist]
        view_cosine = (state.views[shortlist] @ query).max(axis=1) if state.views is not None else main_cosine
        similarity = (main_cosine + view_cosine) / 2
        scores = similarity + LEXICAL_WEIGHT * lexical
        order = np.lexsort((shortlist, -scores))
        return _Ranking(shortlist[order], scores[order], similarity[order], main_cosine[order],
                        view_cosine[order], lexical[order])

    def _candidates(self, state: _State, ranking: _Ranking, k: int) -> list[Candidate]:
        records = state.manifest.skills
        return [
            Candidate(records[i].name, float(ranking.scores[n]), records[i].path, records[i].description,
                      records[i].category, float(ranking.similarity[n]), float(ranking.lexical[n]))
            for n, i in enumerate(ranking.skills[: max(0, int(k))])
        ]

    # ------------------------------------------------------------------ public API

    def search(self, text: str, k: int = 5, exclude: Iterable[str] = ()) -> list[Candidate]:
        """The ``k`` best eligible skills for ``text``, best first, leaving out names in ``exclude``."""
        if not text or not text.strip():
            return []
        state = self._state
        ranking = self._rank(state, text, exclude)
        return self._candidates(state, ranking, k) if ranking is not None else []

    def route(self, text: str, exclude: Iterable[str] = ()) -> Decision:
        """Decide which skill to inject for ``text``: the top one if it passes the gate, else none."""
        state = self._state
        gate = self.gate
        floor, min_gap = gate.floor, gate.min_relative_gap
        if not text or not text.strip():
            return Decision(None, 0.0, "empty message", [], floor, min_relative_gap=min_gap)
        ranking = self._rank(state, text, exclude)
        if ranking is None:
            return Decision(None, 0.0, "no eligible skills", [], floor, min_relative_gap=min_gap)
        candidates = self._candidates(state, ranking, ROUTE_CANDIDATES)
        top = candidates[0]
        if is_small_talk(text):
            return Decision(None, top.score, "small talk", candidates, floor, min_relative_gap=min_gap)
        features = _gate_features(state, ranking)
        inject, reason = gate.verdict(features["similarity"], features["relative_gap"])
        return Decision(top if inject else None, top.score, reason, candidates, floor, features, min_gap)


def _gate_features(state: _State, ranking: _Ranking) -> dict:
    """What the gate looks at for the top skill of ``ranking`` (all plain floats)."""
    competitors = ranking.scores[1 : 1 + COMPETITORS]
    competitor_mean = float(competitors.mean()) if len(competitors) else 0.0
    separation = float(state.separation[ranking.skills[0]])
    return {
        "similarity": float(ranking.similarity[0]),
        "main_cosine": float(ranking.main_cosine[0]),
        "view_cosine": float(ranking.view_cosine[0]),
        "lexical": float(ranking.lexical[0]),
        "competitor_mean": competitor_mean,
        "separation": separation,
        "relative_gap": relative_gap(float(ranking.scores[0]), competitor_mean, separation),
    }


def _padded_views(vectors: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> np.ndarray | None:
    """``(skills, most views, dim)``: each skill's rows after its main one, the last repeated as padding.

    A skill with no extra row gets its main vector, so its best view is its main cosine.
    """
    extra = int(counts.max(initial=1)) - 1
    if extra <= 0:
        return None
    offsets = np.minimum(np.arange(1, extra + 1)[None, :], (counts - 1)[:, None])
    return np.ascontiguousarray(vectors[starts[:, None] + offsets])


def _separation(main: np.ndarray) -> np.ndarray:
    """Per skill, 1 minus the mean cosine of its main vector to its ``NEIGHBOURS`` nearest other skills."""
    count = len(main)
    k = min(NEIGHBOURS, count - 1)
    if k <= 0:
        return np.ones(count, dtype=np.float32)
    import faiss

    index = faiss.IndexFlatIP(main.shape[1])
    index.add(main)
    similarities, labels = index.search(main, k + 1)
    is_self = labels == np.arange(count)[:, None]
    is_self[~is_self.any(axis=1), -1] = True  # a tie pushed the skill itself out: drop the last instead
    neighbours = similarities[~is_self].reshape(count, k)
    return (1.0 - neighbours.mean(axis=1)).astype(np.float32)


def _check_same_space(manifest: Manifest, identity, index_dir: Path) -> None:
    if not manifest.embedder.same_space(identity):
        raise EmbedderMismatch(
            f"the index in {index_dir} was built with {manifest.embedder.describe()}, but the configured "
            f"embedder is {identity.describe()}; rebuild with: semantic-skills build --full, "
            "or configure the embedder that built it"
        )
