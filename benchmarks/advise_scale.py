"""How `umprof advise` scales with a trace's size: a synthetic Nsight Systems SQLite export of N records (CUDA
calls, copies and kernels) holding an M-iteration loop, advised through the Python API and the command line,
timed by wall clock with the process's peak resident memory.

    python3 benchmarks/advise_scale.py [--records 1000000] [--iterations 137960] [--cli]

The export's tables are made by the CREATE statements of a real one (``tests/fixtures/traces``, nsys 2025.3),
so that every column the reader looks up is where nsys puts it. Each iteration copies a frame in from pageable
memory and runs a kernel (four records: each its call and its activity), and, as the records allow, copies a
result back (six), synchronises (seven) and asks for the device (cudaGetDevice) as often as the rest allows; the
records left over are a warm-up of device queries before the loop, as a program's imports make them. Goal
(issue 88): 1M records with a 137,960-iteration loop advised, exit 0, in under 10 s and 1 GB resident on a 2-core
machine.
"""

from __future__ import annotations

import argparse
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCHEMA_FROM = ROOT / "tests" / "fixtures" / "traces" / "h100-stream_loop.sqlite"
TABLES = ("StringIds", "ENUM_CUDA_MEMCPY_OPER", "ENUM_CUDA_MEM_KIND", "TARGET_INFO_GPU", "PROCESSES",
          "TARGET_INFO_SESSION_START_TIME", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_KERNEL",
          "CUPTI_ACTIVITY_KIND_RUNTIME")
COPIED_ROWS = ("ENUM_CUDA_MEMCPY_OPER", "ENUM_CUDA_MEM_KIND", "TARGET_INFO_GPU", "TARGET_INFO_SESSION_START_TIME")
PID = 4242
GLOBAL_PID = PID << 24
GLOBAL_TID = GLOBAL_PID | PID
LEAST_PER_ITERATION = 4  # a copy in and its call, a kernel and its launch
FRAME, RESULT = 8 << 20, 1 << 20  # bytes in and out each iteration (--frame, --result)
CHUNK_ROWS = 200_000  # rows inserted at once: the builder's own memory stays small at 10M records


def _columns(con: sqlite3.Connection, table: str) -> list[tuple[str, bool]]:
    return [(r[1], bool(r[3])) for r in con.execute(f"PRAGMA table_info({table})")]


def _row(cols: list[tuple[str, bool]], values: dict) -> tuple:
    """A row in the table's column order: the given values, 0 in the other NOT NULL columns, NULL elsewhere."""
    return tuple(values.get(name, 0 if not_null else None) for name, not_null in cols)


class _Writer:
    """Rows of a table inserted in chunks of CHUNK_ROWS."""

    def __init__(self, con, table):
        self.con, self.table, self.cols, self.rows = con, table, _columns(con, table), []
        self.sql = f"INSERT INTO {table} VALUES ({', '.join('?' * len(self.cols))})"
        self.count = 0

    def add(self, **values):
        self.rows.append(_row(self.cols, values))
        if len(self.rows) >= CHUNK_ROWS:
            self.flush()

    def flush(self):
        self.con.executemany(self.sql, self.rows)
        self.count += len(self.rows)
        self.rows = []


def build_trace(path: Path, records: int, iterations: int, frame: int = FRAME, result: int = RESULT) -> Path:
    """Write an nsys SQLite export of ``records`` records (calls, copies and kernels) holding an ``iterations``-long
    loop (four records each at least: see the module's docstring; the rest a warm-up of device queries before it)."""
    path = Path(path)
    path.unlink(missing_ok=True)
    if records < LEAST_PER_ITERATION * iterations:
        raise SystemExit(f"{records} records hold at most {records // LEAST_PER_ITERATION} iterations")
    src = sqlite3.connect(f"file:{SCHEMA_FROM}?mode=ro", uri=True)
    con = sqlite3.connect(path)
    for table in TABLES:
        con.execute(src.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0])
    for table in COPIED_ROWS:
        rows = src.execute(f"SELECT * FROM {table}").fetchall()
        con.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(rows[0]))})", rows)
    src.close()
    names = ["cudaGetDevice_v3020", "cudaMemcpy_v3020", "cudaLaunchKernel_v7000", "cudaStreamSynchronize_v3020",
             "step"]
    con.executemany("INSERT INTO StringIds VALUES (?, ?)", list(enumerate(names, 1)))
    con.execute("INSERT INTO PROCESSES VALUES (?, ?, 'python3')", (GLOBAL_PID, PID))
    _fill(con, records, iterations, frame, result)
    con.commit()
    con.close()
    return path


