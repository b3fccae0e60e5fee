"""Keep of an Nsight Systems SQLite export only the tables `umprof advise` reads (small test fixtures).

    python3 benchmarks/apps/trim_trace.py IN.sqlite OUT.sqlite
"""

import sqlite3
import sys
from pathlib import Path

TABLES = ("StringIds", "ENUM_CUDA_MEMCPY_OPER", "ENUM_CUDA_MEM_KIND", "TARGET_INFO_GPU", "PROCESSES",
          "TARGET_INFO_SESSION_START_TIME", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_KERNEL",
          "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUDA_UM_GPU_PAGE_FAULT_EVENTS",
          "CUDA_UM_CPU_PAGE_FAULT_EVENTS", "NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_GRAPH_TRACE", "ThreadNames")


def trim(src: Path, dst: Path) -> None:
    dst.unlink(missing_ok=True)
    con = sqlite3.connect(dst)
    con.execute("ATTACH DATABASE ? AS src", (f"file:{src}?mode=ro",))
    have = {r[0] for r in con.execute("SELECT name FROM src.sqlite_master WHERE type = 'table'")}
    for t in TABLES:
        if t in have:
            sql = con.execute("SELECT sql FROM src.sqlite_master WHERE name = ?", (t,)).fetchone()[0]
            con.execute(sql)
            where = ""
            if t == "PROCESSES":  # the processes that made CUDA calls, not the whole machine's
                where = ("WHERE globalPid IN (SELECT DISTINCT (globalTid >> 24) << 24 FROM src.CUPTI_ACTIVITY_KIND_RUNTIME)"
                         if "CUPTI_ACTIVITY_KIND_RUNTIME" in have else "")
            con.execute(f"INSERT INTO main.{t} SELECT * FROM src.{t} {where}")
    con.commit()
    con.execute("DETACH DATABASE src")
    con.execute("VACUUM")
    con.close()


if __name__ == "__main__":
    trim(Path(sys.argv[1]), Path(sys.argv[2]))
