"""A pycuda program that processes frames, as pycuda's tutorials write it: each of 40 frames (16 MiB of float32,
made by numpy on the host) is sent with ``pycuda.driver.memcpy_htod`` into one device buffer, a SourceModule kernel
(compiled once, before the loop) maps it into a second device buffer, and ``memcpy_dtoh`` copies the result back
into a fresh numpy array, which the host reduces (its float64 sum, the checksum) and samples. After the loop every
frame's sample of the kernel's output is checked against numpy's own computation of it; a mismatch exits 1.

    python3 pycuda_frames.py [--mode MODE] [--mib 16] [--frames 40]

Modes (the same frames, the same results, the same checksum):
  as_written    each frame a fresh numpy array, ``memcpy_htod(d_in, frame)``, the kernel, a fresh
                ``np.empty`` result and ``memcpy_dtoh(result, d_out)`` (pageable memory both ways)
  pinned        one input and one result buffer from ``pycuda.driver.pagelocked_empty``, allocated once and reused:
                each frame made in the input buffer, the same synchronous ``memcpy_htod`` / ``memcpy_dtoh``
  pinned_async  two of everything (pinned host buffers, device buffers, ``pycuda.driver.Stream``s), double-buffered:
                frame i made in buffer i % 2 and sent with ``memcpy_htod_async`` on stream i % 2, its kernel and
                ``memcpy_dtoh_async`` on the same stream; the host waits on that stream only before it reuses the
                buffers (reading frame i - 2's result while the GPU works on frame i - 1)
  mapped        one input and one result numpy array, allocated once and page-locked in place, mapped
                (cuda-bindings' ``cuMemHostRegister`` with ``CU_MEMHOSTREGISTER_DEVICEMAP``): the kernel reads each
                frame and writes its result across the link through their device pointers
                (``cuMemHostGetDevicePointer``), no copies; the host reads the result once the context is synchronised
Prints one JSON line: program, mode, loop_s, checksum.
"""

import argparse
import json
import sys
import time

import numpy as np
import pycuda.autoinit  # noqa: F401 (creates the context)
import pycuda.driver as cuda
from pycuda.compiler import SourceModule

MODES = ("as_written", "pinned", "pinned_async", "mapped")
SAMPLE = 4096  # every SAMPLE-th value of each result is kept and checked against numpy
KERNEL = SourceModule("""
__global__ void tone(const float *x, float *y, unsigned long long n) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        float v = x[i];
        y[i] = v * (1.5f - 0.5f * v * v) + 0.25f;
    }
}
""").get_function("tone")
BLOCK, GRID = 256, 132 * 8


def tone(x: np.ndarray) -> np.ndarray:
    """The kernel's map, in numpy (float32)."""
    return x * (np.float32(1.5) - np.float32(0.5) * x * x) + np.float32(0.25)


def make_frame(base: np.ndarray, i: int, out: np.ndarray) -> np.ndarray:
    """Frame i, written into ``out``."""
    return np.add(base, np.float32(i * 1e-3), out=out)


def launch(d_in, d_out, n: int, stream=None) -> None:
    KERNEL(d_in, d_out, np.uint64(n), block=(BLOCK, 1, 1), grid=(GRID, 1), stream=stream)


def as_written(base, frames, read):
    n = base.size
    d_in, d_out = cuda.mem_alloc(n * 4), cuda.mem_alloc(n * 4)
    for i in range(frames):
        frame = make_frame(base, i, np.empty(n, np.float32))
        cuda.memcpy_htod(d_in, frame)
        launch(d_in, d_out, n)
        result = np.empty(n, np.float32)
        cuda.memcpy_dtoh(result, d_out)
        read(i, result)


def pinned(base, frames, read):
    n = base.size
    h_in, h_out = cuda.pagelocked_empty(n, np.float32), cuda.pagelocked_empty(n, np.float32)
    d_in, d_out = cuda.mem_alloc(n * 4), cuda.mem_alloc(n * 4)
    for i in range(frames):
        make_frame(base, i, h_in)
        cuda.memcpy_htod(d_in, h_in)
        launch(d_in, d_out, n)
        cuda.memcpy_dtoh(h_out, d_out)
        read(i, h_out)


