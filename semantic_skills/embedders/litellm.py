"""Any litellm embedding model: ``openai/text-embedding-3-small``, ``ollama/nomic-embed-text``..."""

from __future__ import annotations

import logging
import os
import time

import numpy as np

from ..errors import ConfigError, EmbedderError, first_line
from ..requirements import missing_dependency
from .base import Embedder, EmbedderIdentity, normalize_rows

REMOTE_BATCH_SIZE = 64  # texts per request when the batch_size setting is 0: remote APIs favour large requests
PERMANENT_ERRORS = ("AuthenticationError", "NotFoundError", "BadRequestError", "PermissionDeniedError")


class LiteLLMEmbedder(Embedder):
    """Any litellm embedding model: ``openai/text-embedding-3-small``, ``ollama/nomic-embed-text``..."""

    RETRIES = 3
    remote = True

    def __init__(
        self,
        model: str,
        api_base: str = "",
        api_key_env: str = "",
        query_prefix: str = "",
        document_prefix: str = "",
        batch_size: int = REMOTE_BATCH_SIZE,
        query_timeout: float = 0.2,
        build_timeout: float = 30.0,
    ):
        if not model:
            raise ConfigError("the litellm embedder needs a model, e.g. --model openai/text-embedding-3-small")
        self.model_name = model
        self.api_base = api_base
        self.api_key_env = api_key_env
        self.batch_size = max(1, int(batch_size))
        self.query_timeout = query_timeout
        self.build_timeout = build_timeout
        self.identity = EmbedderIdentity("litellm", model, 0, True, query_prefix, document_prefix)
        self._litellm = None

    def load(self) -> None:
        if self._litellm is None:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            # Outside "DEV" mode importing litellm does not load the first .env file above its own
            # folder: that file belongs to another tool (or project) and may hold its secrets.
            os.environ.setdefault("LITELLM_MODE", "PRODUCTION")
            try:
                import litellm
            except ImportError:
                raise missing_dependency("litellm", "litellm") from None
            litellm.suppress_debug_info = True
            # litellm turns max_retries=0 into its default (2) for the OpenAI client, which then retries
            # on its own; with that default at 0 the only retries are the ones _request makes.
            litellm.DEFAULT_MAX_RETRIES = 0
            if "LITELLM_LOG" not in os.environ:
                # litellm prints records below WARNING to stdout, which carries the CLI's results.
                for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):
                    if logging.getLogger(name).level == logging.NOTSET:
                        logging.getLogger(name).setLevel(logging.WARNING)
            self._litellm = litellm

    def _api_key(self) -> str | None:
        if not self.api_key_env:
            return None
        key = os.environ.get(self.api_key_env, "")
        if not key:
            raise EmbedderError(f"environment variable {self.api_key_env} (embedder.api_key_env) is not set")
        return key

    def _request(self, texts: list[str], timeout: float, retries: int):
        """litellm's answer for ``texts``, retrying failures that may pass with backoff."""
        self.load()
        litellm = self._litellm
        kwargs = {"model": self.model_name, "input": texts, "timeout": timeout, "max_retries": 0}
        if self.api_base:
            kwargs["api_base"] = self.api_base
        key = self._api_key()
        if key:
            kwargs["api_key"] = key
        permanent = tuple(getattr(litellm, name) for name in PERMANENT_ERRORS if hasattr(litellm, name))
        for attempt in range(retries + 1):
            try:
                return litellm.embedding(**kwargs)
            except permanent as exc:
                raise EmbedderError(f"{self.model_name} refused the request: {first_line(exc)}") from None
            except Exception as exc:
                if attempt == retries:
                    where = f" at {self.api_base}" if self.api_base else ""
                    raise EmbedderError(
                        f"cannot get embeddings from {self.model_name}{where}: {first_line(exc)}"
                    ) from None
                time.sleep(min(4.0, 0.5 * 2**attempt))

    def _call(self, texts: list[str], timeout: float, retries: int) -> np.ndarray:
        response = self._request(texts, timeout, retries)
        data = sorted(response.data, key=lambda d: d["index"] if isinstance(d, dict) else d.index)
        rows = [d["embedding"] if isinstance(d, dict) else d.embedding for d in data]
        if len(rows) != len(texts):
            raise EmbedderError(f"{self.model_name} returned {len(rows)} vectors for {len(texts)} texts")
        try:
            vectors = np.asarray(rows, dtype=np.float32)
        except ValueError:
            raise EmbedderError(f"{self.model_name} returned vectors of different lengths") from None
        dim = vectors.shape[1] if vectors.ndim == 2 else 0
        if not dim:
            raise EmbedderError(f"{self.model_name} returned no usable vectors")
        if self.identity.dimension and dim != self.identity.dimension:
            raise EmbedderError(
                f"{self.model_name} returned {dim}-d vectors, expected {self.identity.dimension}-d"
            )
        if not self.identity.dimension:
            self._learn_dimension(dim)
        return normalize_rows(vectors)

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        return self._call(texts, self.build_timeout, self.RETRIES)

    def embed_query(self, text: str) -> np.ndarray:
        return self._call([self.identity.query_prefix + text], self.query_timeout, 0)[0]
