"""Training a click-through-rate model (DLRM-like, small) on samples with multi-hot sparse features, as PyTorch users
write it: ``--samples`` samples (120000 by default), each a tuple as a user's Dataset returns it after parsing: a
np.float32 array of ``--dense`` 13 dense features (``log1p`` of exponential counts, as Criteo's), a Python list of
``--features`` 8 np.int64 arrays of ids (feature ``f`` drawn from a table of ``--rows // (f + 1)`` rows: 1M, 500k,
333k, ... 125k; each list 1 to ``--max-len`` 40 ids long, uniformly; the ids skewed: rank ``k`` drawn with
probability about 1/(k+1), scattered over the table by a multiplicative hash) and a 0./1. label (a hidden logistic
teacher over the ids and the dense features: about 32% clicks); all seeded (numpy), each array its own copy, made
sample after sample before the timed loop (about 535 MiB of Python and numpy objects). The model on the GPU: one
``nn.EmbeddingBag(rows, --dim 32, mode="sum")`` per feature (uniform(-sqrt(1/rows), sqrt(1/rows)) as DLRM's, 332
MiB in all, dense gradients), an MLP over the 8 bags and the dense features concatenated (269-``--hidden`` 512-256-1,
ReLU), ``BCEWithLogitsLoss``, ``torch.optim.Adagrad(lr=--lr 0.01)``; seeded with ``torch.manual_seed(0)``.
``DataLoader(ds, batch_size=--batch 2048, shuffle=True, generator=g)`` (g seeded with 0; 59 batches an epoch, the
last short: 1232 samples) with a custom ``collate_fn``: each feature's ids concatenated into one flat int64 tensor
(about 42000 ids, 330 KiB a feature) with its bags' offsets (``torch.tensor`` of a Python list, cumsum), the dense
features stacked, the labels; ``--epochs`` 2 (118 steps). Before the loop one training step of a throw-away copy of
the model and its own Adagrad on a small batch keeps cuBLAS's and the kernels' first-call set-up out of the timing.

Identity: every mode hands the model the same tensors (the same ids, offsets, dense features and labels, of the same
dtypes, contiguous) in the same order, so every mode runs the same kernels on bit-identical inputs (EmbeddingBag's
``sum`` forward and backward are deterministic, the dense gradients and Adagrad elementwise) and the modes agree to the
last bit on one machine; the checksum is the float64 sum, in step order, of every step's float32 loss plus the float64
sum of every final parameter (tables and MLP): a bit-level difference of a GPU atomic would move it by far less than
its 1e-4 tolerance. Checks (a failure exits 1): each step stores on the GPU its batch's fingerprint (the ids' sums
weighted by feature, the offsets' sum, the dense features' float64 sum, that sum weighted by each sample's position,
the labels' sum), read once after the loop and compared with the host's sums over a reference DataLoader's batches (a
fresh generator of the same seed): a bag cut at the wrong offset, a stale buffer, a batch out of order or from
another epoch shows; the losses must be finite.

    python3 sparse_features.py [--mode MODE] [--samples 120000] [--features 8] [--rows 1000000] [--max-len 40]
                               [--dense 13] [--dim 32] [--hidden 512] [--batch 2048] [--epochs 2] [--lr 0.01]
                               [--workers 4]

Modes (the same batches in the same order, the same model inputs, the same checksum):
  as_written      ``num_workers=0``, ``pin_memory=False``; the 18 tensors of a batch (8 id tensors, 8 offsets, dense,
                  labels) each ``.to(device)`` from pageable memory; ``running_loss += loss.item()`` each step
  pinned_loader   as as_written with ``DataLoader(..., pin_memory=True)`` (the loader copies each collated tensor into
                  pinned memory, in the main process) and ``.to(device, non_blocking=True)``
  workers         as pinned_loader with ``num_workers=--workers`` (4) collating in worker processes,
                  ``persistent_workers=True``; a persistent iterator draws no new base seed from ``g`` at an epoch's
                  start as a fresh one does, so that one draw is made by hand before each later epoch
                  (``torch.empty((), dtype=torch.int64).random_(generator=g)``): the shuffle order stays as_written's
  packed          the collate_fn writes everything into one of two pinned int64 buffers preallocated at the loop's
                  start (the 8 features' ids with ``np.concatenate(..., out=)``, the 8 offsets, then the dense
                  features and labels through a float32 view of the buffer's tail): one ``.to(device,
                  non_blocking=True)`` a step, the model's tensors views of it on the GPU; an event recorded after
                  the copy and synchronised before that buffer is written again; ``loss.item()`` each step
  dataset_on_gpu  the dataset converted once at the loop's start into flat CSR-style tensors (all ids of all features
                  in one int64 tensor, each sample's start and length per feature, the dense features and labels)
                  moved to the GPU (171 MiB); each step's indices drawn by ``DataLoader(range(n), batch_size=2048,
                  shuffle=True, generator=g)`` (the same draws), ``idx.to(device)``, the bags gathered on the GPU
                  (``repeat_interleave`` with ``output_size`` from the lengths kept on the host: no read-back) and
                  their offsets made there by ``cumsum``; ``loss.item()`` each step
  no_item         as_written with the loss kept on the GPU (``loss_sum += loss.detach().double()``), read once after
                  the loop: no ``loss.item()`` wait each step (the pageable uploads still wait for their copies)
"""

