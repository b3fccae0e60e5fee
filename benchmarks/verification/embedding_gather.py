"""A recommender's training step whose embedding table is kept on the host, as a model too big to be "meant" for the
GPU is written: a ``--rows`` x ``--dim`` float32 table (2 GiB by default) in a pageable torch tensor; each step
gathers a batch of ``--batch`` random rows on the host (``table[idx]``, 8 MiB), uploads it with ``.to(device)``
and trains a small MLP on it (forward, backward, SGD); the label of a row is a fixed function of it, computed on
the GPU. The indices come from a seeded generator, the same rows in every mode; the checksum sums each step's loss
and the sum of its rows (a stale or overwritten batch changes the latter far beyond the tolerance).

    python3 embedding_gather.py [--mode MODE] [--steps 48] [--rows 4194304] [--dim 128] [--batch 16384]
                                [--hidden 1024]

Modes (the same rows, the same updates, the same checksum):
  as_written     ``table[idx]`` (a fresh pageable tensor each step), ``.to(device)``
  pinned_gather  the rows gathered with ``torch.index_select(table, 0, idx, out=buf)`` into one of two preallocated
                 pinned buffers, then ``gpu_buf.copy_(buf, non_blocking=True)``; an event says when a pinned buffer
                 may be written again
  table_on_gpu   the table moved to the GPU once (before the steps, where it fits: at most half the GPU's memory),
                 each step's indices sent (``idx.to(device)``) and the rows gathered there
"""

import sys

import torch
import torch.nn as nn

from harness import parse, report

MODES = ("as_written", "pinned_gather", "table_on_gpu")


def main():
    args = parse(MODES, __doc__, steps=48, rows=4194304, dim=128, batch=16384, hidden=1024)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    table = torch.empty(args.rows, args.dim).uniform_(-1.0, 1.0, generator=torch.Generator().manual_seed(0))
    plan = torch.randint(args.rows, (args.steps, args.batch), generator=torch.Generator().manual_seed(1))
    if args.mode == "table_on_gpu" and torch.cuda.is_available():
        total_mem = torch.cuda.get_device_properties(0).total_memory
        if table.nbytes > total_mem // 2:
            sys.exit(f"table_on_gpu: a table of {table.nbytes >> 20} MiB does not fit beside the model "
                     f"(at most half of {total_mem >> 20} MiB)")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(args.dim, args.hidden), nn.ReLU(), nn.Linear(args.hidden, args.hidden), nn.ReLU(),
                          nn.Linear(args.hidden, 1)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    loss_fn = nn.BCEWithLogitsLoss()
    teacher = (torch.randn(args.dim, generator=torch.Generator().manual_seed(2)) / args.dim**0.5).to(device)
    shape = (args.batch, args.dim)
    pinned = [torch.empty(shape, pin_memory=True) for _ in range(2)] if args.mode == "pinned_gather" else None
    gpu_bufs = [torch.empty(shape, device=device) for _ in range(2)] if args.mode == "pinned_gather" else None
    freed = [None, None]

    def rows_on_gpu(step, gpu_table):
        idx = plan[step]
        if args.mode == "as_written":
            return table[idx].to(device)
        if args.mode == "pinned_gather":
            k = step % 2
            if freed[k] is not None:
                freed[k].synchronize()  # its last upload has finished: the pinned buffer may be written again
            torch.index_select(table, 0, idx, out=pinned[k])
            x = gpu_bufs[k].copy_(pinned[k], non_blocking=True)
            freed[k] = torch.cuda.Event()
            freed[k].record()
            return x
        return gpu_table[idx.to(device)]

    def loop():
        gpu_table = table.to(device) if args.mode == "table_on_gpu" else None
        total = torch.zeros((), dtype=torch.float64, device=device)
        for step in range(args.steps):
            x = rows_on_gpu(step, gpu_table)
            y = (x @ teacher > 0).float()
            opt.zero_grad()
            loss = loss_fn(model(x).squeeze(1), y)
            loss.backward()
            opt.step()
            total += loss.detach().double() + x.sum(dtype=torch.float64)  # the rows' sum: were they the step's?
        return total.item()

    report(args, loop, "embedding_gather")


if __name__ == "__main__":
    main()
