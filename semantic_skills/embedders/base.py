"""The embedder interface, the identity of an embedder's vector space, and document batching."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Callable, Sequence

import numpy as np

ProgressCallback = Callable[[int], None]


@dataclass(frozen=True)
class EmbedderIdentity:
    """What makes two embedders' vectors comparable.

    ``dimension`` is 0 until the model has been loaded or called once.
    """

    backend: str
    model: str
    dimension: int = 0
    normalize: bool = True
    query_prefix: str = ""
    document_prefix: str = ""

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "EmbedderIdentity":
        return cls(
            backend=str(data["backend"]),
            model=str(data["model"]),
            dimension=int(data.get("dimension", 0)),
            normalize=bool(data.get("normalize", True)),
            query_prefix=str(data.get("query_prefix", "")),
            document_prefix=str(data.get("document_prefix", "")),
        )

    def same_space(self, other: "EmbedderIdentity") -> bool:
        """True when vectors from both are comparable (dimension checked only if both know it)."""
        mine, theirs = self.as_dict(), other.as_dict()
        if not (self.dimension and other.dimension):
            mine.pop("dimension")
            theirs.pop("dimension")
        return mine == theirs

    def describe(self) -> str:
        dim = f", {self.dimension}-d" if self.dimension else ""
        return f"{self.backend} {self.model}{dim}"


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """L2-normalise each row in float32; zero rows stay zero."""
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim == 1:
        vectors = vectors[None, :]
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(vectors / norms, dtype=np.float32)


class Embedder:
    """Interface: ``identity``, ``embed_documents`` and ``embed_query``.

    A backend sets ``identity`` and ``batch_size`` and implements
    :meth:`embed_query` and :meth:`_embed_batch`; ``remote`` marks one that
    calls a service rather than a model in this process.
    """

    identity: EmbedderIdentity
    batch_size: int = 16
    remote: bool = False

    def load(self) -> None:
        """Load model weights or clients now rather than on first use."""

    def embed_query(self, text: str) -> np.ndarray:
        """One query as a ``(dimension,)`` unit vector."""
        raise NotImplementedError

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        """One batch of prefixed documents as unit rows."""
        raise NotImplementedError

    def embed_documents(self, texts: Sequence[str], progress: ProgressCallback | None = None) -> np.ndarray:
        """``texts`` (with the document prefix, see :meth:`document_prefix`) as unit rows, in the order given.

        Batches hold texts of similar length, so little of each is padding;
        they run spread over the length order (:func:`_spread`), so the pace,
        and the time left a progress bar works out from it, holds from the
        first batches on instead of speeding up as the texts get shorter.
        ``progress`` is told how many texts each batch embedded.
        """
        self.load()
        prefix = self.document_prefix()
        prefixed = [prefix + t for t in texts]
        by_length = sorted(range(len(prefixed)), key=lambda i: len(prefixed[i]), reverse=True)
        vectors = None
        for rows in _spread([by_length[s : s + self.batch_size] for s in range(0, len(by_length), self.batch_size)]):
            batch = self._embed_batch([prefixed[i] for i in rows])
            if vectors is None:  # a remote model's dimension is known from its first answer
                vectors = np.zeros((len(prefixed), batch.shape[1]), np.float32)
            vectors[rows] = batch
            if progress:
                progress(len(rows))
        return vectors if vectors is not None else np.zeros((0, self.identity.dimension), np.float32)

    def document_prefix(self) -> str:
        """What goes before each document: the configured prefix (a backend may know better)."""
        return self.identity.document_prefix

    def _learn_dimension(self, dimension: int) -> None:
        self.identity = replace(self.identity, dimension=int(dimension))


def _spread(batches: list) -> list:
    """``batches`` (longest texts first) in an order whose every stretch holds long and short ones alike: the
    golden ratio's multiples, modulo 1, fall evenly over [0, 1), and each batch goes where its index's falls."""
    return [batches[i] for i in sorted(range(len(batches)), key=lambda i: (i * _GOLDEN_RATIO) % 1.0)]


_GOLDEN_RATIO = (5 ** 0.5 - 1) / 2