import copy
import math
import sys

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

from harness import parse, report

MODES = ("as_written", "pinned_loader", "workers", "packed", "dataset_on_gpu", "no_item")
SEED = 0  # the shuffling generator's


class ClickLogs(Dataset):
    """Parsed click logs held in memory: per sample the dense features, one id array per sparse feature, a label."""

    def __init__(self, dense: list, sparse: list, labels: list):
        self.dense, self.sparse, self.labels = dense, sparse, labels

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.dense[i], self.sparse[i], self.labels[i]


def collate(batch):
    """Each feature's bags as one flat id tensor and the offsets where each bag starts (EmbeddingBag's input)."""
    dense = torch.from_numpy(np.stack([s[0] for s in batch]))
    ids, offsets = [], []
    for f in range(len(batch[0][1])):
        bags = [s[1][f] for s in batch]
        ids.append(torch.from_numpy(np.concatenate(bags)))
        offsets.append(torch.tensor([0] + [len(b) for b in bags[:-1]]).cumsum(0))
    labels = torch.tensor([s[2] for s in batch], dtype=torch.float32)
    return dense, ids, offsets, labels


class PackedCollate:
    """Collates a batch into one of two preallocated pinned int64 buffers: [ids of feature 0 | ... | ids of feature
    F-1 | offsets (F x b) | dense (b x D) and labels (b) as float32]; returns the buffer's used part and its layout."""

    def __init__(self, batch: int, features: int, max_len: int, dense: int):
        self.F, self.D = features, dense
        words = batch * features * max_len + batch * features + (batch * (dense + 1) + 1) // 2
        self.bufs = [torch.empty(words, dtype=torch.int64, pin_memory=True) for _ in range(2)]
        self.events = [None, None]  # the upload that last read each buffer
        self.k = 0

    def __call__(self, batch):
        k, self.k = self.k, self.k ^ 1
        if self.events[k] is not None:
            self.events[k].synchronize()  # its last upload has read it
        buf = self.bufs[k]
        arr = buf.numpy()
        b, F, D = len(batch), self.F, self.D
        pos, sizes = 0, []
        lengths = np.empty((F, b), dtype=np.int64)
        for f in range(F):
            bags = [s[1][f] for s in batch]
            lengths[f] = [len(x) for x in bags]
            n = int(lengths[f].sum())
            np.concatenate(bags, out=arr[pos:pos + n])
            pos += n
            sizes.append(n)
        offs = arr[pos:pos + F * b].reshape(F, b)
        offs[:, 0] = 0
        np.cumsum(lengths[:, :-1], axis=1, out=offs[:, 1:])
        fo = pos + F * b
        words = (b * (D + 1) + 1) // 2
        fl = buf[fo:fo + words].view(torch.float32).numpy()
        np.stack([s[0] for s in batch], out=fl[:b * D].reshape(b, D))
        fl[b * D:b * D + b] = [s[2] for s in batch]
        return k, buf[:fo + words], sizes, b

    def views(self, g: torch.Tensor, sizes: list, b: int):
        """The model's tensors as views of the uploaded buffer ``g``."""
        ids, pos = [], 0
        for n in sizes:
            ids.append(g[pos:pos + n])
            pos += n
        offs = g[pos:pos + self.F * b].view(self.F, b)
        fl = g[pos + self.F * b:].view(torch.float32)
        dense = fl[:b * self.D].view(b, self.D)
        labels = fl[b * self.D:b * self.D + b]
        return dense, ids, list(offs.unbind(0)), labels


