"""The settings and code paths chosen for speed keep their behaviour (timings live in benchmarks/)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from semantic_skills.service import WAITING_FOR_INDEX, RouterClient


def _environment_of(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(entry.split("=", 1) for entry in raw.decode(errors="replace").split("\0") if "=" in entry)


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to read the worker's environment")
def test_routing_worker_runs_numpy_torch_and_onnxruntime_on_one_thread(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "8")  # the host's own setting does not leak into the worker
    client = RouterClient(tmp_path / "no-index-yet")
    client.start()
    try:
        deadline = time.monotonic() + 60
        while client.state != WAITING_FOR_INDEX and time.monotonic() < deadline:
            time.sleep(0.05)
        assert client.state == WAITING_FOR_INDEX, client.detail
        environment = _environment_of(client._process.pid)
    finally:
        client.close()

    assert environment["OMP_NUM_THREADS"] == "1"
    assert environment["OPENBLAS_NUM_THREADS"] == "1" and environment["MKL_NUM_THREADS"] == "1"
