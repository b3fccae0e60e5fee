"""A program already at its best: training on a dataset kept on the GPU (512 MiB of float32), a two-layer
4096-wide MLP, compute-bound; the only transfer is the loss read each step with ``loss.item()``.

    python3 resident.py [--mode MODE] [--steps 100] [--batch 2048]

Modes (the same updates, the same checksum):
  as_written       ``loss.item()`` each step (a 4-byte device-to-host copy)
  pinned_readback  the loss copied each step into a preallocated pinned scalar with ``non_blocking=True`` and
                   read after ``torch.cuda.current_stream().synchronize()``
"""

import torch
import torch.nn as nn

from harness import parse, report

MODES = ("as_written", "pinned_readback")
DIM = 4096


def main():
    args = parse(MODES, __doc__, steps=100, batch=2048)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    g = torch.Generator(device=device).manual_seed(0)
    data = torch.randn(32768, DIM, device=device, generator=g)
    target = torch.randn(32768, 1, device=device, generator=g)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(DIM, DIM), nn.ReLU(), nn.Linear(DIM, 1)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    pinned = torch.empty((), pin_memory=True)

    def loop():
        total = 0.0
        for step in range(args.steps):
            i = step * args.batch % len(data)
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(data[i:i + args.batch]), target[i:i + args.batch])
            loss.backward()
            opt.step()
            if args.mode == "as_written":
                total += loss.item()
            else:
                pinned.copy_(loss.detach(), non_blocking=True)
                torch.cuda.current_stream().synchronize()
                total += pinned.item()
        return total

    report(args, loop, "resident")


if __name__ == "__main__":
    main()
