"""A data-parallel training loop for ``torchrun``, as the DDP tutorial writes it: each rank trains a small MLP
wrapped in ``DistributedDataParallel`` (gloo backend, so that two ranks may share one GPU) on its own 512 MiB
shard of a CPU dataset, 8 MiB batches, 3 epochs, each batch copied to the GPU from pageable memory.

    torchrun --nproc-per-node 2 ddp_train.py [--mode MODE] [--mib 512] [--batch 128] [--epochs 3]

Each rank uses GPU ``LOCAL_RANK % torch.cuda.device_count()``: on a machine of one GPU both ranks share it.
Modes (the same updates, the same checksum):
  as_written   each batch ``x[i:i + b].to(device)`` from the pageable shard
  pinned_once  the shard pinned once (``.pin_memory()``) at the start of the loop, each batch
               ``.to(device, non_blocking=True)``
  on_gpu       the shard moved to the GPU once at the start of the loop (``x.to(device)``), sliced there
Each rank prints its JSON line (the loop's time on that rank); the checksum is the model's, equal on all ranks.
"""

import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

from harness import parse, report

MODES = ("as_written", "pinned_once", "on_gpu")
FEATURES = 16384  # floats a sample: 64 KiB


def main():
    args = parse(MODES, __doc__, mib=512, batch=128, epochs=3)
    dist.init_process_group("gloo")
    rank, local = dist.get_rank(), int(os.environ.get("LOCAL_RANK", "0"))
    cuda = torch.cuda.is_available()
    device = torch.device("cuda", local % torch.cuda.device_count()) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    n = args.mib * 2**20 // (FEATURES * 4)
    g = torch.Generator().manual_seed(rank)
    x = torch.randn(256, FEATURES, generator=g).repeat(n // 256, 1)
    y = torch.randn(n, 1, generator=g)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(FEATURES, 8), nn.ReLU(), nn.Linear(8, 1)).to(device),
                device_ids=[device.index] if cuda else None)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)

    def loop():
        xs, ys = (x.pin_memory(), y.pin_memory()) if args.mode == "pinned_once" else \
            (x.to(device), y.to(device)) if args.mode == "on_gpu" else (x, y)
        pinned = args.mode == "pinned_once"
        for _ in range(args.epochs):
            for i in range(0, n, args.batch):
                xb = xs[i:i + args.batch].to(device, non_blocking=pinned)
                yb = ys[i:i + args.batch].to(device, non_blocking=pinned)
                opt.zero_grad()
                nn.functional.mse_loss(model(xb), yb).backward()
                opt.step()
        return sum(p.double().sum().item() for p in model.parameters())

    report(args, loop, "ddp_train")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
