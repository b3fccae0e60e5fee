"""Training a PointNet-style point-cloud classifier on samples of different sizes, as PyTorch users write it without
PyTorch Geometric: ``--samples`` point clouds (4096) of ``--min-points`` to ``--max-points`` points (256 to 4096,
seeded; 2190 on average), each point 3 coordinates and ``--features`` extra features (3: a colour, say), one float32
numpy array of (n, 6) per sample, made once with a seeded generator and held in host memory (205 MiB), with an int64
label each (``--classes`` 10: each class its own extent along x, y, z and its own tint); a map-style Dataset returns
``torch.from_numpy(points[i]), labels[i]``. ``DataLoader(batch_size=--batch 32, shuffle=True, generator=g)`` (g seeded
with 0) with a custom ``collate_fn``: the default collate cannot stack samples of different sizes. Each step
concatenates the batch's points on the GPU with a ``batch`` vector saying which sample each point belongs to (as
PyTorch Geometric's ``Batch`` does), a shared per-point MLP (6-64-128-``--width`` 256, ReLU), a per-sample max pool
(``scatter_reduce(..., reduce="amax", include_self=False)``, as PyG's ``global_max_pool``), a head
(``--width``-128-classes), cross-entropy, Adam (lr 1e-3), ``loss.item()`` each step; ``--epochs`` 3 (128 steps an
epoch, 384 in all). Before the loop one training step of a throw-away copy of the model and its own Adam keeps
cuBLAS's first-call set-up out of the timing.

The model always gets the same inputs (the batch's points concatenated in the batch's order, sample after sample, the
int64 ``batch`` vector, the labels), whatever the mode moved and however it put them together, so every mode runs the
same kernels on bit-identical tensors and sums the same losses in the same order: the checksum (the float64 sum of
every step's loss plus the float64 sum of every final parameter) agrees to the last bit between modes on one machine.
Each step also stores on the GPU its batch's fingerprint (the float64 sum of its points, the sum of its labels, the
sum of each point's sum times its sample's position in the batch, the sum of the ``batch`` vector), read once after
the loop and compared with the host's sums over a reference DataLoader's batches (a fresh generator of the same
seed): a sample that came stale, late, out of order or cut at the wrong offset shows. The losses must be finite. A
failure exits 1.

    python3 point_clouds.py [--mode MODE] [--samples 4096] [--min-points 256] [--max-points 4096] [--features 3]
                            [--classes 10] [--batch 32] [--epochs 3] [--width 256] [--workers 2]

Modes (the same batches in the same order, the same model inputs, the same checksum):
  as_written      ``collate_fn`` returns the list of the batch's point tensors and the labels (``pin_memory=False``,
                  ``num_workers=0``); ``points = [p.to(device) for p in points]`` (32 small pageable copies a step,
                  1.6 MiB in all on average), ``torch.cat(points)`` and the ``batch`` vector from one ``torch.full``
                  a sample, on the GPU
  concat_pinned   ``collate_fn`` concatenates the points on the host into one tensor with an int64 offsets tensor
                  (batch + 1) and the labels; ``DataLoader(..., pin_memory=True)``; each
                  ``.to(device, non_blocking=True)``; the ``batch`` vector made on the GPU from the offsets
                  (``repeat_interleave`` with ``output_size``)
  padded          ``collate_fn`` pads the batch with ``pad_sequence`` to its largest sample (zeros) and builds a bool
                  mask (batch x longest); padded points, mask and labels ``.to(device)`` (``pin_memory=False``); on the
                  GPU ``mask.nonzero(as_tuple=True)`` gives the real points in order and their ``batch`` vector
  workers         as concat_pinned with ``num_workers=--workers`` (2) worker processes collating (started each epoch,
                  not persistent: the iterator draws its base seed from g at every epoch's start as the single-process
                  loader's does, so the order stays that of as_written) and the loader's pin thread pinning
  dataset_on_gpu  every sample concatenated once on the host and moved to the GPU at the start of the loop, with the
                  samples' starts, sizes and labels; each step's indices drawn by ``DataLoader(range(n), batch_size=32,
                  shuffle=True, generator=g)`` (the same draws), ``idx.to(device)`` and the batch's points gathered on
                  the GPU (the step's point count from the sizes kept on the host: no read back)
"""

import copy
import math
import sys

import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, Dataset

from harness import parse, report

MODES = ("as_written", "concat_pinned", "padded", "workers", "dataset_on_gpu")
SEED = 0  # the shuffling generator's


class PointClouds(Dataset):
    """Point clouds held in memory, one numpy array each, with a label each."""

    def __init__(self, points: list, labels: np.ndarray):
        self.points, self.labels = points, labels

    def __len__(self):
        return len(self.points)

    def __getitem__(self, i):
        return torch.from_numpy(self.points[i]), int(self.labels[i])