class SmallDLRM(nn.Module):
    """One EmbeddingBag (sum) per sparse feature; an MLP over the pooled bags and the dense features."""

    def __init__(self, table_rows: list, dim: int, dense: int, hidden: int):
        super().__init__()
        self.bags = nn.ModuleList(nn.EmbeddingBag(r, dim, mode="sum") for r in table_rows)
        for bag, r in zip(self.bags, table_rows):
            nn.init.uniform_(bag.weight, -math.sqrt(1 / r), math.sqrt(1 / r))
        self.mlp = nn.Sequential(nn.Linear(len(table_rows) * dim + dense, hidden), nn.ReLU(),
                                 nn.Linear(hidden, hidden // 2), nn.ReLU(), nn.Linear(hidden // 2, 1))

    def forward(self, dense, ids, offsets):
        pooled = [bag(i, o) for bag, i, o in zip(self.bags, ids, offsets)]
        return self.mlp(torch.cat(pooled + [dense], 1)).squeeze(1)


def make_data(n: int, features: int, rows: int, max_len: int, dense_n: int):
    """The parsed samples (Python lists of numpy arrays, each its own copy) and the host's reference sums: each
    sample's id sums and lengths per feature, its dense features' float64 sum, its label."""
    rng = np.random.default_rng(0)
    table_rows = [max(1, rows // (f + 1)) for f in range(features)]
    lens = rng.integers(1, max_len + 1, size=(n, features))
    dense = np.log1p(rng.standard_exponential((n, dense_n), dtype=np.float32) * 4.0).astype(np.float32)
    score = (dense - dense.mean(0)) @ (rng.standard_normal(dense_n).astype(np.float32) * 0.5) - 1.0
    idsum = np.empty((n, features), dtype=np.int64)
    per_feature = []
    for f, R in enumerate(table_rows):
        rank = (R ** rng.random(int(lens[:, f].sum()))).astype(np.int64) - 1  # P(rank k) ~ 1 / (k + 1)
        ids = (rank * 2654435761) % R
        starts = np.cumsum(lens[:, f]) - lens[:, f]
        hidden = rng.standard_normal(R).astype(np.float32)
        score += np.add.reduceat(hidden[ids], starts) / lens[:, f] * 0.5
        idsum[:, f] = np.add.reduceat(ids, starts)
        per_feature.append((ids, starts.tolist(), (starts + lens[:, f]).tolist()))
    labels = (rng.random(n) < 1 / (1 + np.exp(-score))).astype(np.float32)
    dense_list, sparse_list = [], []
    for i in range(n):  # sample after sample, as a parser makes them
        dense_list.append(dense[i].copy())
        sparse_list.append([ids[a[i]:b[i]].copy() for ids, a, b in per_feature])
    ref = {"idsum": idsum, "lens": lens.astype(np.int64), "dense": dense.sum(1, dtype=np.float64),
           "labels": labels.astype(np.float64)}
    return ClickLogs(dense_list, sparse_list, [float(y) for y in labels]), table_rows, ref


def main():
    args = parse(MODES, __doc__, samples=120000, features=8, rows=1000000, max_len=40, dense=13, dim=32, hidden=512,
                 batch=2048, epochs=2, lr=0.01, workers=4)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    n, F, B, E, D = args.samples, args.features, args.batch, args.epochs, args.dense
    if min(n, F, B, E, D, args.dim, args.max_len, args.rows, args.workers) < 1 or args.hidden < 2:
        sys.exit("sparse_features: every size must be positive (--hidden at least 2)")
    ds, table_rows, ref = make_data(n, F, args.rows, args.max_len, D)
    per_epoch = -(-n // B)

    torch.manual_seed(0)
    model = SmallDLRM(table_rows, args.dim, D, args.hidden).to(device)
    optimizer = torch.optim.Adagrad(model.parameters(), lr=args.lr)
    loss_fn = nn.BCEWithLogitsLoss()

    # cuBLAS's, EmbeddingBag's and Adagrad's first calls, on a copy: the real model and optimizer untouched
    spare = copy.deepcopy(model)
    spare_opt = torch.optim.Adagrad(spare.parameters(), lr=args.lr)
    dense0, ids0, offs0, y0 = collate([ds[i] for i in range(min(n, 64))])
    out = loss_fn(spare(dense0.to(device), [t.to(device) for t in ids0], [t.to(device) for t in offs0]),
                  y0.to(device))
    out.backward()
    spare_opt.step()
    del spare, spare_opt, out

    feature_w = torch.arange(1, F + 1, dtype=torch.float64, device=device)
    position_w = torch.arange(B, dtype=torch.float64, device=device)

    def loop():
        g = torch.Generator().manual_seed(SEED)
        seen = torch.zeros((E * per_epoch, 5), dtype=torch.float64, device=device)
        running_loss = 0.0  # every step's loss.item() added in step order (all modes but no_item)
        loss_sum = torch.zeros((), dtype=torch.float64, device=device)  # no_item's: the same sum, on the GPU
        s = 0

        def train_step(dense, ids, offsets, labels):
            nonlocal s
            # the batch's fingerprint, checked after the loop
            b = len(labels)
            row = dense.sum(1, dtype=torch.float64)
            seen[s] = torch.stack([(torch.stack([t.sum() for t in ids]).double() * feature_w).sum(),
                                   torch.stack([o.sum() for o in offsets]).sum().double(), row.sum(),
                                   (row * position_w[:b]).sum(), labels.sum(dtype=torch.float64)])
            s += 1
            optimizer.zero_grad()
            loss = loss_fn(model(dense, ids, offsets), labels)
            loss.backward()
            optimizer.step()
            return loss

        model.train()
        if args.mode in ("as_written", "no_item", "pinned_loader", "workers"):
            pin = args.mode in ("pinned_loader", "workers")
            workers = args.workers if args.mode == "workers" else 0
            loader = DataLoader(ds, batch_size=B, shuffle=True, generator=g, collate_fn=collate, pin_memory=pin,
                                num_workers=workers, persistent_workers=workers > 0)
            for epoch in range(E):
                if epoch and workers:
                    torch.empty((), dtype=torch.int64).random_(generator=g)  # the draw a fresh iterator makes
                for dense, ids, offsets, labels in loader:
                    dense = dense.to(device, non_blocking=pin)
                    ids = [t.to(device, non_blocking=pin) for t in ids]
                    offsets = [t.to(device, non_blocking=pin) for t in offsets]
                    labels = labels.to(device, non_blocking=pin)
                    loss = train_step(dense, ids, offsets, labels)
                    if args.mode == "no_item":
                        loss_sum += loss.detach().double()
                    else:
                        running_loss += loss.item()
        elif args.mode == "packed":
            packer = PackedCollate(B, F, args.max_len, D)
            loader = DataLoader(ds, batch_size=B, shuffle=True, generator=g, collate_fn=packer)
            for epoch in range(E):
                for k, buf, sizes, b in loader:
                    gbuf = buf.to(device, non_blocking=True)
                    packer.events[k] = torch.cuda.Event()
                    packer.events[k].record()
                    loss = train_step(*packer.views(gbuf, sizes, b))
                    running_loss += loss.item()
        else:  # dataset_on_gpu
            lens_host = np.array([[len(a) for a in bags] for bags in ds.sparse], dtype=np.int64)  # (n, F)
            values = np.concatenate([a for f in range(F) for a in (bags[f] for bags in ds.sparse)])
            starts_host = (np.cumsum(lens_host.T.reshape(-1)) - lens_host.T.reshape(-1)).reshape(F, n).T
            values = torch.from_numpy(values).to(device)
            starts = torch.from_numpy(np.ascontiguousarray(starts_host)).to(device)
            lens = torch.from_numpy(lens_host).to(device)
            dense_gpu = torch.from_numpy(np.stack(ds.dense)).to(device)
            labels_gpu = torch.tensor(ds.labels, dtype=torch.float32).to(device)
            index_loader = DataLoader(range(n), batch_size=B, shuffle=True, generator=g)
            for epoch in range(E):
                for idx in index_loader:
                    b = len(idx)
                    sizes = lens_host[idx.numpy()].sum(0).tolist()  # each feature's id count: the host's own
                    total = sum(sizes)
                    idx = idx.to(device)
                    seg_len = lens[idx].T.contiguous()  # (F, b): feature after feature, bags in batch order
                    seg_start = starts[idx].T.reshape(-1)
                    flat_len = seg_len.reshape(-1)
                    seg = torch.repeat_interleave(torch.arange(F * b, device=device), flat_len, output_size=total)
                    first = torch.cumsum(flat_len, 0) - flat_len  # where each bag starts in the batch's ids
                    ids_all = values[seg_start[seg] + torch.arange(total, device=device) - first[seg]]
                    ids = list(ids_all.split(sizes))
                    offsets = list((torch.cumsum(seg_len, 1) - seg_len).unbind(0))
                    loss = train_step(dense_gpu[idx], ids, offsets, labels_gpu[idx])
                    running_loss += loss.item()

        check_batches(seen.cpu().numpy(), s)
        total_loss = float(loss_sum) if args.mode == "no_item" else running_loss
        if not math.isfinite(total_loss):
            sys.exit("sparse_features: the losses are not finite")
        param_sum = sum(p.detach().double().sum().item() for p in model.parameters())
        return total_loss + param_sum

    def check_batches(seen: np.ndarray, steps: int) -> None:
        """Every step's batch fingerprint against a reference loader's batches, summed on the host; exit 1."""
        if steps != E * per_epoch:
            sys.exit(f"sparse_features: {steps} training steps, {E} epochs of {per_epoch} batches expected")
        loader = DataLoader(range(n), batch_size=B, shuffle=True, generator=torch.Generator().manual_seed(SEED))
        w = np.arange(1, F + 1, dtype=np.int64)
        s = 0
        for epoch in range(E):
            drawn = []
            for idx in loader:
                idx = idx.numpy()
                drawn.append(idx)
                lens = ref["lens"][idx]
                offs = np.cumsum(lens, 0) - lens
                rows = ref["dense"][idx]
                want = (float((ref["idsum"][idx] * w).sum()), float(offs.sum()), float(rows.sum()),
                        float((rows * np.arange(len(idx))).sum()), float(ref["labels"][idx].sum()))
                got = tuple(float(v) for v in seen[s])
                ok = got[0] == want[0] and got[1] == want[1] and got[4] == want[4] and all(
                    math.isclose(got[j], want[j], rel_tol=1e-9, abs_tol=1e-6) for j in (2, 3))
                if not ok:
                    sys.exit(f"sparse_features: epoch {epoch}'s step {s}: its batch's fingerprint (ids, offsets, "
                             f"dense, dense by position, labels) is {got}, the reference batch's {want}")
                s += 1
            if not np.array_equal(np.sort(np.concatenate(drawn)), np.arange(n)):
                sys.exit(f"sparse_features: the reference loader's epoch {epoch} is not a permutation of the samples")

    report(args, loop, "sparse_features")


if __name__ == "__main__":
    main()
