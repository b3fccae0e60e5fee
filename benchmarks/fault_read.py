"""benchmarks/fault_read.cu's cases read by numpy, as umprof's calibration loop reads its buffer
(``view.sum(dtype=np.uint64)``, umprof/measure/ops/loop.py), through pycuda: what the host pays to read back
managed memory a kernel wrote, beside pinned memory the kernel's output was copied into.

    python3 benchmarks/fault_read.py [--mib 64] [--iters 20]

One JSON line a case, with the C program's keys (``reader``: ``numpy-sum`` or ``numpy-touch``, one word a 4 KiB
page); ``ok``: every read saw what the kernel wrote.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

KERNEL = """
extern "C" __global__ void write_kernel(unsigned *out, size_t n, unsigned it) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = (unsigned)(i & 1023) + it;
}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mib", type=int, default=64, help="the buffer's size in MiB (default: 64)")
    ap.add_argument("--iters", type=int, default=20,
                    help="iterations a case, the first not counted (default: 20; at least 2)")
    a = ap.parse_args()
    if a.iters < 2:
        ap.error(f"option '--iters': expected at least 2 (the first is not counted), got {a.iters}")
    if a.mib < 1:
        ap.error(f"option '--mib': expected a positive size in MiB, got {a.mib}")
    import pycuda.autoinit  # noqa: F401  (the context)
    import pycuda.driver as cuda
    from pycuda.compiler import SourceModule

    fn = SourceModule(KERNEL, no_extern_c=True).get_function("write_kernel")
    n = (a.mib << 20) // 4
    free_b, _ = cuda.mem_get_info()
    if 4 * n > free_b // 2:
        ap.error(f"--mib {a.mib}: more than half the GPU's free memory")
    for memory in ("managed", "pinned"):
        for reader in ("numpy-sum", "numpy-touch"):
            step = 1024 if reader == "numpy-touch" else 1
            # after iteration it, word i holds (i & 1023) + it: the sum at iteration 0 plus it a word read
            words = len(range(0, n, step))
            at_zero = int((np.arange(0, n, step, dtype=np.uint64) & 1023).sum())
            if memory == "managed":
                host = cuda.managed_empty(n, np.uint32, mem_flags=cuda.mem_attach_flags.GLOBAL)
                dev = host
            else:
                host = cuda.pagelocked_empty(n, np.uint32)
                dev = cuda.mem_alloc(4 * n)
            host[:] = 0  # every page first on the host
            if memory == "pinned":
                cuda.memcpy_htod(dev, host)
            start, end = cuda.Event(), cuda.Event()
            k_ms, c_ms, r_ms, ok = [], [], [], True
            for it in range(a.iters):
                start.record()
                fn(dev, np.uint64(n), np.uint32(it), block=(256, 1, 1), grid=(1056, 1))
                end.record()
                end.synchronize()
                if it:
                    k_ms.append(start.time_till(end))
                if memory == "pinned":
                    start.record()
                    cuda.memcpy_dtoh(host, dev)
                    end.record()
                    end.synchronize()
                    if it:
                        c_ms.append(start.time_till(end))
                t0 = time.perf_counter()
                s = int(host[::step].sum(dtype=np.uint64))
                t1 = time.perf_counter()
                if it:
                    r_ms.append((t1 - t0) * 1e3)
                ok &= s == at_zero + it * words
            print(json.dumps({"memory": memory, "kernel": "write", "reader": reader, "bytes": 4 * n,
                              "iters": a.iters, "kernel_ms": round(statistics.median(k_ms), 4),
                              "copy_ms": round(statistics.median(c_ms), 4) if c_ms else 0.0,
                              "read_ms": round(statistics.median(r_ms), 4), "ok": ok}), flush=True)
            del host
            if memory == "pinned":
                dev.free()


if __name__ == "__main__":
    main()
