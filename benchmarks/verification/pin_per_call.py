"""Pinning per call, as a user who read "pinned memory is faster" writes it: a list of host batches (64 of
8 MiB, 2048 x 1024 float32), each step ``batch.pin_memory().to("cuda", non_blocking=True)`` and a small model
over it; two passes.

    python3 pin_per_call.py [--mode MODE] [--batches 64] [--rows 2048] [--passes 2]

Modes (the same outputs, the same checksum):
  as_written   each step ``batch.pin_memory().to("cuda", non_blocking=True)`` (a host copy into pinned memory
               every step, then the transfer)
  pageable     each step ``batch.to("cuda")`` from pageable memory
  pinned_once  the batches pinned once before the first pass (``[b.pin_memory() for b in batches]``), each step
               ``batch.to("cuda", non_blocking=True)``
  on_gpu       the batches moved to the GPU once before the first pass (``[b.to("cuda") for b in batches]``,
               512 MiB), each step's batch already there
"""

import torch
import torch.nn as nn

from harness import parse, report

MODES = ("as_written", "pageable", "pinned_once", "on_gpu")
COLS = 1024


def main():
    args = parse(MODES, __doc__, batches=64, rows=2048, passes=2)
    g = torch.Generator().manual_seed(0)
    block = torch.randn(args.rows, COLS, generator=g)
    batches = [block + k for k in range(args.batches)]
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(COLS, 256), nn.ReLU(), nn.Linear(256, 1)).cuda().eval()

    def loop():
        data = ([b.pin_memory() for b in batches] if args.mode == "pinned_once"
                else [b.to("cuda") for b in batches] if args.mode == "on_gpu" else batches)
        total = torch.zeros((), device="cuda", dtype=torch.float64)
        with torch.no_grad():
            for _ in range(args.passes):
                for batch in data:
                    if args.mode == "as_written":
                        x = batch.pin_memory().to("cuda", non_blocking=True)
                    elif args.mode in ("pageable", "on_gpu"):
                        x = batch.to("cuda")  # on_gpu: already there, a no-op
                    else:
                        x = batch.to("cuda", non_blocking=True)
                    total += model(x).double().sum()
        return total.item()

    report(args, loop, "pin_per_call")


if __name__ == "__main__":
    main()
