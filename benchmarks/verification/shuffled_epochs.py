"""Training an MLP on an in-memory dataset with a shuffling ``DataLoader``, as the PyTorch tutorials write it: a
``--mib`` MiB float32 feature matrix (1024 MiB by default: 87381 samples of ``--features`` 3072, a 3 x 32 x 32 image
flattened, 12 KiB a sample; standard normal from a seeded numpy generator) and int64 labels (the argmax of the samples
times a seeded random ``--features`` x ``--classes`` 10 "teacher" matrix: a learnable task), both made in numpy
before the loop and wrapped in ``TensorDataset(torch.from_numpy(X), torch.from_numpy(y))``. ``--epochs`` epochs (3)
over it in batches of ``--batch`` (256: 3 MiB of features; 342 batches an epoch, the last one short, 85 samples),
shuffled by a ``torch.Generator`` seeded with 0 (``shuffle=True, generator=g``); each batch trains an MLP
(``--features``-``--hidden``-``--hidden``-``--classes``, 3072-512-512-10, ReLU; seeded initial weights) one step:
``zero_grad``, forward and cross-entropy under ``torch.autocast(..., dtype=torch.bfloat16)``, ``backward``,
``Adam(lr=--lr 1e-3).step()``, and the step's loss is kept as a Python float. Before the loop, two training steps of a
throw-away copy of the model and its own Adam on zero batches of both batch sizes (256 and 85) keep cuBLAS's and
the kernels' first-call set-up out of the timing (the real model, optimizer and generator untouched).

The checksum is the float64 sum, in step order, of every step's float32 loss, plus the float64 sum of every final
parameter. Every mode trains on the same batches in the same order (the same generator draws the same permutations:
the DataLoader's own, or for the GPU-resident modes those of a DataLoader over ``range(n)`` with the same seeded
generator), with the same kernels on bit-identical inputs, and sums the same float32 losses in the same order, so
the modes agree to the last bit on one machine. Each step also stores, on the GPU, the float64 sum of its batch's
features and the sum of its labels (``seen[s] = ...``, read once after the loop); after the loop they are compared
with the sums the host computes from the dataset (row sums taken before the loop) for the batches of a reference
DataLoader over ``range(n)`` with a fresh generator of the same seed (relative 1e-9 for the features, exact for the
labels): a batch that was not uploaded, came stale, or came out of order differs by hundreds. The losses must be
finite and the last epoch's mean loss below the first's (the model learned). A failure exits 1.

    python3 shuffled_epochs.py [--mode MODE] [--mib 1024] [--features 3072] [--classes 10] [--hidden 512]
                               [--batch 256] [--epochs 3] [--lr 0.001] [--workers 4]

Modes (the same batches in the same order, the same training, the same checksum):
  as_written      ``DataLoader(ds, batch_size=256, shuffle=True, generator=g)`` (``num_workers=0``): each batch
                  collated in the main process from 256 ``ds[i]`` (``torch.stack`` into a fresh pageable tensor),
                  ``xb, yb = xb.to(device), yb.to(device)`` (pageable copies), ``losses.append(loss.item())`` each
                  step (a synchronisation every step)
  loader_pinned   as as_written with ``DataLoader(..., pin_memory=True)`` (each collated batch copied into pinned
                  memory by the loader, in the main process) and ``.to(device, non_blocking=True)``
  loader_workers  as loader_pinned with ``num_workers=--workers`` (4) worker processes collating the batches (started
                  each epoch: the loader's iterator draws its worker base seed from ``g`` at every epoch's start, as
                  the single-process loader's does, so the shuffle order stays that of as_written; persistent workers
                  would skip that draw from the second epoch on and shuffle differently) and the main process's pin
                  thread pinning them; ``.to(device, non_blocking=True)``
  dataset_on_gpu  the features and labels moved to the GPU once at the start of the loop
                  (``torch.from_numpy(X).to(device)``, 1 GiB); each step's index list drawn by
                  ``DataLoader(range(n), batch_size=256, shuffle=True, generator=g)`` (the same draws as as_written's
                  loader), ``idx.to(device)`` (2 KiB) and the batch gathered on the GPU (``X_gpu[idx]``,
                  ``y_gpu[idx]``); ``loss.item()`` each step as as_written
  gpu_epoch_loss  as dataset_on_gpu, with each epoch's whole permutation taken at the epoch's start
                  (``torch.cat(list(index_loader)).to(device)``: the same index lists) and the batches gathered with
                  slices of it; the losses kept on the GPU (``losses.append(loss.detach())``) and read once an epoch
                  (``torch.stack(losses).tolist()``): no synchronisation inside an epoch
"""

import copy
import math
import sys

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from harness import parse, report

MODES = ("as_written", "loader_pinned", "loader_workers", "dataset_on_gpu", "gpu_epoch_loss")
SEED = 0  # the shuffling generator's


def make_model(features: int, hidden: int, classes: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, classes))


