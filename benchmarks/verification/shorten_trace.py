"""Shorten a trace into a small test fixture: keep the events that start within the first FRACTION of its
CUDA activity (the span from the first CUDA call to the last GPU activity), everything else (names, processes,
GPUs, metadata) whole.

    python3 shorten_trace.py IN OUT FRACTION

IN and OUT: an Nsight Systems SQLite export (.sqlite) or a torch.profiler Chrome trace (.json or .json.gz).
"""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
import sys
from pathlib import Path

# the SQLite tables of timed events (a "start" column): cut; every other table is kept whole
TIMED = ("CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMSET",
         "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "CUPTI_ACTIVITY_KIND_GRAPH_TRACE",
         "NVTX_EVENTS", "OSRT_API", "CUDA_UM_GPU_PAGE_FAULT_EVENTS", "CUDA_UM_CPU_PAGE_FAULT_EVENTS")


def shorten_sqlite(src: Path, dst: Path, fraction: float) -> None:
    shutil.copyfile(src, dst)
    con = sqlite3.connect(dst)
    have = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    first, last = con.execute("SELECT min(start), max(end) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()
    for t in ("CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_KERNEL"):
        if t in have:
            last = max(last, con.execute(f"SELECT coalesce(max(end), 0) FROM {t}").fetchone()[0])
    cut = first + fraction * (last - first)
    for t in TIMED:
        if t in have:
            con.execute(f"DELETE FROM {t} WHERE start > ?", (cut,))
    con.commit()
    con.execute("VACUUM")
    con.close()


def _open(path: Path, mode: str):
    return gzip.open(path, mode) if path.suffix == ".gz" else open(path, mode)


def shorten_kineto(src: Path, dst: Path, fraction: float) -> None:
    with _open(src, "rt") as f:
        doc = json.load(f)
    events = doc["traceEvents"]
    cuda = [e for e in events if e.get("cat") in ("cuda_runtime", "kernel", "gpu_memcpy", "gpu_memset")]
    first = min(e["ts"] for e in cuda)
    last = max(e["ts"] + e.get("dur", 0) for e in cuda)
    cut = first + fraction * (last - first)
    doc["traceEvents"] = [e for e in events if e.get("ph") == "M" or "ts" not in e or e["ts"] <= cut]
    with _open(dst, "wt") as f:
        json.dump(doc, f, separators=(",", ":"))


def main() -> int:
    if len(sys.argv) != 4:
        print("usage: shorten_trace.py IN OUT FRACTION", file=sys.stderr)
        return 2
    src, dst, fraction = Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3])
    if not 0 < fraction <= 1:
        print(f"shorten_trace.py: FRACTION: expected a number in (0, 1], got {sys.argv[3]}", file=sys.stderr)
        return 2
    if src.suffix == ".sqlite":
        shorten_sqlite(src, dst, fraction)
    else:
        shorten_kineto(src, dst, fraction)
    return 0


if __name__ == "__main__":
    sys.exit(main())
