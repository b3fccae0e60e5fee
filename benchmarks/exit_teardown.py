"""What a process pays at exit for the host memory it leaves behind (benchmarks/exit_teardown.cu): each mode
run ``--reps`` times, interleaved, its whole time taken from outside (process start to its exit, so the
exit's teardown is in it) beside the steps it timed itself.

    python3 benchmarks/exit_teardown.py [--mib 1024] [--reps 5] [--json OUT.json]

The modes: malloc'd memory left as it is (pageable), registered and never unregistered (registered),
registered then unregistered and freed (unregister), cudaMallocHost'd and never freed (pinned), and
cudaFreeHost'd (freehost). `exit_s` is the process's whole time less what main() timed: the context's
teardown with whatever is left in it. Needs nvcc and a GPU.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODES = ("pageable", "registered", "unregister", "pinned", "freehost")


def build(out_dir: Path) -> Path:
    """The program, built with nvcc."""
    exe = out_dir / "exit_teardown"
    subprocess.run(["nvcc", "-O2", "-o", str(exe), str(HERE / "exit_teardown.cu")], check=True)
    return exe


def run_once(exe: Path, mode: str, mib: int) -> dict:
    """One process: its own steps and, timed from outside, the whole of it."""
    t = time.perf_counter()
    out = subprocess.run([str(exe), mode, str(mib)], check=True, capture_output=True, text=True).stdout
    whole = time.perf_counter() - t
    doc = json.loads(out.strip().splitlines()[-1])
    doc.update(process_s=whole, exit_s=whole - doc["main_s"])
    return doc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mib", type=int, default=1024, help="the buffer's size in MiB (default: 1024)")
    ap.add_argument("--reps", type=int, default=5, help="processes per mode, interleaved (default: 5)")
    ap.add_argument("--json", type=Path, default=None, help="also write the medians, the GPU and the host here")
    a = ap.parse_args()
    try:
        gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], check=True,
                             capture_output=True, text=True).stdout.splitlines()[0].strip()
    except (OSError, subprocess.CalledProcessError, IndexError):
        print("exit_teardown: no GPU here (nvidia-smi found none)", file=sys.stderr)
        raise SystemExit(3) from None
    with tempfile.TemporaryDirectory() as d:
        exe = build(Path(d))
        runs = {m: [] for m in MODES}
        for _ in range(a.reps):
            for m in MODES:
                runs[m].append(run_once(exe, m, a.mib))
    keys = ("alloc_s", "write_s", "free_s", "main_s", "exit_s", "process_s")
    med = {m: {k: statistics.median(r[k] for r in rs) for k in keys} for m, rs in runs.items()}
    print(f"{gpu}, {a.mib} MiB, median of {a.reps} processes")
    print(f"{'mode':12s}" + "".join(f"{k[:-2]:>10s}" for k in keys))
    for m, r in med.items():
        print(f"{m:12s}" + "".join(f"{r[k]:9.3f}s" for k in keys))
    if a.json:
        a.json.write_text(json.dumps({"gpu": gpu, "host": platform.node(), "date": time.strftime("%Y-%m-%d"),
                                      "mib": a.mib, "reps": a.reps, "median_s": med}, indent=1))


if __name__ == "__main__":
    main()
