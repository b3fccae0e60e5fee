"""How fast `umprof advise` reads and advises a large torch.profiler (Kineto) trace: a real trace's training
step (tests/fixtures/traces/kineto/a100-trainer-rank0.json.gz, an A100 trainer's ProfilerStep: ~21,000 events of
CPU ops, CUDA calls, kernels, copies and flows) repeated with shifted times and correlation ids until the trace holds
a million events, written gzipped as torch.profiler writes it, then timed from reading it to the advice, with the
process's peak memory.

    python3 benchmarks/kineto_scale.py [--events 1000000] [--keep big.json.gz]

Goal (issue 89): a 1M-event trace read and advised in under 20 s on a 2-core machine.
"""

import argparse
import gzip
import lzma
import resource
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SOURCE = ROOT / "tests" / "fixtures" / "traces" / "kineto" / "a100-trainer-rank0.json.xz"  # xz: the fixture's form
STEP = "ProfilerStep#"


def one_step(doc: dict) -> tuple[list, list, float]:
    """The trace's metadata events, its second step's events (the first carries warm-up) and the step's length
    (µs): a step's CPU ops, calls and flows start within it, its GPU events are those its calls launched."""
    events = doc["traceEvents"]
    steps = sorted((e["ts"], e["dur"]) for e in events if str(e.get("name", "")).startswith(STEP))
    lo, length = steps[1]
    calls = {e["args"]["correlation"] for e in events if e.get("cat") == "cuda_runtime"
             and lo <= e["ts"] < lo + length}
    meta = [e for e in events if e.get("ph") == "M"]

    def mine(e):
        if e.get("ph") == "M":
            return False
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            return (e.get("args") or {}).get("correlation") in calls
        if e.get("cat") == "ac2g":
            return e.get("id") in calls
        return isinstance(e.get("ts"), (int, float)) and lo <= e["ts"] < lo + length

    return meta, [e for e in events if mine(e)], float(length)


def shifted(e: dict, dt: float, dc: int) -> dict:
    """An event moved ``dt`` µs later, its correlation, flow and external ids ``dc`` further."""
    e = dict(e, ts=e["ts"] + dt)
    if "id" in e:
        e["id"] = e["id"] + dc
    args = e.get("args")
    if args and ("correlation" in args or "External id" in args):
        args = dict(args)
        for key in ("correlation", "External id"):
            if key in args:
                args[key] = args[key] + dc
        e["args"] = args
    return e


def synthesise(events: int) -> bytes:
    """The source trace's step repeated to ``events`` events, as gzipped JSON."""
    doc = orjson.loads(lzma.decompress(SOURCE.read_bytes()))
    meta, step, length = one_step(doc)
    span = max(int(e["args"]["correlation"]) for e in step if "correlation" in (e.get("args") or {})) + 1
    out = list(meta)
    i = 0
    while len(out) < events:
        out.extend(shifted(e, i * length, i * span) for e in step)
        i += 1
    doc["traceEvents"] = out
    return gzip.compress(orjson.dumps(doc), 1)


def main():
    from umprof import api
    from umprof.nsight.kineto import read_kineto

    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--keep", type=Path, help="write the synthesised trace here too")
    a = ap.parse_args()
    t0 = time.perf_counter()
    data = synthesise(a.events)
    made = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as d:
        trace = Path(d) / "big.pt.trace.json.gz"
        trace.write_bytes(data)
        if a.keep:
            a.keep.write_bytes(data)
        t0, c0 = time.perf_counter(), time.process_time()
        t = read_kineto(trace)
        read, read_cpu = time.perf_counter() - t0, time.process_time() - c0
        t0, c0 = time.perf_counter(), time.process_time()
        advice = api.advise(trace, gpu="H100")
        advised, advised_cpu = time.perf_counter() - t0, time.process_time() - c0
    n = len(t.copies) + len(t.kernels) + len(t.memsets) + len(t.calls) + len(t.ranges)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(f"synthesised {a.events:,} events ({len(data) / 2**20:.0f} MiB gzipped) in {made:.1f} s")
    # CPU time beside wall time: on a shared machine the wall clock counts other processes' turns
    print(f"read: {read:.1f} s wall, {read_cpu:.1f} s CPU ({n:,} rows: {len(t.copies):,} copies, "
          f"{len(t.kernels):,} kernels, {len(t.calls):,} calls, {len(t.ranges):,} ranges)")
    print(f"read and advised (api.advise, from the file): {advised:.1f} s wall, {advised_cpu:.1f} s CPU; "
          f"peak memory {peak:.0f} MiB")
    loop = advice[0].app.loop
    print(f"advice: {advice[0].app.strategy}; loop: {loop.iterations if loop else None} iterations; "
          f"{advice[0].verdict[:160]}")


if __name__ == "__main__":
    main()
