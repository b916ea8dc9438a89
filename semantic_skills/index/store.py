"""Reading and publishing an index folder's files, under its build lock."""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from pathlib import Path

import numpy as np

from ..errors import IndexCorrupt, first_line
from ..files import Stamp, atomic_write, file_stamp, read_regular_file
from . import MAX_MANIFEST_BYTES
from .lock import build_lock
from .manifest import MANIFEST, Manifest, fix_hint, read_manifest

VECTORS_HEADER_BYTES = 4096  # room for the FAISS flat index's header (45 bytes) before its rows
MAX_VECTORS_BYTES = 4 << 30  # when the manifest does not say the dimension


def read_vectors(index_dir: Path, manifest: Manifest) -> np.ndarray:
    """Load the FAISS file named by ``manifest`` as a ``(rows, dim)`` float32 array.

    Only a regular file is read, and only up to what the manifest's rows at
    its dimension take: a sparse file of many gigabytes is refused unread.
    """
    import faiss

    path = Path(index_dir) / manifest.vectors_file
    try:
        raw = read_regular_file(path, _vectors_bound(manifest))
    except FileNotFoundError:
        raise IndexCorrupt(f"the index vectors file {path} is missing; {fix_hint(index_dir)}") from None
    except OSError as exc:
        raise IndexCorrupt(
            f"cannot read the index vectors {path} ({exc.strerror or exc}); {fix_hint(index_dir)}"
        ) from None
    if manifest.vectors_sha256 and hashlib.sha256(raw).hexdigest() != manifest.vectors_sha256:
        raise IndexCorrupt(
            f"the index vectors {path} do not match the checksum in the manifest; {fix_hint(index_dir)}"
        )
    try:
        index = faiss.deserialize_index(np.frombuffer(raw, dtype=np.uint8))
        vectors = faiss.rev_swig_ptr(index.get_xb(), index.ntotal * index.d).reshape(index.ntotal, index.d)
        vectors = np.array(vectors, dtype=np.float32, copy=True)
    except Exception as exc:
        raise IndexCorrupt(f"cannot read the index vectors {path} ({first_line(exc)}); {fix_hint(index_dir)}") from None
    if vectors.shape[0] != manifest.rows:
        raise IndexCorrupt(
            f"the index vectors hold {vectors.shape[0]} rows but the manifest expects {manifest.rows}; "
            f"{fix_hint(index_dir)}"
        )
    if manifest.embedder.dimension and vectors.shape[1] != manifest.embedder.dimension:
        raise IndexCorrupt(
            f"the index vectors are {vectors.shape[1]}-d but the manifest says "
            f"{manifest.embedder.dimension}-d; {fix_hint(index_dir)}"
        )
    if not np.isfinite(vectors).all():
        raise IndexCorrupt(f"the index vectors contain NaN or infinite values; {fix_hint(index_dir)}")
    return vectors


def _vectors_bound(manifest: Manifest) -> int:
    """The size of the largest vectors file ``manifest`` can name: its rows of float32 at its dimension."""
    dimension = manifest.embedder.dimension
    return manifest.rows * dimension * 4 + VECTORS_HEADER_BYTES if dimension else MAX_VECTORS_BYTES


def load_index(index_dir: Path, attempts: int = 3) -> tuple[Manifest, np.ndarray]:
    """Read a consistent (manifest, vectors) pair.

    Retries when a concurrent build swaps the index between the two reads.
    """
    for attempt in range(attempts):
        manifest = read_manifest(index_dir)
        try:
            return manifest, read_vectors(index_dir, manifest)
        except IndexCorrupt:
            if attempt == attempts - 1 or read_manifest(index_dir).vectors_file == manifest.vectors_file:
                raise
    raise AssertionError("unreachable")


def manifest_stamp(index_dir: Path) -> Stamp | None:
    """A cheap change marker for ``manifest.json``, or None when there is none."""
    return file_stamp(Path(index_dir) / MANIFEST)


def write_index(index_dir: Path, manifest: Manifest, vectors: np.ndarray) -> None:
    """Atomically publish ``vectors`` and ``manifest`` as the index in ``index_dir``.

    Any failure (disk full, kill) leaves the previously published index intact.
    """
    import faiss

    index_dir = Path(index_dir)
    index_dir.mkdir(parents=True, exist_ok=True)
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    generation = time.strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(4)
    manifest.vectors_file = f"vectors-{generation}.faiss"
    manifest.rows = int(vectors.shape[0])
    manifest.check_consistent()
    final_vectors = index_dir / manifest.vectors_file
    previous = read_manifest_file_name(index_dir)
    flat = faiss.IndexFlatIP(int(vectors.shape[1]))
    if len(vectors):
        flat.add(vectors)
    # Serialised in memory and written by Python, so a full disk is an OSError (faiss' own writer raises a
    # RuntimeError that only names it in its text).
    data = faiss.serialize_index(flat).tobytes()
    manifest.vectors_sha256 = hashlib.sha256(data).hexdigest()
    try:
        atomic_write(final_vectors, data)
        atomic_write(index_dir / MANIFEST, _manifest_bytes(manifest.as_dict()))
    except BaseException:
        if read_manifest_file_name(index_dir) != manifest.vectors_file:
            final_vectors.unlink(missing_ok=True)
        raise
    # The previous generation stays so a reader that read the old manifest an
    # instant ago can still open its vectors; anything older (or orphaned by a
    # killed build) goes.
    remove_stale_files(index_dir, keep={manifest.vectors_file, previous})


def read_manifest_file_name(index_dir: Path) -> str | None:
    """The vectors file the published manifest points at, if readable."""
    try:
        return json.loads(read_regular_file(Path(index_dir) / MANIFEST, MAX_MANIFEST_BYTES))["vectors"]["file"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def remove_stale_files(index_dir: Path, keep: set[str]) -> None:
    """Delete leftover temp files and every vectors file not named in ``keep``."""
    for entry in Path(index_dir).iterdir():
        name = entry.name
        if name.startswith(".") and name.endswith(".tmp"):
            entry.unlink(missing_ok=True)
        elif name.startswith("vectors-") and name.endswith(".faiss") and name not in keep:
            entry.unlink(missing_ok=True)


def write_router_section(index_dir: Path, router: dict) -> None:
    """Replace the manifest's ``router`` section (the calibrated gate), leaving the rest as it is.

    Holds the build lock so it never races a build; builds keep the section
    while the embedder is unchanged.
    """
    index_dir = Path(index_dir)
    with build_lock(index_dir):
        read_manifest(index_dir)  # validates, raising IndexMissing / IndexCorrupt
        path = index_dir / MANIFEST
        data = json.loads(read_regular_file(path, MAX_MANIFEST_BYTES))
        data["router"] = router
        atomic_write(path, _manifest_bytes(data))


def _manifest_bytes(data: dict) -> bytes:
    return json.dumps(data, ensure_ascii=False, indent=1).encode("utf-8")
