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
    return _read_vector_file(Path(index_dir), manifest.vectors_file, manifest.vectors_sha256, manifest.rows,
                             manifest.embedder.dimension)


def read_second_vectors(index_dir: Path, manifest: Manifest) -> np.ndarray | None:
    """The index's second vector set (``embedder.multilingual``), checked as the first one is; None without one."""
    second = manifest.second
    if second is None:
        return None
    return _read_vector_file(Path(index_dir), second.vectors_file, second.vectors_sha256, manifest.rows,
                             second.embedder.dimension)


def _read_vector_file(index_dir: Path, name: str, sha256: str, rows: int, dimension: int) -> np.ndarray:
    import faiss

    path = index_dir / name
    try:
        raw = read_regular_file(path, rows * dimension * 4 + VECTORS_HEADER_BYTES if dimension else MAX_VECTORS_BYTES)
    except FileNotFoundError:
        raise IndexCorrupt(f"the index vectors file {path} is missing; {fix_hint(index_dir)}") from None
    except OSError as exc:
        raise IndexCorrupt(
            f"cannot read the index vectors {path} ({exc.strerror or exc}); {fix_hint(index_dir)}"
        ) from None
    if sha256 and hashlib.sha256(raw).hexdigest() != sha256:
        raise IndexCorrupt(
            f"the index vectors {path} do not match the checksum in the manifest; {fix_hint(index_dir)}"
        )
    try:
        index = faiss.deserialize_index(np.frombuffer(raw, dtype=np.uint8))
        vectors = faiss.rev_swig_ptr(index.get_xb(), index.ntotal * index.d).reshape(index.ntotal, index.d)
        vectors = np.array(vectors, dtype=np.float32, copy=True)
    except Exception as exc:
        raise IndexCorrupt(f"cannot read the index vectors {path} ({first_line(exc)}); {fix_hint(index_dir)}") from None
    if vectors.shape[0] != rows:
        raise IndexCorrupt(
            f"the index vectors {path} hold {vectors.shape[0]} rows but the manifest expects {rows}; "
            f"{fix_hint(index_dir)}"
        )
    if dimension and vectors.shape[1] != dimension:
        raise IndexCorrupt(
            f"the index vectors {path} are {vectors.shape[1]}-d but the manifest says {dimension}-d; "
            f"{fix_hint(index_dir)}"
        )
    if not np.isfinite(vectors).all():
        raise IndexCorrupt(f"the index vectors {path} contain NaN or infinite values; {fix_hint(index_dir)}")
    return vectors


def load_index(index_dir: Path, attempts: int = 3) -> tuple[Manifest, np.ndarray]:
    """Read a consistent (manifest, vectors) pair.

    Retries when a concurrent build swaps the index between the two reads.
    """
    manifest, vectors, _second = load_vector_sets(index_dir, attempts, second=False)
    return manifest, vectors


def load_vector_sets(index_dir: Path, attempts: int = 3,
                     second: bool = True) -> tuple[Manifest, np.ndarray, np.ndarray | None]:
    """A consistent (manifest, vectors, second vectors or None) triple, retried as :func:`load_index` is."""
    for attempt in range(attempts):
        manifest = read_manifest(index_dir)
        try:
            return (manifest, read_vectors(index_dir, manifest),
                    read_second_vectors(index_dir, manifest) if second else None)
        except IndexCorrupt:
            if attempt == attempts - 1 or read_manifest(index_dir).vectors_file == manifest.vectors_file:
                raise
    raise AssertionError("unreachable")


def manifest_stamp(index_dir: Path) -> Stamp | None:
    """A cheap change marker for ``manifest.json``, or None when there is none."""
    return file_stamp(Path(index_dir) / MANIFEST)


def write_index(index_dir: Path, manifest: Manifest, vectors: np.ndarray,
                second_vectors: np.ndarray | None = None) -> None:
    """Atomically publish ``vectors`` (and ``second_vectors``, the set ``manifest.second`` names) and ``manifest``
    as the index in ``index_dir``.

    Any failure (disk full, kill) leaves the previously published index intact.
    """
    index_dir = Path(index_dir)
    index_dir.mkdir(parents=True, exist_ok=True)
    generation = time.strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(4)
    manifest.vectors_file = f"vectors-{generation}.faiss"
    manifest.rows = int(vectors.shape[0])
    manifest.check_consistent()
    files = {manifest.vectors_file: _serialized(vectors)}
    manifest.vectors_sha256 = hashlib.sha256(files[manifest.vectors_file]).hexdigest()
    if manifest.second is not None:
        if second_vectors is None or len(second_vectors) != manifest.rows:
            raise ValueError("the second vector set must hold a row for each of the first set's rows")
        manifest.second.vectors_file = f"vectors-{generation}-second.faiss"
        files[manifest.second.vectors_file] = _serialized(second_vectors)
        manifest.second.vectors_sha256 = hashlib.sha256(files[manifest.second.vectors_file]).hexdigest()
    previous = published_vector_files(index_dir)
    try:
        for name, data in files.items():
            atomic_write(index_dir / name, data)
        atomic_write(index_dir / MANIFEST, _manifest_bytes(manifest.as_dict()))
    except BaseException:
        if manifest.vectors_file not in published_vector_files(index_dir):
            for name in files:
                (index_dir / name).unlink(missing_ok=True)
        raise
    # The previous generation stays so a reader that read the old manifest an
    # instant ago can still open its vectors; anything older (or orphaned by a
    # killed build) goes.
    remove_stale_files(index_dir, keep=set(files) | previous)


def _serialized(vectors: np.ndarray) -> bytes:
    """``vectors`` as a FAISS flat index's bytes: serialised in memory and written by Python, so a full disk is an
    OSError (faiss' own writer raises a RuntimeError that only names it in its text)."""
    import faiss

    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    flat = faiss.IndexFlatIP(int(vectors.shape[1]))
    if len(vectors):
        flat.add(vectors)
    return faiss.serialize_index(flat).tobytes()


def published_vector_files(index_dir: Path) -> set[str]:
    """The vectors files the published manifest points at (the first set's and any second one's), if readable."""
    try:
        data = json.loads(read_regular_file(Path(index_dir) / MANIFEST, MAX_MANIFEST_BYTES))
        second = data.get("second_vectors")
        return {str(data["vectors"]["file"])} | ({str(second["file"])} if second else set())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return set()


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
