"""How fast `umprof advise` reads a large trace: a generated Nsight Systems export of a loop with a
million copies and kernels (and as many CUDA calls), timed from opening it to the advice, with the
process's peak memory.

    python3 benchmarks/advise_bench.py [--ops 1000000]

Goal (issue 38): under 20 s and 2 GB.
"""

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main():
    from tests.unit.nsight.synthetic_trace import App, Op, write_trace
    from umprof import api

    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", type=int, default=1_000_000)
    a = ap.parse_args()
    # an iteration: 8 copies in of 256 KiB, a kernel, 1 copy back: ten GPU operations
    steps = [Op("copy", "h2d", 256 * 1024, "pageable", dur_ns=25_000) for _ in range(8)] + \
        [Op("kernel", dur_ns=40_000), Op("copy", "d2h", 2 * 2**20, "pageable", dur_ns=150_000), Op("host", dur_ns=50_000)]
    app = App(iterations=a.ops // 10, steps=steps)
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        trace = write_trace(Path(d) / "big.sqlite", app)
        made = time.perf_counter() - t0
        t0 = time.perf_counter()
        (adv,) = api.advise(trace, gpu="H200")
        took = time.perf_counter() - t0
        size = trace.stat().st_size
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    ops = len(adv.app.copies) + len(adv.app.kernels)
    print(f"{ops} copies and kernels, {app.iterations} iterations ({size / 2**20:.0f} MiB trace, written in {made:.1f} s): "
          f"advise took {took:.1f} s, peak memory {peak:.0f} MiB; loop found: {adv.app.loop.iterations} iterations; "
          f"advice: {adv.loop_advice.strategy}")
    return 0 if took < 20 and peak < 2048 else 1


if __name__ == "__main__":
    sys.exit(main())
