"""BM25 over each skill's name, folder, description, tags, category and body terms.

Embeddings blur product names and identifiers ("Giphy", "PyTorch Lightning",
"JQL"); word overlap catches them. Scores are divided by the best score among
the skills that may be chosen for the message, so the best lexical match gets
1.0 and no overlap gives 0.0.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Iterable, Sequence

import numpy as np

from .skills.words import has_unspaced_script, split_words


def tokenize(text: str) -> list[str]:
    """Lower-case words of two or more letters or digits, camelCase split, English stopwords dropped."""
    stopwords = _stopwords()
    return [w for w in split_words(text) if w not in stopwords]


@lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


class LexicalIndex:
    """BM25 scores of a message against one text per skill."""

    def __init__(self, documents: Sequence[list[str]]):
        """An index over ``documents``, each a skill's tokens (see :func:`tokenize`)."""
        import bm25s

        self._count = len(documents)
        self._retriever = bm25s.BM25()
        self._vocabulary: dict[str, int] = {}
        if documents:
            self._retriever.index([tokens or [""] for tokens in documents], show_progress=False)
            self._vocabulary = self._retriever.vocab_dict

    @classmethod
    def for_skills(cls, records: Iterable) -> "LexicalIndex":
        """An index over the manifest fields of skill ``records``, their body ``terms`` included.

        The terms are stored already tokenized (see ``recipe.body_terms``), so
        only the other fields go through :func:`tokenize`: half the work of
        opening a large index. Terms holding Chinese or Japanese are split
        again: an index built before those were cut into pairs stored each run
        whole, and a pair splits into itself.
        """
        return cls([
            tokenize(" ".join([r.name, r.folder, r.description, " ".join(r.tags), r.category.replace("/", " ")]))
            + (split_words(r.terms) if has_unspaced_script(r.terms) else r.terms.split())
            for r in records
        ])

    def scores(self, text: str, eligible: np.ndarray | None = None) -> np.ndarray:
        """BM25 of ``text`` against every skill, scaled so the best ``eligible`` one (default: any) is 1.0;
        all zeros without overlap."""
        token_ids = [self._vocabulary[t] for t in tokenize(text) if t in self._vocabulary]
        if not token_ids:
            return np.zeros(self._count, dtype=np.float32)
        scores = np.asarray(self._retriever.get_scores(token_ids), dtype=np.float32)
        best = float(scores.max(initial=0.0, where=eligible)) if eligible is not None else float(scores.max())
        return scores / best if best > 0 else np.zeros(self._count, dtype=np.float32)
