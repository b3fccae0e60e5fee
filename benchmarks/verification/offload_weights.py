"""CPU-offloaded weights, as the tutorials write it: a 24-layer model whose 4096 x 4096 float32 weights (64 MiB
each) live on the host and are moved to the GPU layer by layer for every request (a batch of 64 rows).

    python3 offload_weights.py [--mode MODE] [--requests 6] [--layers 24] [--dim 4096]

Modes (the same outputs, the same checksum):
  as_written          each layer's weight ``w.to(device)`` from pageable memory, then ``x = torch.tanh(x @ w)``
  pinned_once         the weights pinned once when loaded (``w.pin_memory()``, before the timed loop), each moved
                      ``w.to(device, non_blocking=True)``
  pinned_side_stream  pinned once, and the next layer's weight uploaded on a side ``torch.cuda.Stream`` into
                      one of two GPU buffers while this layer computes; events order the buffers' reuse
"""

import torch

from harness import parse, report

MODES = ("as_written", "pinned_once", "pinned_side_stream")
ROWS = 64


def make_weights(layers: int, dim: int):
    """``layers`` host weights, each a scaled copy of one normal matrix (cheap to build, all different)."""
    base = torch.randn(dim, dim, generator=torch.Generator().manual_seed(0)) / dim**0.5
    return [base * (1.0 + 1e-3 * k) for k in range(layers)]


def per_layer(weights, x, device, non_blocking):
    for w in weights:
        x = torch.tanh(x @ w.to(device, non_blocking=non_blocking))
    return x


def side_stream(weights, x, bufs, side, uploaded, consumed):
    main = torch.cuda.current_stream()

    def upload(k):
        with torch.cuda.stream(side):
            side.wait_event(consumed[k % 2])
            bufs[k % 2].copy_(weights[k], non_blocking=True)
            uploaded[k % 2].record(side)

    upload(0)
    for k in range(len(weights)):
        if k + 1 < len(weights):
            upload(k + 1)
        main.wait_event(uploaded[k % 2])
        x = torch.tanh(x @ bufs[k % 2])
        consumed[k % 2].record(main)
    return x


def main():
    args = parse(MODES, __doc__, requests=6, layers=24, dim=4096)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    weights = make_weights(args.layers, args.dim)
    inputs = torch.randn(args.requests, ROWS, args.dim, generator=torch.Generator().manual_seed(1))

    # loaded once, as the service starts: the pinned modes pin each weight then (outside the timed loop)
    ws = weights if args.mode == "as_written" else [w.pin_memory() for w in weights]

    def loop():
        if args.mode == "pinned_side_stream":
            bufs = [torch.empty(args.dim, args.dim, device=device) for _ in range(2)]
            side = torch.cuda.Stream()
            uploaded, consumed = [torch.cuda.Event() for _ in range(2)], [torch.cuda.Event() for _ in range(2)]
        total = 0.0
        for r in range(args.requests):
            x = inputs[r].to(device)
            if args.mode == "pinned_side_stream":
                y = side_stream(ws, x, bufs, side, uploaded, consumed)
            else:
                y = per_layer(ws, x, device, non_blocking=args.mode == "pinned_once")
            total += y.double().sum().item()
        return total

    report(args, loop, "offload_weights")


if __name__ == "__main__":
    main()
