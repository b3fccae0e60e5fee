"""A training loop whose author believes ``non_blocking=True`` makes its uploads asynchronous: each step a batch is
augmented on the host with numpy and sent with ``torch.from_numpy(arr).to(device, non_blocking=True)`` from the
fresh (pageable) array numpy made. The data: ``--rows`` rows (8192) of ``--features`` float32 (4096; 128 MiB,
standard normal from a seeded generator) in a numpy array, and a bank of noise made once with it (``--noise-rows``
rows, 4096: 64 MiB, standard normal times 0.1), both before the timed loop; the int64 labels (seeded) on the GPU. Each
of ``--steps`` steps (160) takes a batch of ``--batch`` rows (1024: 16 MiB), an offset into the noise bank and
whether to flip, all three from a seeded generator: ``x = data[i:j]``, ``x = x[:, ::-1]`` where it flips (each row's
features reversed), ``arr = x + noise[o:o + batch]``; then an MLP (``--features``-``--hidden``-``--hidden``-10, ReLU;
4096-2048-2048-10), cross-entropy, SGD with momentum; the loss accumulated in a GPU tensor (no ``.item()`` a step).

The checksum is the float64 sum of the losses (accumulated on the GPU, read once at the end) plus the float64 sum of
the final weights. The augmentation is a reversal and one float32 addition, which round the same on the host and on
the GPU, so every mode trains on bit-identical batches with the same kernels in the same order: the modes agree to
the last bit on one machine (run_gpu.py's tolerance, 1e-4 relative, is far more than they need). Every step's batch
is also checked: its float64 sum and the float64 sum of its first column, taken on the GPU and read once after the
loop, against the host's (the first column exactly, from the dataset and the noise before the loop; the whole sum
within the float32 rounding of the addition, at most 2**-24 of the batch's absolute values): a batch that did not
arrive, arrived stale or was not flipped as planned differs by tens; a mismatch exits 1.

    python3 nonblocking_pageable.py [--mode MODE] [--rows 8192] [--noise-rows 4096] [--features 4096]
                                    [--batch 1024] [--hidden 2048] [--steps 160]

Modes (the same batches in the same order, the same updates, the same checksum):
  as_written            ``arr = x + noise[o:o + batch]`` a fresh numpy array each step,
                        ``torch.from_numpy(arr).to(device, non_blocking=True)`` from pageable memory
  pinned_buffer         two pinned tensors allocated at the start of the loop, used in turn: the augmentation written
                        straight into one (``np.add(x, noise[o:o + batch], out=buf.numpy())``), then
                        ``buf.to(device, non_blocking=True)``; an event recorded after the upload is waited on before
                        that buffer is written again
  side_stream_prefetch  the same two pinned buffers, and a side ``torch.cuda.Stream``: right after a step's work is
                        queued the host augments the next batch into the other buffer and uploads it on the side
                        stream (``non_blocking=True``) while the step computes; the step waits with
                        ``current_stream().wait_stream(side)`` and ``x.record_stream(current_stream())``
  augment_on_gpu        the un-augmented data and the noise bank moved to the GPU once at the start of the loop, each
                        batch sliced, flipped (``.flip(1)``) and added to its noise there
"""

import sys

import numpy as np
import torch
from torch import nn

from harness import parse, report

MODES = ("as_written", "pinned_buffer", "side_stream_prefetch", "augment_on_gpu")
CLASSES, NOISE = 10, 0.1


def make_model(features: int, hidden: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, CLASSES))


def check_batches(seen: np.ndarray, want: np.ndarray, bound: float) -> None:
    """Every step's batch sums (the GPU's) against the host's: the whole batch within ``bound``, its first column
    to 1e-9; exit 1."""
    ok = (np.abs(seen[:, 0] - want[:, 0]) <= bound) & np.isclose(seen[:, 1], want[:, 1], rtol=1e-9, atol=1e-6)
    bad = np.flatnonzero(~ok)
    if len(bad):
        s = bad[0]
        sys.exit(f"nonblocking_pageable: step {s}'s batch sums {seen[s].tolist()} differ from its augmented "
                 f"block's {want[s].tolist()} ({len(bad)} steps differ)")


