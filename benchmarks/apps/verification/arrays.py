"""A pycuda step loop written with gpuarray, as its tutorials show: each of 50 steps numpy computes a 32 MiB frame
(8 Mi float32), ``gpuarray.to_gpu`` allocates a device array and copies the frame in, a SourceModule kernel maps it
into a second device array (``gpuarray.empty_like``), and ``.get()`` copies the result back into a new numpy array,
which the host reduces; the device arrays are freed as Python drops them at the end of the step. Fixed before its
first measurement, to check advice on a Python program whose copies go to and from arrays made anew every step.

    python3 arrays.py [--mem MODE] [--mib 32] [--steps 50]

Modes: pageable (as written), and the advice's changes to the host arrays, the device arrays still allocated each
step as written: pinned (the frame and the result from ``pagelocked_empty``, once; ``gpuarray.to_gpu(frame)`` and
``.get(ary=result)``), registered (numpy arrays made once and page-locked in place with cuda-bindings'
``cuMemHostRegister``), write-combined (the frame from ``pagelocked_empty`` WRITECOMBINED, the result pinned),
zero-copy (both from ``pagelocked_empty`` DEVICEMAP: the kernel reads the frame and writes the result in host memory,
no device arrays, no copies), mapped (numpy arrays page-locked in place mapped: the same), managed (both from
``managed_empty``, the kernel reading and writing them in place), managed-prefetch (the same, the frame prefetched to
the GPU before the kernel and the result back to the host after it, cuda-bindings' ``cuMemPrefetchAsync``). Prints one
JSON line.
"""

import argparse
import json
import sys

import numpy as np
import pycuda.autoinit  # noqa: F401 (creates the context)
import pycuda.driver as cuda
import pycuda.gpuarray as gpuarray
from pycuda.compiler import SourceModule

KERNEL = SourceModule("""
__global__ void shade(const float *x, float *y, unsigned long long n) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        float v = x[i];
        y[i] = v * (1.5f - 0.5f * v * v) + 0.25f;
    }
}
""").get_function("shade")
MODES = ("pageable", "pinned", "registered", "write-combined", "zero-copy", "mapped", "managed", "managed-prefetch")
COPIES = ("pageable", "pinned", "registered", "write-combined")


def page_aligned(n: int) -> np.ndarray:
    """n float32 of pageable memory starting on a page (as a malloc'd buffer this large does)."""
    raw = np.empty(n * 4 + 4096, np.uint8)
    start = -raw.ctypes.data % 4096
    return raw[start:start + n * 4].view(np.float32)


def check(cu, result):
    """A cuda-bindings call's values, or exit naming its error."""
    err, *values = result if isinstance(result, tuple) else (result,)
    if err != cu.CUresult.CUDA_SUCCESS:
        sys.exit(f"CUDA driver error: {err}")
    return values[0] if values else None


def host_arrays(mem: str, n: int):
    """The frame and the result (n floats each) in the mode's host memory, made once; (None, None) as written."""
    if mem == "pageable":
        return None, None
    if mem in ("registered", "mapped"):
        from cuda.bindings import driver as cu

        pair = page_aligned(n), page_aligned(n)
        flags = cu.CU_MEMHOSTREGISTER_DEVICEMAP if mem == "mapped" else 0
        for h in pair:
            check(cu, cu.cuMemHostRegister(h.ctypes.data, h.nbytes, flags))
        return pair
    if mem in ("pinned", "write-combined"):
        flags = cuda.host_alloc_flags.WRITECOMBINED if mem == "write-combined" else 0
        return cuda.pagelocked_empty(n, np.float32, mem_flags=flags), cuda.pagelocked_empty(n, np.float32)
    if mem == "zero-copy":
        flags = cuda.host_alloc_flags.DEVICEMAP
        return cuda.pagelocked_empty(n, np.float32, mem_flags=flags), cuda.pagelocked_empty(n, np.float32,
                                                                                            mem_flags=flags)
    glob = cuda.mem_attach_flags.GLOBAL
    return cuda.managed_empty(n, np.float32, mem_flags=glob), cuda.managed_empty(n, np.float32, mem_flags=glob)


