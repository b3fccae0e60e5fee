"""Activations offloaded to the host between a forward and a backward pass, as memory-saving tutorials write it:
a stack of ``--layers`` linear layers (``--dim`` wide, a batch of ``--rows``); each layer's output is moved to the
host after the forward step and back when the backward-like pass reaches it (a gradient-like product with it).

    python3 activation_offload.py [--mode MODE] [--steps 6] [--layers 16] [--rows 2048] [--dim 4096]

Modes (the same products, the same checksum):
  as_written       ``act.cpu()`` after each layer (a fresh pageable tensor), ``a.to(device)`` in the backward pass
  pinned_prealloc  one preallocated pinned buffer a layer (made once, before the loop): ``buf.copy_(act,
                   non_blocking=True)``, then ``buf.to(device, non_blocking=True)`` in the backward pass (the
                   stream's order keeps the two copies and the kernels in turn)
  keep_on_gpu      the activations stay on the GPU (no offload; what the GPU's memory allows here)
"""

import torch

from harness import parse, report

MODES = ("as_written", "pinned_prealloc", "keep_on_gpu")


def main():
    args = parse(MODES, __doc__, steps=6, layers=16, rows=2048, dim=4096)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    g = torch.Generator().manual_seed(0)
    weights = [(torch.randn(args.dim, args.dim, generator=g) / args.dim**0.5).to(device) for _ in range(args.layers)]
    inputs = torch.randn(args.rows, args.dim, generator=g).to(device)
    bufs = None
    if args.mode == "pinned_prealloc":
        bufs = [torch.empty(args.rows, args.dim, pin_memory=True) for _ in range(args.layers)]

    def offload(k, act):
        if args.mode == "as_written":
            return act.cpu()
        if args.mode == "pinned_prealloc":
            return bufs[k].copy_(act, non_blocking=True)
        return act

    def reload(saved):
        if args.mode == "as_written":
            return saved.to(device)
        if args.mode == "pinned_prealloc":
            return saved.to(device, non_blocking=True)
        return saved

    def loop():
        total = 0.0
        for step in range(args.steps):
            x = inputs * (1.0 + 1e-3 * step)
            saved = []
            for k, w in enumerate(weights):
                x = torch.tanh(x @ w)
                saved.append(offload(k, x))
            grad = torch.ones_like(x) / args.rows
            for k in reversed(range(args.layers)):
                a = reload(saved[k])
                grad = (grad * (1 - a * a)) @ weights[k].T  # tanh's derivative, then the layer's transpose
            total += grad.double().sum().item()
        return total

    report(args, loop, "activation_offload")


if __name__ == "__main__":
    main()
