"""A CuPy program that sends a numpy dataset to the GPU in batches, as CuPy users write it: a 1 GiB float32
numpy array, 32 MiB batches, each ``cupy.asarray(batch)`` and summed on the GPU; 2 passes.

    python3 cupy_batches.py [--mode MODE] [--mib 1024] [--batch-mib 32] [--passes 2]

Modes (the same sums, the same checksum):
  as_written      ``cupy.asarray(batch)`` from the pageable numpy array
  pinned_staging  each batch copied into a pinned buffer from CuPy's pinned memory pool
                  (``cupyx.empty_pinned``, freed back to the pool each time) and sent with
                  ``x.set(buf, stream=stream)``, then the stream synchronised before the buffer is reused
  pinned_once     the dataset itself allocated with ``cupyx.empty_pinned`` (filled once, before the timed loop),
                  each batch sent with ``x.set(batch, stream=stream)`` into one of two GPU buffers
  mapped          the numpy array page-locked in place once, mapped (``cupy.cuda.runtime.hostRegister(ptr, nbytes,
                  2)``, 2: cudaHostRegisterMapped; before the timed loop, as pinned_once fills its array), and each
                  batch summed by the GPU where it lies, through a ``cupy.ndarray`` over its device pointer
                  (``pointerGetAttributes(ptr).devicePointer``): no copies
All copies and sums run on one ``cupy.cuda.Stream``, in order.
Prints one JSON line: program, mode, loop_s, checksum.
"""

import argparse
import json
import time

import cupy as cp
import cupyx
import numpy as np

MODES = ("as_written", "pinned_staging", "pinned_once", "mapped")
MAPPED = 2  # cudaHostRegisterMapped


def make_dataset(mib: int, pinned: bool) -> np.ndarray:
    n = mib * 2**20 // 4
    block = np.random.default_rng(0).standard_normal(4 * 2**20, dtype=np.float32)
    data = cupyx.empty_pinned((n,), np.float32) if pinned else np.empty(n, np.float32)
    for i in range(0, n, block.size):
        data[i:i + block.size] = block + np.float32(i // block.size)
    return data


def mapped_view(data: np.ndarray) -> cp.ndarray:
    """The page-locked, mapped numpy array as a cupy.ndarray over its device pointer (the memory stays the host's)."""
    ptr = data.ctypes.data
    dev = cp.cuda.runtime.pointerGetAttributes(ptr).devicePointer
    mem = cp.cuda.UnownedMemory(dev, data.nbytes, data)
    return cp.ndarray(data.shape, data.dtype, cp.cuda.MemoryPointer(mem, 0))


def send(mode: str, batch, buffer, stream):
    """The batch on the GPU, sent as the mode sends it (mapped: already readable there)."""
    if mode == "mapped":
        return batch
    if mode == "as_written":
        return cp.asarray(batch)
    if mode == "pinned_staging":
        buf = cupyx.empty_pinned(batch.shape, batch.dtype)
        buf[...] = batch
        buffer.set(buf, stream=stream)
        stream.synchronize()  # buf goes back to the pool when it is freed, here
        return buffer
    buffer.set(batch, stream=stream)
    return buffer


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", choices=MODES, default=MODES[0])
    p.add_argument("--mib", type=int, default=1024)
    p.add_argument("--batch-mib", type=int, default=32)
    p.add_argument("--passes", type=int, default=2)
    args = p.parse_args()
    data = make_dataset(args.mib, args.mode == "pinned_once")
    if args.mode == "mapped":
        cp.cuda.runtime.hostRegister(data.ctypes.data, data.nbytes, MAPPED)
        source = mapped_view(data)
    else:
        source = data
    per = args.batch_mib * 2**20 // 4
    stream = cp.cuda.Stream(non_blocking=True)
    gpu = [cp.empty(per, cp.float32) for _ in range(2)]
    total = cp.zeros((), cp.float64)
    cp.cuda.Device().synchronize()
    start = time.perf_counter()
    with stream:  # every copy and sum on one stream, in order
        for _ in range(args.passes):
            for k, i in enumerate(range(0, data.size, per)):
                total += send(args.mode, source[i:i + per], gpu[k % 2], stream).sum(dtype=cp.float64)
    stream.synchronize()
    checksum = float(total)
    loop_s = time.perf_counter() - start
    if args.mode == "mapped":
        cp.cuda.runtime.hostUnregister(data.ctypes.data)
    print(json.dumps({"program": "cupy_batches", "mode": args.mode, "loop_s": round(loop_s, 6),
                      "checksum": float(f"{checksum:.6g}")}))


if __name__ == "__main__":
    main()
