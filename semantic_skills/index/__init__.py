"""The on-disk index: a FAISS ``IndexFlatIP`` of unit vectors plus a JSON manifest.

Layout of an index folder::

    manifest.json          the commit point; names the vectors file below and its SHA-256
    vectors-<id>.faiss     one row per embedded view, in manifest order
    .lock                  held by a running build (or by ``calibrate --write``)

A build writes a new ``vectors-<id>.faiss`` and then atomically replaces
``manifest.json``; readers therefore see either the old index or the new one,
never a mix, and a crashed build leaves the old index in place.

``manifest`` holds the manifest's records and how they are read, ``store``
reads and publishes the files under the build lock, and ``diff`` compares the
skills on disk with an index.
"""

MANIFEST = "manifest.json"  # here, not in manifest.py, so it can be named without importing numpy
MAX_MANIFEST_BYTES = 256 << 20  # tens of thousands of skills (a skill's record is a few KB); a bigger one is not read