def collate_list(batch):
    """Samples of different sizes cannot be stacked: a list of point tensors, and the labels."""
    points = [p for p, _ in batch]
    labels = torch.tensor([y for _, y in batch])
    return points, labels


def collate_concat(batch):
    """Every sample's points in one tensor, the offsets where each starts (and where the last ends), the labels."""
    points = [p for p, _ in batch]
    offsets = torch.zeros(len(points) + 1, dtype=torch.int64)
    offsets[1:] = torch.tensor([len(p) for p in points]).cumsum(0)
    return torch.cat(points), offsets, torch.tensor([y for _, y in batch])


def collate_padded(batch):
    """The points padded with zeros to the batch's largest sample, a bool mask of the real ones, the labels."""
    points = [p for p, _ in batch]
    padded = pad_sequence(points, batch_first=True)
    lengths = torch.tensor([len(p) for p in points])
    mask = torch.arange(padded.shape[1])[None, :] < lengths[:, None]
    return padded, mask, torch.tensor([y for _, y in batch])


class PointNet(nn.Module):
    """A shared per-point MLP, a max pool over each sample's points, a classification head."""

    def __init__(self, channels: int, width: int, classes: int):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(channels, 64), nn.ReLU(), nn.Linear(64, 128), nn.ReLU(),
                                 nn.Linear(128, width), nn.ReLU())
        self.head = nn.Sequential(nn.Linear(width, 128), nn.ReLU(), nn.Linear(128, classes))

    def forward(self, x, batch, num_samples: int):
        h = self.mlp(x)  # (points, width)
        pooled = h.new_zeros(num_samples, h.shape[1]).scatter_reduce(
            0, batch[:, None].expand_as(h), h, reduce="amax", include_self=False)
        return self.head(pooled)


def make_data(n: int, lo: int, hi: int, features: int, classes: int):
    """``n`` point clouds of seeded sizes in [lo, hi]: coordinates standard normal scaled by the class's extent,
    features the class's tint plus noise; each sample its own array, as loaded from its own file."""
    rng = np.random.default_rng(0)
    lengths = rng.integers(lo, hi + 1, size=n)
    labels = rng.integers(0, classes, size=n)
    extent = rng.uniform(0.5, 1.5, size=(classes, 3)).astype(np.float32)
    tint = rng.uniform(0.0, 1.0, size=(classes, features)).astype(np.float32)
    flat = rng.standard_normal((int(lengths.sum()), 3 + features), dtype=np.float32)
    owner = np.repeat(labels, lengths)
    flat[:, :3] *= extent[owner]
    flat[:, 3:] *= 0.1
    flat[:, 3:] += tint[owner]
    points = [a.copy() for a in np.split(flat, np.cumsum(lengths)[:-1])]
    return points, labels.astype(np.int64), lengths.astype(np.int64)


