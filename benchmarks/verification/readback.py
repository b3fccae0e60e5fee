"""A result read back every step, as the tutorials write it: the GPU computes a ``--mib`` MiB float32 result
from GPU-resident data (``--work`` 2048 x 2048 matrix products before it), ``.cpu()`` brings it back, the host
reads a sample of it.

    python3 readback.py [--mode MODE] [--steps 30] [--mib 64] [--work 0]

Modes (the same results, the same checksum):
  as_written         ``y.cpu()`` each step (a fresh pageable tensor every time)
  pageable_prealloc  ``out.copy_(y)`` into one preallocated pageable tensor
  pinned_prealloc    ``out.copy_(y, non_blocking=True)`` into one preallocated pinned tensor, then
                     ``torch.cuda.current_stream().synchronize()`` before the host reads it
"""

import torch

from harness import parse, report

MODES = ("as_written", "pageable_prealloc", "pinned_prealloc")
SIDE = 2048


def main():
    args = parse(MODES, __doc__, steps=30, mib=64, work=0)
    n = args.mib * 2**20 // 4
    g = torch.Generator(device="cuda").manual_seed(0)
    src = torch.randn(n, device="cuda", generator=g)
    a0 = torch.randn(SIDE, SIDE, device="cuda", generator=g) / SIDE**0.5
    m = torch.randn(SIDE, SIDE, device="cuda", generator=g) / SIDE**0.5
    out = None
    if args.mode != "as_written":
        out = torch.empty(n, pin_memory=args.mode == "pinned_prealloc")

    def loop():
        total = 0.0
        for step in range(args.steps):
            a = a0
            for _ in range(args.work):
                a = torch.tanh(a @ m)
            y = torch.sin(src * (1 + step * 1e-3)) + a[0, 0]
            if args.mode == "as_written":
                host = y.cpu()
            elif args.mode == "pageable_prealloc":
                host = out.copy_(y)
            else:
                host = out.copy_(y, non_blocking=True)
                torch.cuda.current_stream().synchronize()  # the host reads out next
            total += host[::4096].double().sum().item()
        return total

    report(args, loop, "readback")


if __name__ == "__main__":
    main()
