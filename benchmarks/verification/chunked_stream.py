"""Streaming a large host array through the GPU in chunks, as an out-of-core numpy user writes it: a ``--mib`` MiB
float32 numpy array (1 GiB by default, ``--cols`` 4096 wide, standard normal from a seeded generator, made before
the timed loop) is processed ``--chunk-mib`` MiB at a time (32 MiB, 2048 rows): each chunk
``torch.from_numpy(chunk).to(device)``, a few elementwise operations (``tanh(a * x) + b * x``, a and b changing
with the pass) and a small matrix product with a fixed ``--cols`` x ``--features`` projection (16 features a row),
the chunk's 2048 x 16 result ``.cpu()`` appended to a list; ``--passes`` passes (3) over the array. The checksum is
the float64 sum of every result, taken once at the end: the data and the projection have mean zero, so one chunk's
share of the sum varies by far more than the tolerance and a stale or overwritten chunk shows.

    python3 chunked_stream.py [--mode MODE] [--mib 1024] [--chunk-mib 32] [--cols 4096] [--features 16] [--passes 3]

Modes (the same chunks in the same order, the same results, the same checksum):
  as_written       ``torch.from_numpy(chunk).to(device)``: each chunk uploaded from pageable memory
  pinned_once      the whole array copied once into page-locked memory (``torch.from_numpy(arr).pin_memory()``) at
                   the start of the loop; each chunk a view of it, ``.to(device, non_blocking=True)``
  double_buffered  two preallocated pinned staging buffers and two GPU buffers: the host copies chunk i+1 into one
                   staging buffer while chunk i uploads from the other on a side ``torch.cuda.Stream``; events say
                   when a chunk has arrived (the compute waits), when a staging buffer may be written again (the
                   host waits) and when a GPU buffer has been read (the next upload into it waits)
  on_gpu           the whole array moved to the GPU once at the start of the loop (where it fits: at most half the
                   GPU's memory); each chunk a view of it
"""

import sys

import numpy as np
import torch

from harness import parse, report

MODES = ("as_written", "pinned_once", "double_buffered", "on_gpu")


def scales(p: int) -> tuple[float, float]:
    """The pass's elementwise constants: each pass computes a different result from the same data."""
    return 0.5 + 0.25 * p, 0.1 * (p + 1)


def compute(x: torch.Tensor, w: torch.Tensor, p: int) -> torch.Tensor:
    """A chunk's work on the GPU: a few elementwise operations, then a small projection (rows x features)."""
    a, b = scales(p)
    return (torch.tanh(x * a) + x * b) @ w


def main():
    args = parse(MODES, __doc__, mib=1024, chunk_mib=32, cols=4096, features=16, passes=3)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    rows = (args.mib << 20) // (4 * args.cols)
    step = (args.chunk_mib << 20) // (4 * args.cols)  # rows a chunk
    arr = np.random.default_rng(0).standard_normal((rows, args.cols), dtype=np.float32)
    spans = [(r, min(r + step, rows)) for r in range(0, rows, step)]
    if args.mode == "on_gpu" and torch.cuda.is_available():
        total_mem = torch.cuda.get_device_properties(0).total_memory
        if arr.nbytes > total_mem // 2:
            sys.exit(f"on_gpu: an array of {arr.nbytes >> 20} MiB does not fit (at most half of {total_mem >> 20} MiB)")
    w = (torch.randn(args.cols, args.features, generator=torch.Generator().manual_seed(1)) / args.cols**0.5).to(device)

    def streamed(results):
        """double_buffered: every pass's chunks through two pinned staging buffers, uploaded on a side stream."""
        staging = [torch.empty((step, args.cols), pin_memory=True) for _ in range(2)]
        on_gpu = [torch.empty((step, args.cols), device=device) for _ in range(2)]
        side, main_stream = torch.cuda.Stream(), torch.cuda.current_stream()
        arrived = [torch.cuda.Event() for _ in range(2)]  # an upload has finished: chunk on the GPU, staging free
        read = [torch.cuda.Event() for _ in range(2)]  # the compute that last read a GPU buffer has been queued
        work = [(p, r0, r1) for p in range(args.passes) for r0, r1 in spans]

        def stage(i):
            _, r0, r1 = work[i]
            k, n = i % 2, r1 - r0
            arrived[k].synchronize()  # the upload that last read this staging buffer is done: it may be written
            staging[k][:n].copy_(torch.from_numpy(arr[r0:r1]))
            with torch.cuda.stream(side):
                side.wait_event(read[k])  # the compute that last read this GPU buffer is done
                on_gpu[k][:n].copy_(staging[k][:n], non_blocking=True)
                arrived[k].record(side)

        stage(0)
        for i, (p, r0, r1) in enumerate(work):
            if i + 1 < len(work):
                stage(i + 1)  # the host fills the other buffer while chunk i uploads
            k = i % 2
            main_stream.wait_event(arrived[k])
            out = compute(on_gpu[k][:r1 - r0], w, p)
            read[k].record(main_stream)
            results.append(out.cpu())

    def loop():
        results = []
        if args.mode == "double_buffered":
            streamed(results)
            return torch.cat(results).double().sum().item()
        host = None
        if args.mode == "pinned_once":  # page-locked once: every pass's uploads come from it
            host = torch.from_numpy(arr).pin_memory()
        elif args.mode == "on_gpu":  # the whole array, once
            whole = torch.from_numpy(arr).to(device)
        for p in range(args.passes):
            for r0, r1 in spans:
                if args.mode == "as_written":
                    x = torch.from_numpy(arr[r0:r1]).to(device)
                elif args.mode == "pinned_once":
                    x = host[r0:r1].to(device, non_blocking=True)
                else:
                    x = whole[r0:r1]
                results.append(compute(x, w, p).cpu())
        return torch.cat(results).double().sum().item()  # float64, once, over every chunk's result

    report(args, loop, "chunked_stream")


if __name__ == "__main__":
    main()