def location(cu, where: str):
    """A CUmemLocation: the GPU pycuda.autoinit took (device 0, CUDA_DEVICE unset), or the host."""
    loc = cu.CUmemLocation()
    kind = "DEVICE" if where == "device" else "HOST"
    loc.type, loc.id = getattr(cu.CUmemLocationType, f"CU_MEM_LOCATION_TYPE_{kind}"), 0
    return loc


def compute_frame(out: np.ndarray, ramp: np.ndarray, step: int) -> None:
    """The step's frame, every value written by the host (numpy, in place)."""
    np.multiply(ramp, np.float32(1 + step / 64), out=out.reshape(-1, ramp.size))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mem", default="pageable", choices=MODES)
    p.add_argument("--mib", type=int, default=32)
    p.add_argument("--steps", type=int, default=50)
    a = p.parse_args()
    if a.mib <= 0 or a.steps <= 0:
        p.error(f"--mib and --steps must be positive, got {a.mib} and {a.steps}")
    free, _ = cuda.mem_get_info()
    if a.mem.startswith("managed") and 2 * a.mib * 2**20 > free / 2:  # never oversubscribed here
        p.error(f"--mib {a.mib}: two arrays are more than half the GPU's free memory ({free >> 20} MiB)")
    n = a.mib * 2**18
    ramp = (np.arange(4096, dtype=np.float32) - 2048) * np.float32(1 / 4096)
    frame, result = host_arrays(a.mem, n)
    if a.mem in ("zero-copy", "mapped", "managed", "managed-prefetch"):
        if a.mem == "zero-copy":
            px, py = int(frame.base.get_device_pointer()), int(result.base.get_device_pointer())
        elif a.mem == "mapped":
            from cuda.bindings import driver as cu

            px, py = (int(check(cu, cu.cuMemHostGetDevicePointer(h.ctypes.data, 0))) for h in (frame, result))
        else:  # managed memory's pointers are the same on the host and the GPU
            px, py = frame.ctypes.data, result.ctypes.data
        if a.mem == "managed-prefetch":
            from cuda.bindings import driver as cu

            gpu, cpu = location(cu, "device"), location(cu, "host")
    blocks = 132 * 8
    total = 0.0
    for s in range(a.steps):
        if a.mem == "pageable":  # as written: a new frame, new device arrays and a new result each step
            frame = np.empty(n, np.float32)
            compute_frame(frame, ramp, s)
            x = gpuarray.to_gpu(frame)
            y = gpuarray.empty_like(x)
            KERNEL(x.gpudata, y.gpudata, np.uint64(n), block=(256, 1, 1), grid=(blocks, 1))
            out = y.get()
        elif a.mem in COPIES:  # the host arrays made once; the device arrays still made each step
            compute_frame(frame, ramp, s)
            x = gpuarray.to_gpu(frame)
            y = gpuarray.empty_like(x)
            KERNEL(x.gpudata, y.gpudata, np.uint64(n), block=(256, 1, 1), grid=(blocks, 1))
            out = y.get(ary=result)
        else:  # the kernel reads the frame and writes the result where they are (host or managed memory)
            compute_frame(frame, ramp, s)
            if a.mem == "managed-prefetch":
                check(cu, cu.cuMemPrefetchAsync(px, n * 4, gpu, 0, 0))
            KERNEL(np.intp(px), np.intp(py), np.uint64(n), block=(256, 1, 1), grid=(blocks, 1))
            if a.mem == "managed-prefetch":
                check(cu, cu.cuMemPrefetchAsync(py, n * 4, cpu, 0, 0))
            cuda.Context.synchronize()
            out = result
        total += float(out.sum(dtype=np.float64))
        x = y = None  # the step's device arrays freed, as leaving a loop body's scope frees them
    print(json.dumps({"app": "arrays", "mem": a.mem, "checksum": total}))


if __name__ == "__main__":
    main()
