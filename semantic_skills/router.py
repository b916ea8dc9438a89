"""SkillRouter: rank skills for a message and decide which one, if any, to inject.

Ranking, with one query embedding per message, is :mod:`~semantic_skills.ranking`'s;
the decision is :class:`~semantic_skills.gates.Gate`'s: the whole skill when the
router is sure, a hint when it is plausible, else nothing (see gates.py).
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
from .errors import EmbedderError, EmbedderMismatch, command, first_line
from .gates import Gate, is_small_talk
from .index.manifest import Manifest
from .index.store import load_vector_sets, manifest_stamp
from .limits import MAX_QUERY_CHARS
from .ranking import IndexState, Ranking, rank
from .settings import EmbedderSettings
from .vector_sets import FIRST, SECOND, IndexSets, Route

QUERY_CACHE_SIZE = 512
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
    """What to inject for a message and why: ``skill`` is the top candidate when anything is injected
    (else None), ``mode`` FULL (the whole skill) or HINT (a pointer), and ``named`` the skills a hint
    names (the top one, and the runner-up when close; for a full injection, the skill alone).

    ``features`` holds what the gate saw (empty when it did not run, e.g. for small talk); ``vector_set`` which
    set ranked the message and why (empty in an index with one set, see vector_sets.py).
    """

    skill: Candidate | None
    score: float
    reason: str
    candidates: list[Candidate] = field(default_factory=list)
    gate: Gate = field(default_factory=Gate)
    features: dict = field(default_factory=dict)
    mode: str | None = None
    named: list[Candidate] = field(default_factory=list)
    vector_set: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        gate = self.gate
        return {
            "skill": self.skill.name if self.skill else None,
            "mode": self.mode,
            "named": [c.name for c in self.named],
            "score": round(self.score, 4),
            "reason": self.reason,
            "threshold": gate.floor,
            "min_relative_gap": gate.min_relative_gap,
            "full_relative_gap": gate.full_relative_gap,
            "full_relative_margin": gate.full_relative_margin,
            "features": {k: round(v, 4) for k, v in self.features.items()},
            "candidates": [{"name": c.name, "score": round(c.score, 4)} for c in self.candidates],
            **self.vector_set,
        }


class SkillRouter:
    """Ranks the skills of one index against messages.

    >>> router = SkillRouter.open("skills_index")      # doctest: +SKIP
    >>> router.route("convert this PDF to markdown")   # doctest: +SKIP
    """

    def __init__(self, index_dir: Path, manifest: Manifest, vectors: np.ndarray, embedder: Embedder,
                 floor: float | None = None, stamp: tuple | None = None,
                 inactive_environments: frozenset[str] = frozenset(), second_vectors: np.ndarray | None = None,
                 second_embedder: Embedder | None = None):
        self.index_dir = Path(index_dir)
        self.embedder = embedder
        self.second_embedder = second_embedder if second_vectors is not None else None
        self.second_problem = ""  # why the index's second set is set aside, when its model cannot load here
        self.inactive_environments = frozenset(inactive_environments)
        self._floor = floor
        self._sets = IndexSets.of(manifest, vectors, second_vectors if self.second_embedder else None, stamp,
                                  self.inactive_environments)
        self._query_cache: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._cache_lock = threading.Lock()
        self._reload_lock = threading.Lock()
        self._last_reload_check = time.monotonic()

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(cls, index_dir: str | Path, embedder: Embedder | EmbedderSettings | None = None,
             floor: float | None = None, inactive_environments: frozenset[str] = frozenset()) -> "SkillRouter":
        """Open the index in ``index_dir``.

        With no ``embedder`` the one recorded in the index is used; a given
        embedder must match it, or :class:`EmbedderMismatch` is raised.
        ``floor`` overrides the index's similarity floor. Skills whose
        ``environments:`` are all in ``inactive_environments`` are never
        offered (see :func:`~semantic_skills.skills.eligibility.environments_allow`).
        """
        index_dir = Path(index_dir)
        stamp = manifest_stamp(index_dir)
        manifest, vectors, second_vectors = load_vector_sets(index_dir)
        if embedder is None:
            embedder = create_embedder(settings_for_identity(manifest.embedder))
        elif isinstance(embedder, EmbedderSettings):
            _check_same_space(manifest, configured_identity(embedder), index_dir)
            embedder = create_embedder(embedder)
        else:
            _check_same_space(manifest, embedder.identity, index_dir)
        return cls(index_dir, manifest, vectors, embedder, floor, stamp, inactive_environments, second_vectors,
                   _second_embedder(manifest, None))

    @classmethod
    def from_settings(cls, index_dir: str | Path, embedder: EmbedderSettings, *, explicit: bool = False,
                      floor: float | None = None,
                      inactive_environments: frozenset[str] = frozenset()) -> "SkillRouter":
        """Open the index with the configured embedder, and :meth:`prepare` it for its first query (an index
        without skills loads no model).

        Default embedder settings mean "whatever built the index" unless
        ``explicit`` (the embedder was asked for by name); other settings must
        match the index.
        """
        chosen = embedder if explicit or embedder != EmbedderSettings() else None
        router = cls.open(index_dir, embedder=chosen, floor=floor, inactive_environments=inactive_environments)
        router.prepare()
        return router

    def prepare(self) -> None:
        """Load the embedder and, for a local model, embed once (its first embedding is slow), unless the index
        holds no skills: nothing is embedded then (an empty library is a state, and needs no model), and the
        embedder loads when an index with skills comes in (see ``worker/server.py``)."""
        if not self.manifest.skills:
            return
        self.warm()
        for embedder in self._embedders():
            if not embedder.remote:
                embedder.embed_query("warm-up")

    def warm(self) -> None:
        """Load the embedders now and check they produce this index's dimensions. A second set whose model cannot
        load here is set aside (see :meth:`_load_second`)."""
        self.embedder.load()
        self._check_dimension(self.embedder, self.embedder.identity.dimension, self._sets.first)
        if self.second_embedder is not None and not self._load_second(self.second_embedder):
            self.second_embedder, self._sets = None, IndexSets(self._sets.first)

    def _load_second(self, embedder: Embedder) -> bool:
        """Load the second set's model; False (and ``second_problem`` says why) when it cannot load on this machine:
        every message is then ranked by the first set, as in an index without the second."""
        try:
            embedder.load()
        except EmbedderError as exc:
            self.second_problem = f"the multilingual vector set is not used: {first_line(exc)}"
            return False
        self.second_problem = ""
        return True

    def _embedders(self) -> list[Embedder]:
        return [self.embedder] + ([self.second_embedder] if self.second_embedder is not None else [])

    def _check_dimension(self, embedder: Embedder, have: int | None, state: IndexState) -> None:
        want = state.main.shape[1]
        if have and len(state.main) and have != want:  # an index without skills holds no vector to compare
            raise EmbedderMismatch(
                f"the embedder {embedder.identity.describe()} gives {have}-d vectors but the index in "
                f"{self.index_dir} holds {want}-d ones; rebuild with: {command('build --full')}"
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
            if stamp == self._sets.first.stamp:
                return False
            manifest, vectors, second_vectors = load_vector_sets(self.index_dir)
            _check_same_space(manifest, self.embedder.identity, self.index_dir)
            second_embedder = _second_embedder(manifest, self.second_embedder)
            if second_embedder is not None and not self._load_second(second_embedder):  # loads off the request
                second_embedder = second_vectors = None  # thread: the worker reloads on its loader
            sets = IndexSets.of(manifest, vectors, second_vectors, stamp, self.inactive_environments)
            self.second_embedder, self._sets = second_embedder, sets
            return True

    # ------------------------------------------------------------------ properties

    @property
    def manifest(self) -> Manifest:
        return self._sets.manifest

    @property
    def _state(self) -> IndexState:
        return self._sets.first

    @property
    def gate(self) -> Gate:
        """The decision gate: the index's calibrated settings, with the floor override applied."""
        return self._gate(None)

    def _gate(self, floor: float | None, route: Route | None = None, sets: IndexSets | None = None) -> Gate:
        sets = sets or self._sets
        return sets.gate(route or Route(FIRST, sets.first), floor if floor is not None else self._floor)

    # ------------------------------------------------------------------ scoring

    def embed_query(self, text: str, vector_set: str = FIRST) -> np.ndarray:
        """The query vector of ``vector_set``'s embedder for ``text`` (clipped to ``MAX_QUERY_CHARS``), cached by
        text."""
        text = text[:MAX_QUERY_CHARS]
        key = (vector_set, text)
        with self._cache_lock:
            cached = self._query_cache.get(key)
            if cached is not None:
                self._query_cache.move_to_end(key)
                return cached
        embedder = self.second_embedder if vector_set == SECOND else self.embedder
        vector = embedder.embed_query(text)
        with self._cache_lock:
            self._query_cache[key] = vector
            if len(self._query_cache) > QUERY_CACHE_SIZE:
                self._query_cache.popitem(last=False)
        return vector

    def _rank(self, route: Route, text: str, exclude: Iterable[str],
              inactive_environments: frozenset[str] | None) -> Ranking | None:
        def embed(query: str) -> np.ndarray:
            vector = self.embed_query(query, route.vector_set)
            embedder = self.second_embedder if route.vector_set == SECOND else self.embedder
            self._check_dimension(embedder, vector.shape[-1], route.state)
            return vector

        return rank(route.state, text, exclude, embed, inactive_environments)

    def _candidates(self, state: IndexState, ranking: Ranking, k: int) -> list[Candidate]:
        records = state.manifest.skills
        return [
            Candidate(records[i].name, float(ranking.scores[n]), records[i].path, records[i].description,
                      records[i].category, float(ranking.similarity[n]), float(ranking.lexical[n]))
            for n, i in enumerate(ranking.skills[: max(0, int(k))])
        ]

    # ------------------------------------------------------------------ public API

    def search(self, text: str, k: int = 5, exclude: Iterable[str] = (),
               inactive_environments: frozenset[str] | None = None) -> list[Candidate]:
        """The ``k`` best eligible skills for ``text``, best first, leaving out names in ``exclude``.

        ``inactive_environments``, when given, replaces the router's for this message.
        """
        if not text or not text.strip():
            return []
        route = self._sets.route_for(text)
        ranking = self._rank(route, text, exclude, inactive_environments)
        return self._candidates(route.state, ranking, k) if ranking is not None else []

    def route(self, text: str, exclude: Iterable[str] = (), floor: float | None = None,
              inactive_environments: frozenset[str] | None = None) -> Decision:
        """Decide what to inject for ``text``: the top skill whole, a hint naming it (and the runner-up
        when close), or nothing (see gates.py).

        ``floor`` and ``inactive_environments``, when given, override the router's for this message.
        """
        sets = self._sets
        if not text or not text.strip():
            return Decision(None, 0.0, "empty message", [], self._gate(floor, None, sets))
        route = sets.route_for(text)
        gate, chosen = self._gate(floor, route, sets), route.record()
        ranking = self._rank(route, text, exclude, inactive_environments)
        if ranking is None:
            return Decision(None, 0.0, "no eligible skills" if sets.manifest.skills else "the index holds no skills",
                            [], gate, vector_set=chosen)
        candidates = self._candidates(route.state, ranking, ROUTE_CANDIDATES)
        top = candidates[0]
        if is_small_talk(text):
            return Decision(None, top.score, "small talk", candidates, gate, vector_set=chosen)
        features = ranking.gate_features()
        verdict = gate.verdict(features)
        if verdict.mode is None:
            return Decision(None, top.score, verdict.reason, candidates, gate, features, vector_set=chosen)
        named = candidates[:2] if verdict.pair and len(candidates) > 1 else candidates[:1]
        return Decision(top, top.score, verdict.reason, candidates, gate, features, verdict.mode, named, chosen)


def _second_embedder(manifest: Manifest, current: Embedder | None) -> Embedder | None:
    """The embedder of ``manifest``'s second vector set: ``current`` when it is that one, else a new one; None
    when the index holds no second set."""
    if manifest.second is None:
        return None
    if current is not None and current.identity.same_space(manifest.second.embedder):
        return current
    return create_embedder(settings_for_identity(manifest.second.embedder))


def _check_same_space(manifest: Manifest, identity, index_dir: Path) -> None:
    if not manifest.embedder.same_space(identity):
        raise EmbedderMismatch(
            f"the index in {index_dir} was built with {manifest.embedder.describe()}, but the configured "
            f"embedder is {identity.describe()}; rebuild with: {command('build --full')}, "
            "or configure the embedder that built it"
        )
