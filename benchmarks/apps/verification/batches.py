"""A pycuda program that reduces a dataset in batches, written as a numpy user usually does: a 1 GiB float32
dataset built with numpy before the loop, then 32 batches of 32 MiB, each copied in from its slice of the array
(``memcpy_htod``), summed by a SourceModule kernel in blocks of 32 floats, and its 1 MiB of block sums copied back
into its slice of a results array (``memcpy_dtoh``); the host reduces the results after the loop. Fixed before its
first measurement, to check advice on a Python program that sends data written before its loop, once.

    python3 batches.py [--mem MODE] [--mib 1024] [--batch-mib 32]

Modes: pageable (numpy arrays, as written), pinned (the dataset and results from ``pagelocked_empty``),
registered (the numpy arrays page-locked in place with cuda-bindings' ``cuMemHostRegister``), write-combined (the
dataset from ``pagelocked_empty`` WRITECOMBINED, the results pinned), zero-copy (both from ``pagelocked_empty``
DEVICEMAP: the kernel reads each batch and writes its sums in host memory), managed (``managed_empty``: the kernel
faults each batch in). Added after the first measurement, the modes above unchanged: mapped (the numpy arrays
page-locked in place mapped, ``cuMemHostRegister`` with DEVICEMAP: the kernel reads them in host memory),
managed-prefetch (``managed_empty``, each batch prefetched to the GPU before its kernel and the results back to the
host after the loop, cuda-bindings' ``cuMemPrefetchAsync``), staged (the numpy arrays, each batch copied through two
4 MiB ``pagelocked_empty`` buffers that the main thread fills in turn while the other's ``memcpy_htod_async`` runs,
an event a buffer; its sums back through one of them). Prints one JSON line.
"""

import argparse
import json
import sys

import numpy as np
import pycuda.autoinit  # noqa: F401 (creates the context)
import pycuda.driver as cuda
from pycuda.compiler import SourceModule

GROUP = 32  # floats a block sum covers
KERNEL = SourceModule("""
__global__ void block_sums(const float *x, float *sums, unsigned long long groups) {
    for (unsigned long long g = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; g < groups;
         g += (unsigned long long)gridDim.x * blockDim.x) {
        const float4 *v = (const float4 *)(x + g * 32);
        float s = 0.f;
        for (int k = 0; k < 8; ++k) { float4 q = v[k]; s += q.x + q.y + q.z + q.w; }
        sums[g] = s;
    }
}
""").get_function("block_sums")
MODES = ("pageable", "pinned", "registered", "write-combined", "zero-copy", "managed", "mapped", "managed-prefetch",
         "staged")
SLOT = 4 * 2**20 // 4  # floats in a staging buffer


def page_aligned(n: int) -> np.ndarray:
    """n float32 of pageable memory starting on a page (as a malloc'd buffer this large does)."""
    raw = np.empty(n * 4 + 4096, np.uint8)
    start = -raw.ctypes.data % 4096
    return raw[start:start + n * 4].view(np.float32)


def host_arrays(mem: str, n: int, m: int):
    """The dataset (n floats) and the results (m floats) in the mode's host memory."""
    if mem in ("pageable", "staged"):
        return np.empty(n, np.float32), np.empty(m, np.float32)
    if mem in ("registered", "mapped"):
        from cuda.bindings import driver as cu

        data, sums = page_aligned(n), page_aligned(m)
        flags = cu.CU_MEMHOSTREGISTER_DEVICEMAP if mem == "mapped" else 0
        for h in (data, sums):
            (err,) = cu.cuMemHostRegister(h.ctypes.data, h.nbytes, flags)
            if err != cu.CUresult.CUDA_SUCCESS:
                sys.exit(f"cuMemHostRegister: {err}")
        return data, sums
    if mem in ("pinned", "write-combined"):
        flags = cuda.host_alloc_flags.WRITECOMBINED if mem == "write-combined" else 0
        return cuda.pagelocked_empty(n, np.float32, mem_flags=flags), cuda.pagelocked_empty(m, np.float32)
    if mem == "zero-copy":
        flags = cuda.host_alloc_flags.DEVICEMAP
        return (cuda.pagelocked_empty(n, np.float32, mem_flags=flags),
                cuda.pagelocked_empty(m, np.float32, mem_flags=flags))
    glob = cuda.mem_attach_flags.GLOBAL
    return cuda.managed_empty(n, np.float32, mem_flags=glob), cuda.managed_empty(m, np.float32, mem_flags=glob)


def check(cu, result):
    """A cuda-bindings call's values, or exit naming its error."""
    err, *values = result if isinstance(result, tuple) else (result,)
    if err != cu.CUresult.CUDA_SUCCESS:
        sys.exit(f"CUDA driver error: {err}")
    return values[0] if values else None


