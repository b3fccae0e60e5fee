"""An inference service as the tutorials write it: a numpy frame comes in (4 x 1024 x 2048 float32, 32 MiB),
goes to the GPU with ``.cuda()``, through a small per-pixel convolutional model, and back with
``.cpu().numpy()`` (32 MiB); the service reads a sample of each result. Frames come from a pool of 4.

    python3 infer_service.py [--mode MODE] [--requests 48] [--height 1024]

Modes (the same results, the same checksum):
  as_written       ``torch.from_numpy(frame).cuda()``, ``model(x)``, ``y.cpu().numpy()``
  pinned_prealloc  preallocated pinned input and output tensors: the frame copied into the pinned input,
                   ``x.copy_(pinned_in, non_blocking=True)``, ``pinned_out.copy_(y, non_blocking=True)``, then
                   ``torch.cuda.current_stream().synchronize()`` before the host reads the result
  two_streams      two of everything: the next frame uploaded on a side ``torch.cuda.Stream`` while this one
                   computes and comes back on the default stream; events order the buffers' reuse
"""

import numpy as np
import torch
import torch.nn as nn

from harness import parse, report

MODES = ("as_written", "pinned_prealloc", "two_streams")
CHANNELS, WIDTH, POOL = 4, 2048, 4


def make_model(device):
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(CHANNELS, 16, 1), nn.ReLU(), nn.Conv2d(16, CHANNELS, 1)).to(device).eval()


def read(out: np.ndarray) -> float:
    """What the service reads of a result: a strided sample."""
    return float(out[:, ::64, ::64].sum(dtype=np.float64))


def as_written(model, frames, n):
    total = 0.0
    for i in range(n):
        x = torch.from_numpy(frames[i % POOL]).cuda()
        y = model(x)
        total += read(y.cpu().numpy())
    return total


def pinned_prealloc(model, frames, n):
    pinned_in = torch.empty(frames[0].shape, pin_memory=True)
    pinned_out = torch.empty(frames[0].shape, pin_memory=True)
    x = torch.empty(frames[0].shape, device="cuda")
    total = 0.0
    for i in range(n):
        pinned_in.numpy()[...] = frames[i % POOL]
        x.copy_(pinned_in, non_blocking=True)
        pinned_out.copy_(model(x), non_blocking=True)
        torch.cuda.current_stream().synchronize()  # the host reads pinned_out next
        total += read(pinned_out.numpy())
    return total


def two_streams(model, frames, n):
    shape = frames[0].shape
    pinned_in = [torch.empty(shape, pin_memory=True) for _ in range(2)]
    pinned_out = [torch.empty(shape, pin_memory=True) for _ in range(2)]
    x = [torch.empty(shape, device="cuda") for _ in range(2)]
    uploaded = [torch.cuda.Event() for _ in range(2)]
    consumed = [torch.cuda.Event() for _ in range(2)]  # the compute has read x[b]
    done = [torch.cuda.Event() for _ in range(2)]  # pinned_out[b] holds the result
    side = torch.cuda.Stream()
    main = torch.cuda.current_stream()

    def upload(i):
        b = i % 2
        uploaded[b].synchronize()  # pinned_in[b]'s last copy has left it
        pinned_in[b].numpy()[...] = frames[i % POOL]
        with torch.cuda.stream(side):
            side.wait_event(consumed[b])
            x[b].copy_(pinned_in[b], non_blocking=True)
            uploaded[b].record(side)

    total = 0.0
    upload(0)
    for i in range(n):
        b = i % 2
        if i + 1 < n:
            upload(i + 1)
        main.wait_event(uploaded[b])
        y = model(x[b])
        consumed[b].record(main)
        pinned_out[b].copy_(y, non_blocking=True)
        done[b].record(main)
        if i > 0:
            done[1 - b].synchronize()
            total += read(pinned_out[1 - b].numpy())
    done[(n - 1) % 2].synchronize()
    return total + read(pinned_out[(n - 1) % 2].numpy())


def main():
    args = parse(MODES, __doc__, requests=48, height=1024)
    rng = np.random.default_rng(0)
    frames = [rng.standard_normal((CHANNELS, args.height, WIDTH), dtype=np.float32) for _ in range(POOL)]
    model = make_model("cuda")
    run = {"as_written": as_written, "pinned_prealloc": pinned_prealloc, "two_streams": two_streams}[args.mode]

    def loop():
        with torch.no_grad():
            return run(model, frames, args.requests)

    report(args, loop, "infer_service")


if __name__ == "__main__":
    main()
