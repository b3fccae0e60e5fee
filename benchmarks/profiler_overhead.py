"""What torch.profiler adds to a loop's time: each operator it records and each CUDA runtime call it traces,
measured on loops of known counts, untraced and traced (``profile(activities=[CPU, CUDA])``, as a user records a
trace for ``umprof advise``).

    python3 benchmarks/profiler_overhead.py [--steps 1000] [--ops 32] [--reps 5] [--json FILE]

Three loops of ``--steps`` steps, ``--ops`` operators a step:
  host_ops    additions on small CPU tensors: operators with no CUDA call (a data pipeline's, an optimizer's
              bookkeeping)
  cuda_ops    additions on small GPU tensors: one kernel launch each, the GPU idle between them (the host bounds
              the loop)
  gpu_bound   the same, behind one large matrix product a step that keeps the GPU busier than the host: what the
              tracer adds to the host is hidden
Each loop is run ``--reps`` times untraced and traced (timed inside the profiler's context, without its start and
stop), alternately, after a warm-up of each; the figure is the median's difference over the trace's own counts
(``cpu_op`` and ``cuda_runtime`` events): host_ops gives the seconds an operator adds, cuda_ops less that the
seconds a traced CUDA call adds, gpu_bound the share of the expected overhead that reached the loop's time. Every
traced run's checksum must equal the untraced one's.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import sys
import tempfile
import time


def _loop(kind: str, steps: int, ops: int, torch, dev):
    """The loop of ``kind``: returns a function that runs it and returns its checksum."""
    small = torch.ones(16, device=dev if kind != "host_ops" else "cpu")
    big = torch.ones(3072, 3072, device=dev) if kind == "gpu_bound" else None

    def run() -> float:
        acc = small.clone()
        for _ in range(steps):
            if big is not None:
                torch.mm(big, big)
            for _ in range(ops):
                acc.add_(1e-6)
        if dev == "cuda":
            torch.cuda.synchronize()
        return float(acc.sum())
    return run


def _timed(run, torch) -> tuple[float, float]:
    torch.cuda.synchronize()
    start = time.perf_counter()
    checksum = run()
    torch.cuda.synchronize()
    return time.perf_counter() - start, checksum


def _traced(run, torch, path: str) -> tuple[float, float]:
    """The loop timed inside the profiler's context: its start and stop (CUPTI's set-up, the events' collection) are
    the tracer's fixed cost, not what it adds to the loop."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        torch.cuda.synchronize()
        start = time.perf_counter()
        checksum = run()
        torch.cuda.synchronize()
        seconds = time.perf_counter() - start
    prof.export_chrome_trace(path)
    return seconds, checksum


def _counts(path: str) -> dict:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    out = {"cpu_op": 0, "cuda_runtime": 0, "kernel": 0}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in out:
            out[e["cat"]] += 1
    return out


def measure(kind: str, args, torch) -> dict:
    """One loop's medians untraced and traced, its trace's counts, and the checksums' agreement."""
    run = _loop(kind, args.steps, args.ops, torch, "cuda")
    path = os.path.join(tempfile.mkdtemp(prefix="profiler-overhead-"), f"{kind}.json")
    _timed(run, torch)
    _traced(run, torch, path)  # warm-up of both: the profiler's first use loads its libraries
    plain, traced, sums = [], [], set()
    for _ in range(args.reps):
        s, c = _timed(run, torch)
        plain.append(s)
        sums.add(round(c, 3))
        s, c = _traced(run, torch, path)
        traced.append(s)
        sums.add(round(c, 3))
    counts = _counts(path)
    return {"loop": kind, "untraced_s": plain, "traced_s": traced, "untraced_median_s": statistics.median(plain),
            "traced_median_s": statistics.median(traced), "counts": counts, "checksums_agree": len(sums) == 1}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--ops", type=int, default=32)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--json", default="")
    args = p.parse_args()
    try:
        import torch
    except ImportError:
        print("profiler_overhead: needs PyTorch (import torch failed)", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("profiler_overhead: needs a CUDA GPU (torch.cuda.is_available() is False)", file=sys.stderr)
        return 2
    rows = {k: measure(k, args, torch) for k in ("host_ops", "cuda_ops", "gpu_bound")}
    h, c, g = rows["host_ops"], rows["cuda_ops"], rows["gpu_bound"]
    per_op = (h["traced_median_s"] - h["untraced_median_s"]) / max(1, h["counts"]["cpu_op"])
    per_call = ((c["traced_median_s"] - c["untraced_median_s"]) - per_op * c["counts"]["cpu_op"]) \
        / max(1, c["counts"]["cuda_runtime"])
    expected = per_op * g["counts"]["cpu_op"] + per_call * g["counts"]["cuda_runtime"]
    reached = (g["traced_median_s"] - g["untraced_median_s"]) / expected if expected > 0 else float("nan")
    summary = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "cpus": os.cpu_count(),
               "date": time.strftime("%Y-%m-%d"), "steps": args.steps, "ops": args.ops, "reps": args.reps,
               "per_op_s": per_op, "per_call_s": per_call, "gpu_bound_share_reached": reached, "loops": rows}
    for r in rows.values():
        print(f"{r['loop']:10s} untraced {r['untraced_median_s']:.4f} s  traced {r['traced_median_s']:.4f} s  "
              f"{r['counts']}  checksums agree: {r['checksums_agree']}")
    print(f"per recorded operator {per_op * 1e6:.2f} us, per traced CUDA call {per_call * 1e6:.2f} us; "
          f"gpu_bound: {reached:.0%} of the expected overhead reached the loop")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)
    return 0 if all(r["checksums_agree"] for r in rows.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
