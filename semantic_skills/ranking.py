"""Scoring skills for a message: what is precomputed from an index, and the two-pass ranking.

1. every eligible skill's main vector is scored (one matrix-vector product),
   plus a small BM25 bonus (the index's lexical weight x the lexical score scaled to 0..1);
2. the best ``SHORTLIST`` skills are re-scored with their sentence views: a
   skill's similarity is the mean of its main cosine and its best sentence
   cosine, and its score is that similarity plus the lexical bonus.

Skills a message may not get (``exclude``, or not offered on this machine) are
treated as absent from the index: they neither rank, nor set the lexical
scale, nor count among the top skill's neighbours. The decision is the one an
index without them would give.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

import numpy as np

from .gates import COMPETITORS, MIN_SEPARATION, NEAR_DUPLICATE, NEIGHBOURS, relative_gap
from .index.manifest import Manifest
from .lexical import LexicalIndex
from .skills.eligibility import environments_allow, platforms_allow
from .skills.parsing import MAX_NAME_CHARS

LEXICAL_WEIGHT = 0.05
# The bonus is in cosine units, so it shrinks with the embedder's scale: in proportion to the index's median
# separation where that is below this one (sgd's with the bundled model, the lowest of its sets). An embedder that
# packs every skill closer (multilingual-e5: 0.08-0.15) would otherwise let word overlap outrank its cosines.
FULL_LEXICAL_SEPARATION = 0.36
SHORTLIST = 64
# Nearest other skills kept per skill: the first NEIGHBOURS eligible ones give its separation.
NEIGHBOUR_TABLE = NEIGHBOURS + 16
ENVIRONMENT_MASKS_KEPT = 16  # offer masks kept per index, one per set of inactive environments a request named


@dataclass(frozen=True)
class IndexState:
    """One loaded index and what is precomputed from it; replaced as a whole on reload.

    ``views[i]`` holds skill ``i``'s sentence vectors, padded to a common count
    by repeating one (``None`` when no skill has any). ``neighbours[i]`` lists
    the ``NEIGHBOUR_TABLE`` skills nearest to skill ``i`` (main vectors, fewer
    in a small index), best first, and ``neighbour_cosine[i]`` their cosines.
    ``offered`` marks the skills this machine may offer (``platforms:``, and
    ``environments:`` against the inactive environments the index was opened
    with; ``platform_ok`` is the first half alone), and ``offered_by_environments``
    the same for other inactive environments, computed once per set a request names;
    ``positions`` maps each name and folder to its skills, so a message's
    exclusions cost a lookup per name. ``lexical_weight`` is what the lexical
    score is worth in cosine units for this index (see :func:`_lexical_weight`).
    """

    manifest: Manifest
    main: np.ndarray
    views: np.ndarray | None
    neighbours: np.ndarray
    neighbour_cosine: np.ndarray
    lexical: LexicalIndex
    stamp: tuple | None
    offered: np.ndarray
    positions: dict[str, list[int]]
    platform_ok: np.ndarray
    lexical_weight: float = LEXICAL_WEIGHT
    offered_by_environments: dict[frozenset[str], np.ndarray] = field(default_factory=dict, compare=False)

    @classmethod
    def of(cls, manifest: Manifest, vectors: np.ndarray, stamp: tuple | None,
           inactive_environments: frozenset[str], lexical: LexicalIndex | None = None) -> "IndexState":
        """The state of ``vectors`` (rows as ``manifest`` lays them out); ``lexical``, when given, is the
        manifest's lexical index already built (for a second vector set of the same skills)."""
        starts = np.array([r.row_start for r in manifest.skills], dtype=np.int64)
        counts = np.array([r.row_count for r in manifest.skills], dtype=np.int64)
        main = np.ascontiguousarray(vectors[starts]) if len(starts) else vectors[:0]
        platform_ok = np.array([platforms_allow(r.platforms) for r in manifest.skills], dtype=bool)
        offered = platform_ok & _environments_mask(manifest, inactive_environments)
        positions: dict[str, list[int]] = {}
        for i, record in enumerate(manifest.skills):
            for key in {record.name, record.folder}:
                positions.setdefault(key, []).append(i)
        neighbours, neighbour_cosine = _neighbour_table(main)
        return cls(manifest, main, _padded_views(vectors, starts, counts), neighbours, neighbour_cosine,
                   lexical or LexicalIndex.for_skills(manifest.skills), stamp, offered, positions, platform_ok,
                   _lexical_weight(neighbour_cosine))

    def eligible(self, exclude: Iterable[str], inactive_environments: frozenset[str] | None = None) -> np.ndarray:
        """Skills this machine may offer whose name and folder are not in ``exclude``.

        A name is matched exactly, and cut to the agent's ``MAX_NAME_CHARS`` as
        the index's names are. ``inactive_environments``, when given, replaces
        the ones the index was opened with.
        """
        mask = (self.offered if inactive_environments is None else self._offered_with(inactive_environments)).copy()
        for name in exclude:
            mask[self.positions.get(name, [])] = False
            mask[self.positions.get(name[:MAX_NAME_CHARS], [])] = False
        return mask

    def _offered_with(self, inactive_environments: frozenset[str]) -> np.ndarray:
        masks = self.offered_by_environments
        mask = masks.get(inactive_environments)
        if mask is None:
            if len(masks) >= ENVIRONMENT_MASKS_KEPT:
                masks.clear()
            mask = masks[inactive_environments] = self.platform_ok & _environments_mask(self.manifest,
                                                                                          inactive_environments)
        return mask


