"""Embedders: text in, L2-normalised float32 vectors out.

``base`` holds the interface, the identity that says which vectors are
comparable, and document batching; ``sentence_transformers``, ``onnx`` and
``litellm`` are the backends; ``factory`` builds one from settings. Heavy
libraries (torch, sentence-transformers, onnxruntime, litellm) are imported
only when an embedder first loads, never when these modules are imported.
"""