def pinned_async(base, frames, read):
    n = base.size
    h_in = [cuda.pagelocked_empty(n, np.float32) for _ in range(2)]
    h_out = [cuda.pagelocked_empty(n, np.float32) for _ in range(2)]
    d_in, d_out = [cuda.mem_alloc(n * 4) for _ in range(2)], [cuda.mem_alloc(n * 4) for _ in range(2)]
    streams = [cuda.Stream() for _ in range(2)]
    for i in range(frames):
        b, s = i % 2, streams[i % 2]
        s.synchronize()  # frame i - 2 is done with this buffer pair
        if i >= 2:
            read(i - 2, h_out[b])
        make_frame(base, i, h_in[b])
        cuda.memcpy_htod_async(d_in[b], h_in[b], s)
        launch(d_in[b], d_out[b], n, s)
        cuda.memcpy_dtoh_async(h_out[b], d_out[b], s)
    for i in range(max(0, frames - 2), frames):
        streams[i % 2].synchronize()
        read(i, h_out[i % 2])


def page_aligned(n: int) -> np.ndarray:
    """n float32 of pageable memory starting on a page (as a malloc'd buffer this large does)."""
    raw = np.empty(n * 4 + 4096, np.uint8)
    start = -raw.ctypes.data % 4096
    return raw[start:start + n * 4].view(np.float32)


def _ok(result, call: str):
    """A cuda-bindings ``(err, *values)`` result's value, or exit naming the call that failed."""
    err, *values = result if isinstance(result, tuple) else (result,)
    if int(err) != 0:
        sys.exit(f"pycuda_frames: {call} failed: {getattr(err, 'name', err)}")
    return values[0] if values else None


def mapped(base, frames, read):
    from cuda.bindings import driver as cu

    n = base.size
    h_in, h_out = page_aligned(n), page_aligned(n)
    ptrs = []
    for h in (h_in, h_out):
        _ok(cu.cuMemHostRegister(h.ctypes.data, h.nbytes, cu.CU_MEMHOSTREGISTER_DEVICEMAP), "cuMemHostRegister")
        ptrs.append(np.intp(int(_ok(cu.cuMemHostGetDevicePointer(h.ctypes.data, 0), "cuMemHostGetDevicePointer"))))
    try:
        for i in range(frames):
            make_frame(base, i, h_in)
            launch(ptrs[0], ptrs[1], n)
            cuda.Context.synchronize()  # the kernel has written the result in host memory
            read(i, h_out)
    finally:
        for h in (h_in, h_out):
            _ok(cu.cuMemHostUnregister(h.ctypes.data), "cuMemHostUnregister")


def check(base: np.ndarray, samples: dict) -> None:
    """Every frame's sampled result against numpy's computation of the same values; exit 1 naming a mismatch."""
    for i, got in sorted(samples.items()):
        want = tone(make_frame(base[::SAMPLE], i, np.empty_like(base[::SAMPLE])))
        if not np.allclose(got, want, rtol=1e-5, atol=1e-6):
            sys.exit(f"pycuda_frames: frame {i}: the kernel's output differs from numpy's "
                     f"(largest difference {np.abs(got - want).max():.3g})")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", choices=MODES, default=MODES[0])
    p.add_argument("--mib", type=int, default=16)
    p.add_argument("--frames", type=int, default=40)
    args = p.parse_args()
    n = args.mib * 2**20 // 4
    base = (((np.arange(n, dtype=np.int64) * 7) & 1023) / 1024).astype(np.float32)
    samples, sums = {}, {}

    def read(i, result):  # what the host does with a result: its sum and a sample
        sums[i] = float(result.sum(dtype=np.float64))
        samples[i] = result[::SAMPLE].copy()

    run = {"as_written": as_written, "pinned": pinned, "pinned_async": pinned_async, "mapped": mapped}[args.mode]
    cuda.Context.synchronize()
    start = time.perf_counter()
    run(base, args.frames, read)
    cuda.Context.synchronize()
    loop_s = time.perf_counter() - start
    check(base, samples)
    checksum = sum(sums[i] for i in range(args.frames))
    print(json.dumps({"program": "pycuda_frames", "mode": args.mode, "loop_s": round(loop_s, 6),
                      "checksum": float(f"{checksum:.6g}")}))


if __name__ == "__main__":
    main()