def main():
    args = parse(MODES, __doc__, rows=8192, noise_rows=4096, features=4096, batch=1024, hidden=2048, steps=160)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    B, F = args.batch, args.features
    nb = args.rows // B  # whole batches in the dataset
    if nb < 1 or args.noise_rows < B:
        sys.exit(f"nonblocking_pageable: {args.rows} rows and {args.noise_rows} rows of noise hold no batch of {B}")
    rng = np.random.default_rng(0)
    data = rng.standard_normal((nb * B, F), dtype=np.float32)
    noise = rng.standard_normal((args.noise_rows, F), dtype=np.float32)
    noise *= np.float32(NOISE)  # the bank as stored: every mode adds these float32 values
    labels = torch.from_numpy(rng.integers(0, CLASSES, nb * B)).to(device)
    plan_rng = np.random.default_rng(1)
    plan = [(int(plan_rng.integers(0, nb)), int(plan_rng.integers(0, args.noise_rows - B + 1)),
             bool(plan_rng.integers(0, 2))) for _ in range(args.steps)]  # (batch, noise offset, flip) a step

    # what every step's batch must sum to: the first column exactly (the same float32 additions), the whole batch
    # from the rows' sums, within the float32 rounding of the additions
    data_sums = data.sum(1, dtype=np.float64).reshape(nb, B).sum(1)
    noise_rows = noise.sum(1, dtype=np.float64)
    want = np.array([(data_sums[b] + noise_rows[o:o + B].sum(),
                      (data[b * B:(b + 1) * B, F - 1 if flip else 0] + noise[o:o + B, 0]).sum(dtype=np.float64))
                     for b, o, flip in plan])
    bound = 2.0 ** -24 * B * F * (float(np.abs(data).max()) + float(np.abs(noise).max())) + 1e-6

    torch.manual_seed(0)
    model = make_model(F, args.hidden).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    def source(s):
        """Step s's un-augmented rows (a view, reversed where it flips) and its slice of the noise bank."""
        b, o, flip = plan[s]
        x = data[b * B:(b + 1) * B]
        if flip:
            x = x[:, ::-1]
        return x, noise[o:o + B]

    def pageable():
        for s in range(args.steps):
            x, n = source(s)
            arr = x + n
            yield torch.from_numpy(arr).to(device, non_blocking=True)

    def pinned_buffers():
        bufs = [torch.empty((B, F), pin_memory=True) for _ in range(2)]
        freed = [None, None]
        for s in range(args.steps):
            k = s % 2
            if freed[k] is not None:
                freed[k].synchronize()  # its last upload has finished: the buffer may be written again
            np.add(*source(s), out=bufs[k].numpy())
            x = bufs[k].to(device, non_blocking=True)
            freed[k] = torch.cuda.Event()
            freed[k].record()
            yield x

    def prefetched():
        bufs = [torch.empty((B, F), pin_memory=True) for _ in range(2)]
        uploaded = [None, None]
        side, main_stream = torch.cuda.Stream(), torch.cuda.current_stream()

        def stage(s):
            k = s % 2
            if uploaded[k] is not None:
                uploaded[k].synchronize()  # the upload that last read this buffer has finished
            np.add(*source(s), out=bufs[k].numpy())
            with torch.cuda.stream(side):
                x = bufs[k].to(device, non_blocking=True)
                uploaded[k] = side.record_event()
            return x

        nxt = stage(0)
        for s in range(args.steps):
            main_stream.wait_stream(side)  # the batch has arrived
            x = nxt
            x.record_stream(main_stream)  # made on the side stream, read on this one
            yield x  # the caller queues the step's work before this resumes
            if s + 1 < args.steps:
                nxt = stage(s + 1)  # the host augments, the side stream uploads, while step s computes

    def on_gpu():
        gdata = torch.from_numpy(data).to(device)
        gnoise = torch.from_numpy(noise).to(device)
        for b, o, flip in plan:
            x = gdata[b * B:(b + 1) * B]
            if flip:
                x = x.flip(1)
            yield x + gnoise[o:o + B]

    batches = {"as_written": pageable, "pinned_buffer": pinned_buffers, "side_stream_prefetch": prefetched,
               "augment_on_gpu": on_gpu}[args.mode]

    def loop():
        total = torch.zeros((), dtype=torch.float64, device=device)
        seen = torch.zeros((args.steps, 2), dtype=torch.float64, device=device)
        for s, x in enumerate(batches()):
            b = plan[s][0]
            y = labels[b * B:(b + 1) * B]
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            total += loss.detach()
            seen[s, 0] = x.sum(dtype=torch.float64)  # was this step's batch the augmented block it should be?
            seen[s, 1] = x[:, 0].sum(dtype=torch.float64)
        check_batches(seen.cpu().numpy(), want, bound)
        return total.item() + sum(p.detach().double().sum().item() for p in model.parameters())

    report(args, loop, "nonblocking_pageable")


if __name__ == "__main__":
    main()
