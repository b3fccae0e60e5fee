"""Many small parameter copies a step, as an actor that follows a host-side learner writes it: 128 layers of
``nn.Linear(128, 128)`` on the GPU (256 parameter tensors, 8.3 MB), their values kept on the host and updated
there every step (``torch._foreach_add_``), copied into the GPU model each step, then a forward pass on a fixed
GPU batch.

    python3 small_copies.py [--mode MODE] [--steps 150] [--layers 128]

Modes (the same values, the same checksum):
  as_written   ``p.copy_(h)`` for each parameter from pageable host tensors (256 synchronous copies a step)
  pinned_each  each host tensor pinned, ``p.copy_(h, non_blocking=True)`` (256 asynchronous copies a step), and
               ``torch.cuda.current_stream().synchronize()`` before the host updates them again
  packed       the host tensors views of one pinned flat buffer and the GPU parameters views of one flat GPU
               tensor: one ``flat.copy_(host_flat, non_blocking=True)`` a step, the same synchronisation
"""

import torch
import torch.nn as nn

from harness import parse, report

MODES = ("as_written", "pinned_each", "packed")
WIDTH = 128


def flat_views(flat, shapes):
    """Views of ``flat`` in ``shapes``, one after the other."""
    out, at = [], 0
    for s in shapes:
        n = torch.Size(s).numel()
        out.append(flat[at:at + n].view(s))
        at += n
    return out


def main():
    args = parse(MODES, __doc__, steps=150, layers=128)
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.Tanh()) for _ in range(args.layers)])
    host = [p.detach().clone() for p in model.parameters()]
    model = model.cuda().eval()
    params = [p.detach() for p in model.parameters()]
    if args.mode == "pinned_each":
        host = [h.pin_memory() for h in host]
    if args.mode == "packed":
        shapes = [h.shape for h in host]
        host_flat = torch.cat([h.reshape(-1) for h in host]).pin_memory()
        host = flat_views(host_flat, shapes)
        gpu_flat = torch.cat([p.reshape(-1) for p in params])
        for p, v in zip(model.parameters(), flat_views(gpu_flat, shapes)):
            p.data = v
        params = [p.detach() for p in model.parameters()]
    x = torch.randn(256, WIDTH, generator=torch.Generator().manual_seed(1)).cuda()

    def loop():
        total = torch.zeros((), device="cuda", dtype=torch.float64)
        with torch.no_grad():
            for _ in range(args.steps):
                if args.mode != "as_written":
                    torch.cuda.current_stream().synchronize()  # the last step's copies have left host memory
                torch._foreach_add_(host, 1e-4)
                if args.mode == "packed":
                    gpu_flat.copy_(host_flat, non_blocking=True)
                else:
                    for p, h in zip(params, host):
                        p.copy_(h, non_blocking=args.mode == "pinned_each")
                total += model(x).double().sum()
        return total.item()

    report(args, loop, "small_copies")


if __name__ == "__main__":
    main()