def _fill(con, records: int, iterations: int, frame: int, result: int) -> None:
    each = records // iterations  # records an iteration
    # (copy kind or None for a kernel, bytes, source and destination memory kinds, ns): a copy at 10 GB/s
    steps = [(1, frame, 1, 3, frame // 10), (None, 0, 0, 0, 300_000)]
    steps += [(2, result, 3, 1, result // 10)] if each >= 6 else []
    sync, queries = each >= 7, max(0, each - 7)
    warmup = records - iterations * (2 * len(steps) + sync + queries)
    calls = _Writer(con, "CUPTI_ACTIVITY_KIND_RUNTIME")
    copies = _Writer(con, "CUPTI_ACTIVITY_KIND_MEMCPY")
    kernels = _Writer(con, "CUPTI_ACTIVITY_KIND_KERNEL")
    t, corr = 1_000_000_000, 0
    for _ in range(warmup):
        corr += 1
        calls.add(start=t, end=t + 500, eventClass=1, globalTid=GLOBAL_TID, correlationId=corr, nameId=1)
        t += 1_000
    for _ in range(iterations):
        for _ in range(queries):
            corr += 1
            calls.add(start=t, end=t + 300, eventClass=1, globalTid=GLOBAL_TID, correlationId=corr, nameId=1)
            t += 500
        for direction, nbytes, src_kind, dst_kind, dur in steps:
            corr += 1
            name = 3 if direction is None else 2
            calls.add(start=t, end=t + 3_000 + (dur if direction else 0), eventClass=1, globalTid=GLOBAL_TID,
                      correlationId=corr, nameId=name)
            common = dict(start=t + 2_000, end=t + 2_000 + dur, deviceId=0, contextId=1, streamId=7,
                          correlationId=corr, globalPid=GLOBAL_PID)
            if direction is None:
                kernels.add(**common, demangledName=5, shortName=5, gridX=132, gridY=1, gridZ=1, blockX=256,
                            blockY=1, blockZ=1, gridId=corr)
            else:
                copies.add(**common, bytes=nbytes, copyKind=direction, srcKind=src_kind, dstKind=dst_kind, copyCount=1)
            t += 5_000 + dur
        if sync:
            corr += 1
            calls.add(start=t, end=t + 2_000, eventClass=1, globalTid=GLOBAL_TID, correlationId=corr, nameId=4)
        t += 50_000  # the host's own work
    for w in (calls, copies, kernels):
        w.flush()


def peak_mib(who) -> float:
    """The peak resident memory of this process or of its largest finished child (MiB; Linux reports KiB)."""
    return resource.getrusage(who).ru_maxrss / 1024


def cpu_s(who=resource.RUSAGE_SELF) -> float:
    """CPU seconds (user and system) of this process or of its finished children: unlike wall time, not inflated by
    other work on a shared machine."""
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def time_api(trace: Path) -> dict:
    """Advise the trace through the Python API in this process: seconds, peak MiB, the loop it found."""
    sys.path.insert(0, str(ROOT))
    from umprof import api

    from umprof.core.errors import UmprofError

    t0, c0 = time.perf_counter(), cpu_s()
    try:
        (adv,) = api.advise(trace, gpu="H100")
        loop, code = adv.app.loop, 0
    except UmprofError as e:  # a refusal is a row of the table, with its line
        print(f"api: {e}", file=sys.stderr)
        loop, code = None, e.exit_code
    took = time.perf_counter() - t0
    return {"how": "api", "seconds": took, "cpu_s": cpu_s() - c0, "peak_mib": peak_mib(resource.RUSAGE_SELF),
            "iterations": loop.iterations if loop else 0, "exit": code}


def time_cli(trace: Path) -> dict:
    """``python3 -m umprof advise TRACE --gpu H100`` in a child process: seconds, its peak MiB and exit code."""
    t0, c0 = time.perf_counter(), cpu_s(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([sys.executable, "-m", "umprof", "advise", str(trace), "--gpu", "H100", "--json"],
                          capture_output=True, text=True, cwd=ROOT)
    took = time.perf_counter() - t0
    iterations = 0
    if proc.returncode == 0:
        import json

        doc = json.loads(proc.stdout)
        iterations = (doc.get("loop") or {}).get("iterations", 0)
    else:
        print(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "no output", file=sys.stderr)
    return {"how": "cli", "seconds": took, "cpu_s": cpu_s(resource.RUSAGE_CHILDREN) - c0,
            "peak_mib": peak_mib(resource.RUSAGE_CHILDREN), "iterations": iterations, "exit": proc.returncode}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--iterations", type=int, default=137_960)
    ap.add_argument("--frame", type=int, default=FRAME, help="bytes each iteration copies in")
    ap.add_argument("--result", type=int, default=RESULT, help="bytes each iteration copies out")
    ap.add_argument("--cli", action="store_true", help="also time the command line in a child process")
    ap.add_argument("--keep", metavar="PATH", help="write the trace here and keep it")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        trace = Path(a.keep) if a.keep else Path(d) / "scale.sqlite"
        t0 = time.perf_counter()
        build_trace(trace, a.records, a.iterations, a.frame, a.result)
        built = time.perf_counter() - t0
        size = trace.stat().st_size
        rows = [time_cli(trace)] if a.cli else []
        rows.append(time_api(trace))
    print(f"{a.records} records, a loop of {a.iterations} iterations of {a.frame} bytes in and {a.result} out: "
          f"{size / 2**20:.0f} MiB export, built in {built:.1f} s")
    print(f"{'how':<5} {'exit':>4} {'wall s':>8} {'CPU s':>7} {'peak MiB':>9} {'iterations found':>17}")
    for r in rows:
        print(f"{r['how']:<5} {r['exit']:>4} {r['seconds']:>8.2f} {r['cpu_s']:>7.2f} {r['peak_mib']:>9.0f} "
              f"{r['iterations']:>17}")
    return 0 if all(r["exit"] == 0 and r["iterations"] == a.iterations for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
