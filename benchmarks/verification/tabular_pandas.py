"""Training an MLP on tabular data straight from a pandas DataFrame, as data scientists write it: a seeded synthetic
DataFrame of ``--rows`` rows (4194304) by ``--features`` float32 feature columns (64: "f0" .. "f63"; a seeded standard
normal numpy matrix wrapped with ``pd.DataFrame(X, columns=feature_cols, copy=False)``, 1 GiB, one float32 block in the
matrix's row-major layout) and an int64 'label' column (the argmax of the features times a seeded random ``--features``
x ``--classes`` 10 "teacher" matrix: a learnable task), built before the loop. ``--epochs`` epochs (2); each epoch's row
order is a seeded numpy permutation (``rng.permutation(n)``, one ``np.random.default_rng(0)`` drawn at every epoch's
start), taken in batches of ``--batch`` rows (4096: 1 MiB of features; 1024 batches an epoch, the last one short when
``--batch`` does not divide ``--rows``); each batch trains an MLP (``--features``-``--hidden``-``--hidden``-
``--classes``, 64-512-512-10, ReLU; seeded initial weights) one step: ``zero_grad``, forward, cross-entropy,
``backward``, ``AdamW(lr=--lr 1e-3).step()``, and ``losses.append(loss.item())`` (a synchronisation every step, as
people log). Before the loop, two training steps of a throw-away copy of the model and its own AdamW on zero batches of
both batch sizes keep cuBLAS's and the kernels' first-call set-up out of the timing.

The checksum is the float64 sum, in step order, of every step's float32 loss. Every mode trains on the same batches in
the same order with the same (deterministic) kernels on bit-identical, row-major (C-contiguous) batches: pandas keeps
the wrapped matrix's layout through ``iloc`` and ``.values`` (a frame copied into pandas' own column-major block would
hand as_written column-major batches and other cuBLAS kernels, and 2048 AdamW steps can amplify their last-bit
differences beyond the tolerance). Each step also stores, on the GPU, the float64 sum of its batch's features and the
sum of its labels (read once after the loop); they are compared with the sums the host computes from the DataFrame (row
sums taken before the loop) for the same permutations drawn again (relative 1e-9, labels exact): a batch not uploaded,
stale or out of order differs by hundreds. The losses must be finite and the last epoch's mean loss below the first's. A
failure exits 1.

    python3 tabular_pandas.py [--mode MODE] [--rows 4194304] [--features 64] [--classes 10] [--hidden 512]
                              [--batch 4096] [--epochs 2] [--lr 0.001]

Modes (the same batches in the same order, the same training, the same checksum):
  as_written   each step ``batch = df.iloc[idx]``, ``torch.tensor(batch[feature_cols].values,
               dtype=torch.float32).to(device)`` and ``torch.tensor(batch["label"].values,
               dtype=torch.long).to(device)``: pandas' row gather, a fresh pageable tensor, a pageable copy
  numpy_once   the features and labels converted once, at the loop's start, to torch tensors
               (``torch.tensor(df[feature_cols].values, dtype=torch.float32)``); each epoch's permutation
               ``torch.from_numpy``'d, each batch gathered on the host (``X[idx]``, ``y[idx]``) and ``.to(device)``
  pinned_once  as numpy_once, the two tensors pinned once with ``.pin_memory()``; each batch gathered with
               ``torch.index_select(X, 0, idx, out=buf)`` into one of two preallocated pinned buffers (and the
               labels likewise), ``.to(device, non_blocking=True)``; an event recorded after the copy is waited on
               before that buffer is written again
  on_gpu       the features and labels converted once and moved to the GPU at the loop's start
               (``torch.tensor(..., device=device)``, 1 GiB); each epoch's permutation sent once
               (``torch.from_numpy(perm).to(device)``), each batch indexed there with a slice of it
"""

import copy
import math
import sys

import numpy as np
import pandas as pd
import torch
from torch import nn

from harness import parse, report

MODES = ("as_written", "numpy_once", "pinned_once", "on_gpu")
SEED = 0  # the shuffling generator's


def make_model(features: int, hidden: int, classes: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, classes))


