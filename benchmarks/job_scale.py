"""How fast `umprof advise` reads a job of many ranks' traces on a local Dask cluster: 64 rank traces made by
copying real fixture traces (tests/fixtures/traces/*.sqlite) as the ranks of 8 hosts of 8 GPUs each (each copy
names its host and rank the way an Nsight Systems export does, in TARGET_INFO_SYSTEM_ENV, runs on its host's GPU
number local_rank, and has its times shifted by its rank's skew), advised by api.advise_job on 8 local workers.
Prints the wall time, the workers and cores, and each worker's peak memory (its process's maximum resident set
after each of its tasks).

    python3 benchmarks/job_scale.py [--ranks 64] [--workers 8] [--per-host 8] [--scheduler ADDRESS]

Goal (issue 90): 64 traces in under 60 s on 8 local workers.
"""

import argparse
import gzip
import lzma
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
TRACES = ROOT / "tests" / "fixtures" / "traces"
# H100 programs whose traces advise (one GPU model, as one job's ranks would be); a group of ranks each
PROGRAMS = ("stream_loop", "pycuda_loop", "chunked_async", "texture_loop")
SKEW_NS = 1_000_000  # each rank's clock starts this much after the one before
TIMED = ("CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMSET",
         "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS", "CUDA_UM_GPU_PAGE_FAULT_EVENTS", "CUDA_UM_CPU_PAGE_FAULT_EVENTS",
         "CUPTI_ACTIVITY_KIND_GRAPH_TRACE")
ON_DEVICE = ("CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMSET",
             "CUDA_UM_GPU_PAGE_FAULT_EVENTS", "CUPTI_ACTIVITY_KIND_GRAPH_TRACE")


def source_trace(name: str, tmp: Path) -> Path:
    path = TRACES / f"h100-{name}.sqlite"
    if path.is_file():
        return path
    out = tmp / path.name
    xz = path.with_name(path.name + ".xz")
    with (lzma.open(xz, "rb") if xz.is_file() else gzip.open(f"{path}.gz", "rb")) as f, open(out, "wb") as g:
        shutil.copyfileobj(f, g)
    return out


def rank_trace(src: Path, out: Path, rank: int, ranks: int, per_host: int) -> None:
    """A copy of ``src`` as rank ``rank`` of the job: its host, rank and GPU, its times shifted."""
    shutil.copy(src, out)
    con = sqlite3.connect(out)
    have = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    local, host = rank % per_host, f"node{rank // per_host:03d}"
    for table in TIMED:
        if table in have:
            cols = {r[1] for r in con.execute(f"PRAGMA table_info({table})")}
            sets = ", ".join(f"{c} = {c} + {rank * SKEW_NS}" for c in ("start", "end") if c in cols)
            con.execute(f"UPDATE {table} SET {sets}")
    for table in ON_DEVICE:
        if table in have:
            con.execute(f"UPDATE {table} SET deviceId = {local}")
    if "TARGET_INFO_GPU" in have:
        cols = {r[1] for r in con.execute("PRAGMA table_info(TARGET_INFO_GPU)")}
        con.execute(f"UPDATE TARGET_INFO_GPU SET {'cuDevice' if 'cuDevice' in cols else 'id'} = {local}")
    con.execute("CREATE TABLE TARGET_INFO_SYSTEM_ENV (name TEXT NOT NULL, value TEXT NOT NULL)")
    con.executemany("INSERT INTO TARGET_INFO_SYSTEM_ENV VALUES (?, ?)", [
        ("Hostname", host), ("DeviceEnvironment", f"RANK={rank}\nLOCAL_RANK={local}\nWORLD_SIZE={ranks}")])
    con.commit()
    con.close()


def make_job(folder: Path, ranks: int, per_host: int) -> list[Path]:
    sources = [source_trace(p, folder) for p in PROGRAMS]
    out = []
    for r in range(ranks):
        path = folder / "job" / f"report_{r}.sqlite"
        path.parent.mkdir(exist_ok=True)
        rank_trace(sources[r * len(sources) // ranks], path, r, ranks, per_host)
        out.append(path)
    return out


def main():
    from umprof import api

    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--per-host", type=int, default=8)
    ap.add_argument("--scheduler", default=None)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        paths = make_job(Path(tmp), a.ranks, a.per_host)
        t0 = time.perf_counter()
        doc = api.advise_job([str(Path(tmp) / "job")], scheduler=a.scheduler, workers=a.workers)
        wall = time.perf_counter() - t0
    peaks = defaultdict(int)
    for r in doc["ranks"]:
        if r.get("worker"):
            peaks[r["worker"]] = max(peaks[r["worker"]], r["peak_rss_bytes"])
    job, cores = doc["job"], len(os.sched_getaffinity(0))
    print(f"{len(paths)} rank traces ({a.per_host} a host) advised in {wall:.1f} s on {len(peaks)} workers "
          f"({a.workers} asked), {cores} CPU cores; {job['totals']['advised']} advised, {job['totals']['failed']} failed")
    print("per-worker peak memory (MiB): " + ", ".join(f"{v / 2**20:.0f}" for _, v in sorted(peaks.items())))
    per_task = sorted(r["seconds"] for r in doc["ranks"] if r.get("seconds"))
    cpu = sorted(r["cpu_s"] for r in doc["ranks"] if r.get("cpu_s"))
    print(f"per trace (read and advised, in its worker): wall median {per_task[len(per_task) // 2]:.1f} s, slowest "
          f"{per_task[-1]:.1f} s; CPU median {cpu[len(cpu) // 2]:.1f} s, {sum(cpu):.0f} s in all; load average "
          f"{os.getloadavg()[0]:.1f} at the end")
    print(f"groups: {[g['count'] for g in job['groups']]}; hosts: {len(job['hosts'])}; stragglers: "
          f"{job['stragglers']['count']}; limits: {[x['code'] for x in job['limits']]}")


if __name__ == "__main__":
    main()