@dataclass(frozen=True)
class Ranking:
    """The eligible shortlist of one message, best first (arrays are aligned).

    ``top_cosine`` is each shortlisted skill's main-vector cosine to the top skill's.
    """

    skills: np.ndarray
    scores: np.ndarray
    similarity: np.ndarray
    main_cosine: np.ndarray
    view_cosine: np.ndarray
    lexical: np.ndarray
    top_separation: float
    top_cosine: np.ndarray

    def gate_features(self) -> dict:
        """What the gate looks at for the top skill (all plain floats).

        ``relative_margin`` is the top score's lead over the best candidate
        that is not one of its near duplicates, ``runner_up_margin`` its lead
        over the second, both divided by the separation (a missing competitor
        scores 0).
        """
        top, separation = float(self.scores[0]), self.top_separation
        competitors = self.scores[1 : 1 + COMPETITORS]
        competitor_mean = float(competitors.mean()) if len(competitors) else 0.0
        scale = max(separation, MIN_SEPARATION)
        different = np.flatnonzero(1.0 - self.top_cosine[1:] > NEAR_DUPLICATE * separation)
        return {
            "similarity": float(self.similarity[0]),
            "main_cosine": float(self.main_cosine[0]),
            "view_cosine": float(self.view_cosine[0]),
            "lexical": float(self.lexical[0]),
            "competitor_mean": competitor_mean,
            "separation": separation,
            "relative_gap": relative_gap(top, competitor_mean, separation),
            "relative_margin": (top - (float(self.scores[1 + different[0]]) if len(different) else 0.0)) / scale,
            "runner_up_margin": (top - (float(self.scores[1]) if len(self.scores) > 1 else 0.0)) / scale,
        }


def rank(state: IndexState, text: str, exclude: Iterable[str], embed_query: Callable[[str], np.ndarray],
         inactive_environments: frozenset[str] | None = None) -> Ranking | None:
    """Score the eligible skills for ``text``; None when there are none (then nothing is embedded)."""
    if not state.manifest.skills:
        return None
    mask = state.eligible(exclude, inactive_environments)
    eligible = int(mask.sum())
    if eligible == 0:
        return None
    query = embed_query(text)
    # einsum: one single-threaded pass over the matrix; BLAS threads stall when the machine is busy
    main_cosine = np.einsum("ij,j->i", state.main, query)
    lexical = state.lexical.scores(text, mask)
    first_pass = np.where(mask, main_cosine + state.lexical_weight * lexical, -np.inf)
    size = min(SHORTLIST, eligible)
    if size < len(first_pass):
        shortlist = np.argpartition(-first_pass, size - 1)[:size]
    else:
        shortlist = np.flatnonzero(mask)
    main_cosine, lexical = main_cosine[shortlist], lexical[shortlist]
    view_cosine = (state.views[shortlist] @ query).max(axis=1) if state.views is not None else main_cosine
    similarity = (main_cosine + view_cosine) / 2
    scores = similarity + state.lexical_weight * lexical
    order = np.lexsort((shortlist, -scores))
    ranked = shortlist[order]
    top = int(ranked[0])
    return Ranking(ranked, scores[order], similarity[order], main_cosine[order], view_cosine[order], lexical[order],
                   _separation(state.neighbours[top], state.neighbour_cosine[top], mask),
                   state.main[ranked] @ state.main[top])


def _environments_mask(manifest: Manifest, inactive_environments: frozenset[str]) -> np.ndarray:
    return np.array([environments_allow(r.environments, inactive_environments) for r in manifest.skills], dtype=bool)


def _padded_views(vectors: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> np.ndarray | None:
    """``(skills, most views, dim)``: each skill's rows after its main one, the last repeated as padding.

    A skill with no extra row gets its main vector, so its best view is its main cosine.
    """
    extra = int(counts.max(initial=1)) - 1
    if extra <= 0:
        return None
    offsets = np.minimum(np.arange(1, extra + 1)[None, :], (counts - 1)[:, None])
    return np.ascontiguousarray(vectors[starts[:, None] + offsets])


def _neighbour_table(main: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per skill, the ``NEIGHBOUR_TABLE`` nearest other skills (main vectors) and their cosines, best first."""
    count = len(main)
    k = min(NEIGHBOUR_TABLE, count - 1)
    if k <= 0:
        return np.zeros((count, 0), dtype=np.int64), np.zeros((count, 0), dtype=np.float32)
    import faiss

    index = faiss.IndexFlatIP(main.shape[1])
    index.add(main)
    similarities, labels = index.search(main, k + 1)
    is_self = labels == np.arange(count)[:, None]
    is_self[~is_self.any(axis=1), -1] = True  # a tie pushed the skill itself out: drop the last instead
    return labels[~is_self].reshape(count, k), similarities[~is_self].reshape(count, k)


def _lexical_weight(neighbour_cosine: np.ndarray) -> float:
    """``LEXICAL_WEIGHT``, times the index's median separation over ``FULL_LEXICAL_SEPARATION`` where that is less
    than one (an index with fewer than two skills keeps the full weight)."""
    if neighbour_cosine.shape[1] == 0:
        return LEXICAL_WEIGHT
    median = float(np.median(1.0 - neighbour_cosine[:, :NEIGHBOURS].mean(axis=1)))
    return LEXICAL_WEIGHT * min(1.0, max(median, MIN_SEPARATION) / FULL_LEXICAL_SEPARATION)


def _separation(neighbours: np.ndarray, cosines: np.ndarray, eligible: np.ndarray) -> float:
    """1 minus the mean cosine of a skill to its ``NEIGHBOURS`` nearest eligible skills, given its row of
    the neighbour table (1.0 when none is eligible)."""
    kept = cosines[eligible[neighbours]][:NEIGHBOURS]
    return float(1.0 - kept.mean()) if len(kept) else 1.0