def main():
    args = parse(MODES, __doc__, samples=4096, min_points=256, max_points=4096, features=3, classes=10, batch=32,
                 epochs=3, width=256, workers=2)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    n, B, E = args.samples, args.batch, args.epochs
    if n < 1 or B < 1 or E < 1 or not 1 <= args.min_points <= args.max_points or args.workers < 1:
        sys.exit(f"point_clouds: {n} samples of {args.min_points} to {args.max_points} points, batches of {B}, "
                 f"{E} epochs, {args.workers} workers: need a sample, a batch, an epoch, a point and a worker")
    points, labels, lengths = make_data(n, args.min_points, args.max_points, args.features, args.classes)
    sums = np.array([a.sum(dtype=np.float64) for a in points])  # each sample's, for the check after the loop
    ds = PointClouds(points, labels)
    per_epoch = -(-n // B)
    C = 3 + args.features

    torch.manual_seed(0)
    model = PointNet(C, args.width, args.classes).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()

    # cuBLAS's and Adam's first calls, on a copy: the real model and optimizer untouched
    spare = copy.deepcopy(model)
    spare_opt = torch.optim.Adam(spare.parameters(), lr=1e-3)
    m = min(B, n)
    pts = int(lengths[:m].sum())
    out = loss_fn(spare(torch.zeros((pts, C), device=device),
                        torch.zeros(pts, dtype=torch.int64, device=device), m),
                  torch.zeros(m, dtype=torch.int64, device=device))
    out.backward()
    spare_opt.step()
    del spare, spare_opt, out

    def loop():
        g = torch.Generator().manual_seed(SEED)
        seen = torch.zeros((E * per_epoch, 4), dtype=torch.float64, device=device)
        losses = []  # every step's loss, as a Python float, in step order
        s = 0

        def train_step(x, batch, y):
            nonlocal s
            # the batch's fingerprint, checked after the loop
            seen[s, 0] = x.sum(dtype=torch.float64)
            seen[s, 1] = y.sum()
            seen[s, 2] = (x.sum(1, dtype=torch.float64) * batch).sum()
            seen[s, 3] = batch.sum()
            s += 1
            optimizer.zero_grad()
            loss = loss_fn(model(x, batch, len(y)), y)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())

        model.train()
        if args.mode == "as_written":
            loader = DataLoader(ds, batch_size=B, shuffle=True, generator=g, collate_fn=collate_list)
            for epoch in range(E):
                for pts, y in loader:
                    pts = [p.to(device) for p in pts]
                    y = y.to(device)
                    x = torch.cat(pts)
                    batch = torch.cat([torch.full((len(p),), i, dtype=torch.int64, device=device)
                                       for i, p in enumerate(pts)])
                    train_step(x, batch, y)
        elif args.mode in ("concat_pinned", "workers"):
            loader = DataLoader(ds, batch_size=B, shuffle=True, generator=g, collate_fn=collate_concat,
                                pin_memory=True, num_workers=args.workers if args.mode == "workers" else 0)
            for epoch in range(E):
                for x, offsets, y in loader:
                    total = x.shape[0]
                    x = x.to(device, non_blocking=True)
                    offsets = offsets.to(device, non_blocking=True)
                    y = y.to(device, non_blocking=True)
                    batch = torch.repeat_interleave(torch.arange(len(y), device=device), offsets.diff(),
                                                    output_size=total)
                    train_step(x, batch, y)
        elif args.mode == "padded":
            loader = DataLoader(ds, batch_size=B, shuffle=True, generator=g, collate_fn=collate_padded)
            for epoch in range(E):
                for padded, mask, y in loader:
                    padded, mask, y = padded.to(device), mask.to(device), y.to(device)
                    rows, cols = mask.nonzero(as_tuple=True)  # row-major: sample after sample, points in order
                    train_step(padded[rows, cols], rows, y)
        else:  # dataset_on_gpu
            flat = torch.from_numpy(np.concatenate(points)).to(device)
            starts_host = np.cumsum(lengths) - lengths
            starts = torch.from_numpy(starts_host).to(device)
            sizes = torch.from_numpy(lengths).to(device)
            labels_gpu = torch.from_numpy(labels).to(device)
            index_loader = DataLoader(range(n), batch_size=B, shuffle=True, generator=g)
            for epoch in range(E):
                for idx in index_loader:
                    total = int(lengths[idx.numpy()].sum())  # the host's own metadata
                    idx = idx.to(device)
                    counts = sizes[idx]
                    batch = torch.repeat_interleave(torch.arange(len(idx), device=device), counts,
                                                    output_size=total)
                    first = torch.cumsum(counts, 0) - counts  # where each sample starts in the batch
                    src = starts[idx][batch] + torch.arange(total, device=device) - first[batch]
                    train_step(flat[src], batch, labels_gpu[idx])

        check_batches(seen.cpu().numpy(), s)
        if not all(math.isfinite(v) for v in losses):
            sys.exit(f"point_clouds: {sum(not math.isfinite(v) for v in losses)} losses are not finite")
        loss_sum = 0.0
        for v in losses:
            loss_sum += v
        param_sum = sum(p.detach().double().sum().item() for p in model.parameters())
        return loss_sum + param_sum

    def check_batches(seen: np.ndarray, steps: int) -> None:
        """Every step's batch fingerprint against a reference loader's batches, summed on the host; exit 1."""
        if steps != E * per_epoch:
            sys.exit(f"point_clouds: {steps} training steps, {E} epochs of {per_epoch} batches expected")
        ref = DataLoader(range(n), batch_size=B, shuffle=True, generator=torch.Generator().manual_seed(SEED))
        s = 0
        for epoch in range(E):
            drawn = []
            for idx in ref:
                idx = idx.numpy()
                drawn.append(idx)
                pos = np.arange(len(idx))
                want = (float(sums[idx].sum()), float(labels[idx].sum()), float((pos * sums[idx]).sum()),
                        float((pos * lengths[idx]).sum()))
                got = tuple(float(v) for v in seen[s])
                ok = all(math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6) for a, b in zip(got[::2], want[::2])) \
                    and got[1] == want[1] and got[3] == want[3]
                if not ok:
                    sys.exit(f"point_clouds: epoch {epoch}'s step {s}: its batch's fingerprint (points, labels, "
                             f"points by position, positions) is {got}, the reference batch's {want}")
                s += 1
            if not np.array_equal(np.sort(np.concatenate(drawn)), np.arange(n)):
                sys.exit(f"point_clouds: the reference loader's epoch {epoch} is not a permutation of the samples")

    report(args, loop, "point_clouds")


if __name__ == "__main__":
    main()
