"""What a host touch of GPU-held managed memory costs, untraced and as a trace shows it (benchmarks/host_touch.sh).

    python3 benchmarks/host_touch_table.py DIR [--json FILE]

DIR holds host_touch.sh's files (its archive unpacked). For each spacing: the touches a rep, the host's time for them
untraced (the median of its reps' own clock), and the host's stalls a trace of the same program shows
(``umprof.model.application.host_fault_stalls`` over its loop, a rep an iteration), each per touch; and their ratio,
untraced over traced: what `umprof advise` scales a trace's stalls by (``umprof.model.advice.thresholds.TRACED_FAULT_SHARE``). Beside them,
the GPU's side: the kernel that rewrites the buffer after the host's touches, which faults the touched pages back,
untraced (its events) and as the trace times it, the median over the reps after the first (whose kernel moves the
whole buffer in from the host's first write); and their ratio, what `umprof advise` scales the time a trace's
kernels fault beyond the model's price by (``thresholds.TRACED_GPU_FAULT_SHARE``).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

from umprof.model import application
from umprof.nsight import trace_db


def table(folder: Path) -> dict:
    untraced: dict[int, list] = {}
    for line in (folder / "untraced.jsonl").read_text().splitlines():
        r = json.loads(line)
        untraced.setdefault(r["spacing"], []).append(r)
    rows = []
    for spacing, reps in sorted(untraced.items()):
        trace = folder / f"traced-{spacing}.sqlite"
        if not trace.is_file():
            continue
        (app,) = application.applications(trace_db.read_sqlite(trace))
        if app.loop is None or not app.host_faults.stretches:
            continue
        touches = reps[0]["touches"]
        host = statistics.median(r["host_s"] for r in reps)
        traced = app.host_faults.seconds / app.host_faults.stretches
        kernel = statistics.median(r["kernel_s"] for r in reps[1:]) if len(reps) > 1 else math.nan
        kernels = app.kernels.sort_values("start")["dur_s"].to_numpy(float)[1:]
        kernel_traced = statistics.median(kernels) if len(kernels) else math.nan
        rows.append({"spacing": spacing, "touches": touches, "untraced_us": 1e6 * host / touches,
                     "traced_us": 1e6 * traced / touches, "ratio": host / traced,
                     "reps": len(reps), "stretches": app.host_faults.stretches,
                     "kernel_untraced_ms": 1e3 * kernel, "kernel_traced_ms": 1e3 * kernel_traced,
                     "kernel_ratio": kernel / kernel_traced})
    head = folder / "gpu.txt"
    return {"gpu": head.read_text().strip() if head.is_file() else "",
            "date": (folder / "date.txt").read_text().strip() if (folder / "date.txt").is_file() else "",
            "rows": rows, "median_ratio": statistics.median(r["ratio"] for r in rows) if rows else None,
            "median_kernel_ratio": statistics.median(r["kernel_ratio"] for r in rows) if rows else None}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    t = table(args.folder)
    print(f"{t['gpu']}, {t['date']}")
    print("| spacing | touches a rep | untraced µs a touch | traced µs a touch | untraced / traced | "
          "kernel untraced ms | kernel traced ms | untraced / traced |")
    print("|---|---|---|---|---|---|---|---|")
    for r in t["rows"]:
        print(f"| {r['spacing'] // 1024} KiB | {r['touches']} | {r['untraced_us']:.1f} | {r['traced_us']:.1f} | "
              f"{r['ratio']:.2f} | {r['kernel_untraced_ms']:.1f} | {r['kernel_traced_ms']:.1f} | "
              f"{r['kernel_ratio']:.2f} |")
    print(f"median ratio: {t['median_ratio']:.2f}; the kernel's: {t['median_kernel_ratio']:.2f}")
    if args.json:
        args.json.write_text(json.dumps(t, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
