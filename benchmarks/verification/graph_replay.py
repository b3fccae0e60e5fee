"""Inference with a CUDA graph, as PyTorch's documentation shows it: an MLP (``--features``-``--hidden``-``--hidden``-
``--outputs``, ReLU, a sigmoid on its scores; 4096-1024-1024-1024, seeded random weights, eval, ``torch.no_grad()``)
warmed up on a side ``torch.cuda.Stream`` (3 iterations), then captured with ``g = torch.cuda.CUDAGraph()`` and
``with torch.cuda.graph(g): static_out = model(static_in)`` on a static input tensor (all before the timed loop).
The data: a ``--mib`` MiB float32 dataset in host memory (256 MiB by default: rows of ``--features`` 4096, standard
normal from a seeded generator, made before the loop) in a numpy array, cut into batches of ``--batch`` rows (1024:
16 MiB); each of ``--steps`` steps (200) takes the batch a seeded generator picks, ``batch =
torch.from_numpy(data[i:j])`` (a pageable CPU tensor), ``static_in.copy_(batch)``, ``g.replay()``, ``out =
static_out.cpu()`` (1024 x 1024 float32: 4 MiB) and accumulates ``out`` on the host (``acc += out.numpy()``, a
float64 numpy array of the output's shape).

The checksum is the float64 sum of the accumulated outputs. Every mode replays the same graph on the same batches in
the same order and adds the same float32 outputs into float64 in the same order (an addition of a float32 widened to
float64 rounds the same on the host and the GPU), so the modes agree to the last bit on one machine. The graph also
accumulates, in a static float64 tensor on the GPU, every row's float64 sum of the input it was replayed on
(``static_seen.add_(static_in.sum(1, dtype=torch.float64))``, zeroed after the capture; read once after the loop):
it is compared with the sums the host computes from the dataset before the loop (relative 1e-9): a batch that did not
arrive, or arrived stale, differs by tens; a mismatch exits 1.

    python3 graph_replay.py [--mode MODE] [--mib 256] [--features 4096] [--batch 1024] [--hidden 1024]
                            [--outputs 1024] [--steps 200]

Modes (the same graph on the same batches, the same checksum):
  as_written      ``static_in.copy_(torch.from_numpy(data[i:j]))`` from pageable memory, ``g.replay()``,
                  ``out = static_out.cpu()`` (a fresh pageable tensor), ``acc += out.numpy()``
  pinned_staging  one pinned input tensor and one pinned output tensor allocated at the start of the loop: each batch
                  copied into the pinned input (``pin_in.copy_(torch.from_numpy(data[i:j]))``),
                  ``static_in.copy_(pin_in, non_blocking=True)``, ``g.replay()``,
                  ``pin_out.copy_(static_out, non_blocking=True)``, one ``current_stream().synchronize()`` before the
                  host reads ``pin_out`` (which also says the pinned input may be refilled)
  dataset_pinned  the dataset pinned once at the start of the loop (``torch.from_numpy(data).pin_memory()``), each
                  batch a slice of it, ``static_in.copy_(slice, non_blocking=True)``; the outputs as pinned_staging's
  dataset_on_gpu  the dataset moved to the GPU once at the start of the loop, ``static_in.copy_(gpu_slice)``; the
                  outputs accumulated on the GPU (``acc += static_out`` into a float64 GPU tensor) and read once at
                  the end
"""

import sys

import numpy as np
import torch
from torch import nn

from harness import parse, report

MODES = ("as_written", "pinned_staging", "dataset_pinned", "dataset_on_gpu")
WARMUP = 3  # iterations on a side stream before the capture, as the documentation's example


def make_model(features: int, hidden: int, outputs: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, outputs), nn.Sigmoid())


def check_seen(got: np.ndarray, want: np.ndarray) -> None:
    """The graph's accumulated input row sums against the host's; exit 1."""
    bad = np.flatnonzero(~np.isclose(got, want, rtol=1e-9, atol=1e-6))
    if len(bad):
        r = bad[0]
        sys.exit(f"graph_replay: row {r} of the static input summed to {got[r]:.12g} over the steps, the dataset's "
                 f"batches to {want[r]:.12g} ({len(bad)} rows differ)")


def main():
    args = parse(MODES, __doc__, mib=256, features=4096, batch=1024, hidden=1024, outputs=1024, steps=200)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    B, F = args.batch, args.features
    rows = (args.mib << 20) // (4 * F)
    nb = rows // B  # whole batches in the dataset
    if nb < 1:
        sys.exit(f"graph_replay: {args.mib} MiB of {F}-wide rows hold no batch of {B}")
    rng = np.random.default_rng(0)
    data = rng.standard_normal((nb * B, F), dtype=np.float32)
    order = np.random.default_rng(1).integers(0, nb, args.steps)  # each step's batch
    row_sums = data.sum(1, dtype=np.float64).reshape(nb, B)
    want = row_sums[order].sum(0)  # every static input row's sum over the steps

    torch.manual_seed(0)
    model = make_model(F, args.hidden, args.outputs).to(device).eval()
    static_in = torch.zeros((B, F), device=device)
    static_seen = torch.zeros(B, dtype=torch.float64, device=device)
    with torch.no_grad():
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(WARMUP):
                model(static_in)
                static_seen.add_(static_in.sum(1, dtype=torch.float64))
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            static_out = model(static_in)
            static_seen.add_(static_in.sum(1, dtype=torch.float64))
    static_seen.zero_()  # the warm-up's sums (a capture runs nothing)

    def loop():
        acc = np.zeros((B, args.outputs), dtype=np.float64)
        pin_in = pin_out = source = acc_gpu = None
        if args.mode in ("pinned_staging", "dataset_pinned"):
            pin_out = torch.empty((B, args.outputs), pin_memory=True)
        if args.mode == "pinned_staging":
            pin_in = torch.empty((B, F), pin_memory=True)
        elif args.mode == "dataset_pinned":  # pinned once: every step's batch a slice of it
            source = torch.from_numpy(data).pin_memory()
        elif args.mode == "dataset_on_gpu":  # moved once: every step's batch a slice on the GPU
            source = torch.from_numpy(data).to(device)
            acc_gpu = torch.zeros((B, args.outputs), dtype=torch.float64, device=device)
        for b in order.tolist():
            i, j = b * B, (b + 1) * B
            if args.mode == "as_written":
                batch = torch.from_numpy(data[i:j])
                static_in.copy_(batch)
                g.replay()
                out = static_out.cpu()
                acc += out.numpy()
            elif args.mode == "pinned_staging":
                pin_in.copy_(torch.from_numpy(data[i:j]))  # the last step's synchronize: its upload has read it
                static_in.copy_(pin_in, non_blocking=True)
                g.replay()
                pin_out.copy_(static_out, non_blocking=True)
                torch.cuda.current_stream().synchronize()
                acc += pin_out.numpy()
            elif args.mode == "dataset_pinned":
                static_in.copy_(source[i:j], non_blocking=True)
                g.replay()
                pin_out.copy_(static_out, non_blocking=True)
                torch.cuda.current_stream().synchronize()
                acc += pin_out.numpy()
            else:
                static_in.copy_(source[i:j])
                g.replay()
                acc_gpu += static_out
        if acc_gpu is not None:
            acc = acc_gpu.cpu().numpy()
        check_seen(static_seen.cpu().numpy(), want)
        return float(acc.sum())

    report(args, loop, "graph_replay")


if __name__ == "__main__":
    main()