def device_pointer(cu, h: np.ndarray) -> int:
    """The device pointer of a registered, mapped array."""
    return check(cu, cu.cuMemHostGetDevicePointer(h.ctypes.data, 0))


def location(cu, where: str):
    """A CUmemLocation: the GPU pycuda.autoinit took (device 0, CUDA_DEVICE unset), or the host."""
    loc = cu.CUmemLocation()
    kind = "DEVICE" if where == "device" else "HOST"
    loc.type, loc.id = getattr(cu.CUmemLocationType, f"CU_MEM_LOCATION_TYPE_{kind}"), 0
    return loc


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mem", default="pageable", choices=MODES)
    p.add_argument("--mib", type=int, default=1024)
    p.add_argument("--batch-mib", type=int, default=32)
    a = p.parse_args()
    if a.mib <= 0 or a.batch_mib <= 0 or a.mib % a.batch_mib:
        p.error(f"--mib must be a positive multiple of --batch-mib, got {a.mib} and {a.batch_mib}")
    free, _ = cuda.mem_get_info()
    if a.mem.startswith("managed") and a.mib * 2**20 * (1 + 1 / GROUP) > free / 2:  # never oversubscribed here
        p.error(f"--mib {a.mib} is more than half the GPU's free memory ({free >> 20} MiB)")
    n, per = a.mib * 2**18, a.batch_mib * 2**18  # floats in all and in a batch
    m, per_m = n // GROUP, per // GROUP
    data, sums = host_arrays(a.mem, n, m)
    # the dataset, made by the host before the loop: every word written once
    data.reshape(-1, 4096)[:] = np.arange(4096, dtype=np.float32) * np.float32(1 / 4096)
    copies = a.mem in ("pageable", "pinned", "registered", "write-combined", "staged")
    if copies:
        d_x, d_s = cuda.mem_alloc(per * 4), cuda.mem_alloc(per_m * 4)
    elif a.mem == "zero-copy":  # mapped pinned memory's device pointers
        base_x, base_s = int(data.base.get_device_pointer()), int(sums.base.get_device_pointer())
    elif a.mem == "mapped":  # registered memory's device pointers
        from cuda.bindings import driver as cu

        base_x, base_s = (int(device_pointer(cu, h)) for h in (data, sums))
    else:  # managed memory's pointers are the same on the host and the GPU
        base_x, base_s = data.ctypes.data, sums.ctypes.data
    if a.mem == "managed-prefetch":
        from cuda.bindings import driver as cu

        gpu, cpu = location(cu, "device"), location(cu, "host")
    if a.mem == "staged":
        stream = cuda.Stream()
        slots = [cuda.pagelocked_empty(SLOT, np.float32) for _ in range(2)]
        done = [cuda.Event() for _ in range(2)]
        k = 0
    blocks = min((per_m + 255) // 256, 132 * 16)
    for b in range(n // per):
        x, s = data[b * per:(b + 1) * per], sums[b * per_m:(b + 1) * per_m]
        if a.mem == "staged":
            for off in range(0, per, SLOT):  # a slot is refilled once its last copy has left it
                slot, part = slots[k % 2], x[off:off + SLOT]
                if k >= 2:
                    done[k % 2].synchronize()
                slot[:len(part)] = part
                cuda.memcpy_htod_async(int(d_x) + off * 4, slot[:len(part)], stream)
                done[k % 2].record(stream)
                k += 1
            KERNEL(d_x, d_s, np.uint64(per_m), block=(256, 1, 1), grid=(blocks, 1), stream=stream)
            back = slots[k % 2]
            if k >= 2:
                done[k % 2].synchronize()
            cuda.memcpy_dtoh_async(back[:per_m], d_s, stream)
            stream.synchronize()
            s[:] = back[:per_m]
        elif copies:
            cuda.memcpy_htod(d_x, x)
            KERNEL(d_x, d_s, np.uint64(per_m), block=(256, 1, 1), grid=(blocks, 1))
            cuda.memcpy_dtoh(s, d_s)
        else:  # the kernel reads the batch and writes its sums where they are (host or managed memory)
            if a.mem == "managed-prefetch":
                check(cu, cu.cuMemPrefetchAsync(base_x + b * per * 4, per * 4, gpu, 0, 0))
            KERNEL(np.intp(base_x + b * per * 4), np.intp(base_s + b * per_m * 4), np.uint64(per_m),
                   block=(256, 1, 1), grid=(blocks, 1))
    if a.mem == "managed-prefetch":  # the results back before the host reads them
        check(cu, cu.cuMemPrefetchAsync(base_s, m * 4, cpu, 0, 0))
    cuda.Context.synchronize()
    print(json.dumps({"app": "batches", "mem": a.mem, "checksum": float(sums.sum(dtype=np.float64))}))


if __name__ == "__main__":
    main()