def main():
    args = parse(MODES, __doc__, mib=1024, features=3072, classes=10, hidden=512, batch=256, epochs=3, lr=1e-3,
                 workers=4)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    F, B, E = args.features, args.batch, args.epochs
    n = (args.mib << 20) // (4 * F)
    if n < 1 or B < 1 or E < 2 or args.workers < 1:
        sys.exit(f"shuffled_epochs: {args.mib} MiB of {F}-wide samples, batches of {B}, {E} epochs, {args.workers} "
                 f"workers: need a sample, a batch of at least 1, 2 epochs and a worker")
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, F), dtype=np.float32)
    teacher = np.random.default_rng(1).standard_normal((F, args.classes), dtype=np.float32)
    y = np.argmax(X @ teacher, axis=1).astype(np.int64)
    row_sums = X.sum(1, dtype=np.float64)  # for the check after the loop
    ds = TensorDataset(torch.from_numpy(X), torch.from_numpy(y))
    per_epoch = -(-n // B)
    sizes = sorted({B, n % B or B})

    torch.manual_seed(0)
    model = make_model(F, args.hidden, args.classes).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()

    # cuBLAS's, autocast's and Adam's first calls, on a copy: the real model, optimizer and generator untouched
    spare = copy.deepcopy(model)
    spare_opt = torch.optim.Adam(spare.parameters(), lr=args.lr)
    for m in sizes:
        spare_opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
            out = loss_fn(spare(torch.zeros((m, F), device=device)),
                          torch.zeros(m, dtype=torch.int64, device=device))
        out.backward()
        spare_opt.step()
        torch.zeros((m, F), device=device).sum(dtype=torch.float64)
    del spare, spare_opt, out

    def loop():
        g = torch.Generator().manual_seed(SEED)
        seen = torch.zeros((E * per_epoch, 2), dtype=torch.float64, device=device)
        epochs = []  # every epoch's losses, as Python floats, in step order
        s = 0

        def train_step(xb, yb):
            nonlocal s
            seen[s, 0] = xb.sum(dtype=torch.float64)  # the batch's fingerprint, checked after the loop
            seen[s, 1] = yb.sum()
            s += 1
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
                loss = loss_fn(model(xb), yb)
            loss.backward()
            optimizer.step()
            return loss

        model.train()
        if args.mode in ("as_written", "loader_pinned", "loader_workers"):
            pin = args.mode != "as_written"
            loader = DataLoader(ds, batch_size=B, shuffle=True, generator=g,
                                num_workers=args.workers if args.mode == "loader_workers" else 0, pin_memory=pin)
            for epoch in range(E):
                losses = []
                for xb, yb in loader:
                    xb, yb = xb.to(device, non_blocking=pin), yb.to(device, non_blocking=pin)
                    loss = train_step(xb, yb)
                    losses.append(loss.item())
                epochs.append(losses)
        else:
            X_gpu = torch.from_numpy(X).to(device)
            y_gpu = torch.from_numpy(y).to(device)
            index_loader = DataLoader(range(n), batch_size=B, shuffle=True, generator=g)
            for epoch in range(E):
                losses = []
                if args.mode == "dataset_on_gpu":
                    for idx in index_loader:
                        idx = idx.to(device)
                        loss = train_step(X_gpu[idx], y_gpu[idx])
                        losses.append(loss.item())
                else:  # gpu_epoch_loss
                    perm = torch.cat(list(index_loader)).to(device)
                    for i in range(0, n, B):
                        idx = perm[i:i + B]
                        loss = train_step(X_gpu[idx], y_gpu[idx])
                        losses.append(loss.detach())
                    losses = torch.stack(losses).tolist()
                epochs.append(losses)

        check_batches(seen.cpu().numpy(), s)
        check_losses(epochs)
        loss_sum = 0.0
        for losses in epochs:
            for v in losses:
                loss_sum += v
        param_sum = sum(p.detach().double().sum().item() for p in model.parameters())
        return loss_sum + param_sum

    def check_batches(seen: np.ndarray, steps: int) -> None:
        """Every step's batch fingerprint against a reference loader's batches, summed on the host; exit 1."""
        if steps != E * per_epoch:
            sys.exit(f"shuffled_epochs: {steps} training steps, {E} epochs of {per_epoch} batches expected")
        ref = DataLoader(range(n), batch_size=B, shuffle=True, generator=torch.Generator().manual_seed(SEED))
        s = 0
        for epoch in range(E):
            drawn = []
            for idx in ref:
                idx = idx.numpy()
                drawn.append(idx)
                want_x, want_y = float(row_sums[idx].sum()), float(y[idx].sum())
                got_x, got_y = float(seen[s, 0]), float(seen[s, 1])
                if not (math.isclose(got_x, want_x, rel_tol=1e-9, abs_tol=1e-6) and got_y == want_y):
                    sys.exit(f"shuffled_epochs: epoch {epoch}'s step {s}: its batch's features summed to "
                             f"{got_x:.12g} and labels to {got_y:.0f}, the reference batch's to {want_x:.12g} and "
                             f"{want_y:.0f}")
                s += 1
            if not np.array_equal(np.sort(np.concatenate(drawn)), np.arange(n)):
                sys.exit(f"shuffled_epochs: the reference loader's epoch {epoch} is not a permutation of the samples")

    def check_losses(epochs: list) -> None:
        """The losses finite, and the model learned (the last epoch's mean loss below the first's); exit 1."""
        flat = [v for losses in epochs for v in losses]
        if not all(math.isfinite(v) for v in flat):
            sys.exit(f"shuffled_epochs: {sum(not math.isfinite(v) for v in flat)} losses are not finite")
        first, last = (sum(epochs[k]) / len(epochs[k]) for k in (0, -1))
        if not last < first:
            sys.exit(f"shuffled_epochs: the last epoch's mean loss {last:.6g} is not below the first's {first:.6g}")

    report(args, loop, "shuffled_epochs")


if __name__ == "__main__":
    main()