def main():
    args = parse(MODES, __doc__, rows=4194304, features=64, classes=10, hidden=512, batch=4096, epochs=2, lr=1e-3)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    n, F, B, E = args.rows, args.features, args.batch, args.epochs
    if n < 1 or F < 1 or B < 1 or E < 2:
        sys.exit(f"tabular_pandas: {n} rows of {F} features, batches of {B}, {E} epochs: need a row, a feature, "
                 f"a batch of at least 1 and 2 epochs")

    # the table: the features a seeded numpy matrix wrapped without a copy, an int64 label column beside them
    features = np.random.default_rng(0).standard_normal((n, F), dtype=np.float32)
    teacher = np.random.default_rng(1).standard_normal((F, args.classes), dtype=np.float32)
    labels = np.argmax(features @ teacher, axis=1).astype(np.int64)
    row_sums = features.sum(axis=1, dtype=np.float64)  # for the check after the loop
    feature_cols = [f"f{i}" for i in range(F)]
    df = pd.DataFrame(features, columns=feature_cols, copy=False)
    df["label"] = labels
    del features
    per_epoch = -(-n // B)
    sizes = sorted({B, n % B or B})

    torch.manual_seed(0)
    model = make_model(F, args.hidden, args.classes).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()

    # cuBLAS's and AdamW's first calls, on a copy: the real model and optimizer untouched
    spare = copy.deepcopy(model)
    spare_opt = torch.optim.AdamW(spare.parameters(), lr=args.lr)
    for m in sizes:
        spare_opt.zero_grad()
        out = loss_fn(spare(torch.zeros((m, F), device=device)), torch.zeros(m, dtype=torch.long, device=device))
        out.backward()
        spare_opt.step()
        torch.zeros((m, F), device=device).sum(dtype=torch.float64)
    del spare, spare_opt, out

    def loop():
        shuffle_rng = np.random.default_rng(SEED)
        seen = torch.zeros((E * per_epoch, 2), dtype=torch.float64, device=device)
        losses = []
        s = 0

        def train_step(xb, yb):
            nonlocal s
            seen[s, 0] = xb.sum(dtype=torch.float64)  # the batch's fingerprint, checked after the loop
            seen[s, 1] = yb.sum()
            s += 1
            optimizer.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())

        model.train()
        if args.mode == "as_written":
            for epoch in range(E):
                perm = shuffle_rng.permutation(n)
                for start in range(0, n, B):
                    batch = df.iloc[perm[start:start + B]]
                    xb = torch.tensor(batch[feature_cols].values, dtype=torch.float32).to(device)
                    yb = torch.tensor(batch["label"].values, dtype=torch.long).to(device)
                    train_step(xb, yb)
        elif args.mode in ("numpy_once", "pinned_once"):
            X = torch.tensor(df[feature_cols].values, dtype=torch.float32)
            y = torch.tensor(df["label"].values, dtype=torch.long)
            if args.mode == "numpy_once":
                for epoch in range(E):
                    perm = torch.from_numpy(shuffle_rng.permutation(n))
                    for start in range(0, n, B):
                        idx = perm[start:start + B]
                        train_step(X[idx].to(device), y[idx].to(device))
            else:
                X, y = X.pin_memory(), y.pin_memory()
                x_bufs = [torch.empty((B, F), dtype=torch.float32, pin_memory=True) for _ in range(2)]
                y_bufs = [torch.empty(B, dtype=torch.long, pin_memory=True) for _ in range(2)]
                copied = [None, None]  # the event after each buffer's last upload
                k = 0
                for epoch in range(E):
                    perm = torch.from_numpy(shuffle_rng.permutation(n))
                    for start in range(0, n, B):
                        idx = perm[start:start + B]
                        m = len(idx)
                        if copied[k] is not None:
                            copied[k].synchronize()  # its last upload has finished: the buffer may be written
                        xh = torch.index_select(X, 0, idx, out=x_bufs[k][:m])
                        yh = torch.index_select(y, 0, idx, out=y_bufs[k][:m])
                        xb = xh.to(device, non_blocking=True)
                        yb = yh.to(device, non_blocking=True)
                        copied[k] = torch.cuda.Event()
                        copied[k].record()
                        train_step(xb, yb)
                        k ^= 1
        else:  # on_gpu
            X_gpu = torch.tensor(df[feature_cols].values, dtype=torch.float32, device=device)
            y_gpu = torch.tensor(df["label"].values, dtype=torch.long, device=device)
            for epoch in range(E):
                perm = torch.from_numpy(shuffle_rng.permutation(n)).to(device)
                for start in range(0, n, B):
                    idx = perm[start:start + B]
                    train_step(X_gpu[idx], y_gpu[idx])

        check_batches(seen.cpu().numpy(), s)
        check_losses(losses)
        total = 0.0
        for v in losses:
            total += v
        return total

    def check_batches(seen: np.ndarray, steps: int) -> None:
        """Every step's batch fingerprint against the host's sums for the same permutations; exit 1."""
        if steps != E * per_epoch:
            sys.exit(f"tabular_pandas: {steps} training steps, {E} epochs of {per_epoch} batches expected")
        ref_rng = np.random.default_rng(SEED)
        s = 0
        for epoch in range(E):
            perm = ref_rng.permutation(n)
            for start in range(0, n, B):
                idx = perm[start:start + B]
                want_x, want_y = float(row_sums[idx].sum()), float(labels[idx].sum())
                got_x, got_y = float(seen[s, 0]), float(seen[s, 1])
                if not (math.isclose(got_x, want_x, rel_tol=1e-9, abs_tol=1e-6) and got_y == want_y):
                    sys.exit(f"tabular_pandas: epoch {epoch}'s step {s}: its batch's features summed to "
                             f"{got_x:.12g} and labels to {got_y:.0f}, the reference batch's to {want_x:.12g} and "
                             f"{want_y:.0f}")
                s += 1

    def check_losses(losses: list) -> None:
        """The losses finite, and the model learned (the last epoch's mean loss below the first's); exit 1."""
        if not all(math.isfinite(v) for v in losses):
            sys.exit(f"tabular_pandas: {sum(not math.isfinite(v) for v in losses)} losses are not finite")
        first = sum(losses[:per_epoch]) / per_epoch
        last = sum(losses[-per_epoch:]) / per_epoch
        if not last < first:
            sys.exit(f"tabular_pandas: the last epoch's mean loss {last:.6g} is not below the first's {first:.6g}")

    report(args, loop, "tabular_pandas")


if __name__ == "__main__":
    main()
