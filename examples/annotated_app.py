"""A small application annotated with umprof's NVTX conventions.

It does what many CUDA programs do — fill a host buffer, copy it to the GPU, run a kernel a
few times, copy the result back, read it on the host — with each step inside an
``umprof.nvtx.phase``. Trace it with Nsight Systems and umprof reads the phases back:

    nsys profile -t cuda,nvtx -o app python examples/annotated_app.py
    umprof import-nsys app.nsys-rep

Needs a GPU and pycuda.
"""

import argparse

import numpy as np
import pycuda.driver as cuda
from pycuda.compiler import SourceModule

from umprof import nvtx

KERNEL = r"""
extern "C" __global__ void saxpy(float* y, const float* x, float a, unsigned long long n) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        y[i] = a * x[i] + y[i];
}
"""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mib", type=int, default=64, help="buffer size in MiB")
    ap.add_argument("--steps", type=int, default=3, help="kernel launches per transfer")
    ap.add_argument("--iterations", type=int, default=3)
    args = ap.parse_args(argv)

    cuda.init()
    ctx = cuda.Device(0).retain_primary_context()
    ctx.push()
    try:
        saxpy = SourceModule(KERNEL, no_extern_c=True).get_function("saxpy")
        n = args.mib * 2**20 // 4
        with nvtx.phase("alloc"):
            x_host = cuda.pagelocked_empty(n, np.float32)
            y_host = cuda.pagelocked_empty(n, np.float32)
            x_dev, y_dev = cuda.mem_alloc(x_host.nbytes), cuda.mem_alloc(y_host.nbytes)
        for it in range(args.iterations):
            with nvtx.range(f"iteration {it}", category="case"):
                with nvtx.phase("host_init"):
                    x_host[:] = 1.0
                    y_host[:] = float(it)
                with nvtx.phase("h2d"):
                    cuda.memcpy_htod(x_dev, x_host)
                    cuda.memcpy_htod(y_dev, y_host)
                with nvtx.phase("kernel", "saxpy"):
                    for _ in range(args.steps):
                        saxpy(y_dev, x_dev, np.float32(2.0), np.uint64(n), block=(256, 1, 1), grid=(1024, 1))
                    cuda.Context.synchronize()
                with nvtx.phase("d2h"):
                    cuda.memcpy_dtoh(y_host, y_dev)
                with nvtx.phase("host_read"):
                    expected = it + 2.0 * args.steps
                    if not np.allclose(y_host[:: max(1, n // 4096)], expected):
                        raise SystemExit(f"wrong result in iteration {it}: {y_host[0]} != {expected}")
        with nvtx.phase("free"):
            x_dev.free()
            y_dev.free()
        print(f"ok: {args.iterations} iterations of {args.mib} MiB")
    finally:
        ctx.pop()


if __name__ == "__main__":
    main()
