"""A pycuda application: each step numpy produces a 32 MiB frame, pycuda copies it in, a SourceModule
kernel maps it to a 32 MiB result, which is copied back and reduced with numpy.

Built and timed by run_apps.py: ``python3 pycuda_loop.py --mem MODE`` (pageable: numpy arrays, the
default; pinned: ``pagelocked_empty``; write-combined: the same, WRITECOMBINED; zero-copy:
``pagelocked_empty`` mapped, the kernel reads it in place; managed: ``managed_empty``;
pageable-registered: the numpy arrays page-locked in place with cuda-bindings' ``cuMemHostRegister``,
as umprof registers them); prints one JSON line.
"""

import argparse
import json
import statistics
import time

import numpy as np
import pycuda.autoinit  # noqa: F401 (creates the context)
import pycuda.driver as cuda
from pycuda.compiler import SourceModule

KERNEL = SourceModule("""
__global__ void frame(const float *in, float *out, unsigned long long n, int work) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        float x = in[i];
        for (int k = 0; k < work; ++k) x = x * 0.999f + 0.5f;
        out[i] = x;
    }
}
""").get_function("frame")


def page_aligned(n: int) -> np.ndarray:
    """n float32 of pageable memory starting on a page (as a malloc'd buffer this large does)."""
    raw = np.empty(n * 4 + 4096, np.uint8)
    start = -raw.ctypes.data % 4096
    return raw[start:start + n * 4].view(np.float32)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mem", default="pageable",
                   choices=["pageable", "pinned", "write-combined", "zero-copy", "managed", "pageable-registered"])
    p.add_argument("--mib", type=float, default=32)
    p.add_argument("--iters", type=int, default=40)
    p.add_argument("--work", type=int, default=1)
    p.add_argument("--parts", action="store_true",
                   help="also time each step's parts on the host's clock (the write, each copy, the kernel, the sum) "
                        "and print their medians under \"parts_s\"")
    a = p.parse_args()
    n = int(a.mib * 2**20 // 4)
    t0 = time.perf_counter()
    copies = a.mem in ("pageable", "pinned", "write-combined", "pageable-registered")
    if a.mem == "pageable":
        h_in, h_out = np.empty(n, np.float32), np.empty(n, np.float32)
    elif a.mem == "pageable-registered":  # pycuda 2026.1's register_host_memory raised SystemError here
        from cuda.bindings import driver as cu

        h_in, h_out = page_aligned(n), page_aligned(n)
        for h in (h_in, h_out):
            (err,) = cu.cuMemHostRegister(h.ctypes.data, h.nbytes, 0)
            if err != cu.CUresult.CUDA_SUCCESS:
                raise SystemExit(f"cuMemHostRegister: {err}")
    elif a.mem in ("pinned", "write-combined"):
        flags = cuda.host_alloc_flags.WRITECOMBINED if a.mem == "write-combined" else 0
        h_in, h_out = cuda.pagelocked_empty(n, np.float32, mem_flags=flags), cuda.pagelocked_empty(n, np.float32)
    elif a.mem == "zero-copy":
        flags = cuda.host_alloc_flags.DEVICEMAP
        h_in, h_out = (cuda.pagelocked_empty(n, np.float32, mem_flags=flags) for _ in range(2))
    else:
        h_in, h_out = (cuda.managed_empty(n, np.float32, mem_flags=cuda.mem_attach_flags.GLOBAL) for _ in range(2))
    if copies:
        d_in, d_out = cuda.mem_alloc(n * 4), cuda.mem_alloc(n * 4)
    elif a.mem == "zero-copy":
        d_in, d_out = (np.intp(x.base.get_device_pointer()) for x in (h_in, h_out))
    else:
        d_in, d_out = h_in.base, h_out.base  # managed allocations: the kernel takes their pointers
    base = ((np.arange(n, dtype=np.int64) * 7) & 1023).astype(np.float32)
    total = 0.0
    blocks = min((n + 255) // 256, 132 * 16)
    parts = {k: [] for k in ("write", "h2d", "kernel", "d2h", "sum")}
    clock = time.perf_counter

    def timed(name, t):  # the part since t, where asked (the kernel's part waits for it to end); else nothing read
        if not a.parts:
            return t
        if name == "kernel":
            cuda.Context.synchronize()
        parts[name].append(clock() - t)
        return clock()

    for it in range(a.iters):
        t = clock()
        np.add(base, np.float32(it % 7), out=h_in)  # the step's new frame: every word written
        t = timed("write", t)
        if copies:
            cuda.memcpy_htod(d_in, h_in)
            t = timed("h2d", t)
        KERNEL(d_in, d_out, np.uint64(n), np.int32(a.work), block=(256, 1, 1), grid=(blocks, 1))
        t = timed("kernel", t)
        if copies:
            cuda.memcpy_dtoh(h_out, d_out)
            t = timed("d2h", t)
        else:
            cuda.Context.synchronize()
        total += float(h_out.sum(dtype=np.float64))
        timed("sum", t)
    out = {"app": "pycuda_loop", "mem": a.mem, "loop_s": time.perf_counter() - t0, "checksum": total}
    if a.parts:  # the first step's apart: it faults pages in
        out["parts_s"] = {k: statistics.median(v[1:]) for k, v in parts.items() if len(v) > 1}
        out["first_s"] = {k: v[0] for k, v in parts.items() if v}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
