"""A recommender's training step, as its users write it: each batch is a dict of 24 small tensors (15 sparse id
features, int64 of 1 to 8 ids a sample; 8 dense features, float32 of 1 to 16 values a sample; the float32 label),
4 to 64 KiB each at 1024 samples (0.64 MiB a batch), that the host's feature builder refills every step and the
loop moves with ``{k: v.to(device) for k, v in batch.items()}``; a fused embedding bag over the sparse features,
an MLP over the dense ones, a top MLP, BCE loss, SGD. The loss is summed on the GPU and read once at the end (the
checksum).

    python3 dict_batches.py [--mode MODE] [--steps 1000] [--batch 1024]

Modes (the same batches, the same updates, the same checksum):
  as_written   the batch's tensors pageable; ``{k: v.to(device) for k, v in batch.items()}`` (24 copies, each
               waited on)
  pinned_each  each of the batch's tensors pinned once, where it is allocated, and refilled in place;
               ``{k: v.to(device, non_blocking=True) ...}``; an event recorded after the copies, waited on before the
               builder refills the tensors (so the host stays a step ahead of the GPU)
  packed       the batch's tensors views of one pinned flat byte buffer (each at a 512-byte offset, viewed as its
               dtype and shape), the GPU's batch the same views of one flat GPU buffer: one
               ``gpu_flat.copy_(host_flat, non_blocking=True)`` a step, the same event
"""

import torch
import torch.nn as nn

from harness import parse, report

MODES = ("as_written", "pinned_each", "packed")
SPARSE_IDS = (1, 2, 4, 8) * 3 + (1, 2, 4)  # ids a sample of each of the 15 sparse features
DENSE_DIMS = (1, 2, 4, 8, 16, 16, 8, 4)  # values a sample of each of the 8 dense features
ROWS, DIM = 4096, 16  # each sparse feature's embedding table
ALIGN = 512  # bytes: each packed tensor's offset in the flat buffers (the caching allocator's own alignment)


def layout(batch: int) -> dict:
    """Each feature's (shape, dtype), in the batch's order."""
    out = {f"sparse_{i:02d}": ((batch, k), torch.int64) for i, k in enumerate(SPARSE_IDS)}
    out.update({f"dense_{i}": ((batch, d), torch.float32) for i, d in enumerate(DENSE_DIMS)})
    out["label"] = ((batch,), torch.float32)
    return out


def sources(shapes: dict) -> dict:
    """What the feature builder draws each feature from (fixed, made once)."""
    g = torch.Generator().manual_seed(0)
    out = {}
    for name, (shape, dtype) in shapes.items():
        if dtype == torch.int64:
            out[name] = torch.randint(0, ROWS, shape, generator=g)
        elif name == "label":
            out[name] = torch.randint(0, 2, shape, generator=g).float()
        else:
            out[name] = torch.randn(shape, generator=g)
    return out


def fill(batch: dict, src: dict, step: int) -> None:
    """The feature builder: this step's values written into the batch's own tensors."""
    for name, t in batch.items():
        if t.dtype == torch.int64:
            torch.add(src[name], step * 7919, out=t).remainder_(ROWS)
        elif name == "label":
            torch.add(src[name], step, out=t).remainder_(2)
        else:
            torch.mul(src[name], 1 + (step % 16) * 0.01, out=t)


def packed_views(flat, shapes: dict) -> dict:
    """Views of the flat byte buffer ``flat`` in each feature's dtype and shape, each at an ALIGN offset."""
    out, at = {}, 0
    for name, (shape, dtype) in shapes.items():
        n = torch.Size(shape).numel() * torch.empty((), dtype=dtype).element_size()
        out[name] = flat[at:at + n].view(dtype).view(shape)
        at += -(-n // ALIGN) * ALIGN
    return out


def packed_bytes(shapes: dict) -> int:
    total = 0
    for shape, dtype in shapes.values():
        total += -(-torch.Size(shape).numel() * torch.empty((), dtype=dtype).element_size() // ALIGN) * ALIGN
    return total


class Ranker(nn.Module):
    """One fused embedding bag over the sparse features (each its own rows of the table), an MLP over the dense
    ones, a top MLP over both."""

    def __init__(self, batch: int):
        super().__init__()
        n = len(SPARSE_IDS)
        self.emb = nn.EmbeddingBag(n * ROWS, DIM, mode="sum")
        self.bottom = nn.Sequential(nn.Linear(sum(DENSE_DIMS), 64), nn.ReLU())
        self.top = nn.Sequential(nn.Linear(64 + n * DIM, 256), nn.ReLU(), nn.Linear(256, 1))
        # each sparse feature's ids moved to its rows of the table; a bag per (sample, feature)
        table = torch.tensor([f * ROWS for f, k in enumerate(SPARSE_IDS) for _ in range(k)])
        starts = torch.tensor([0, *SPARSE_IDS[:-1]]).cumsum(0)
        bags = (torch.arange(batch).unsqueeze(1) * sum(SPARSE_IDS) + starts).reshape(-1)
        self.register_buffer("table_offsets", table.unsqueeze(0))
        self.register_buffer("bag_offsets", bags)

    def forward(self, batch: dict):
        ids = torch.cat([v for k, v in batch.items() if k.startswith("sparse_")], dim=1) + self.table_offsets
        pooled = self.emb(ids.reshape(-1), self.bag_offsets).view(ids.shape[0], -1)
        dense = self.bottom(torch.cat([v for k, v in batch.items() if k.startswith("dense_")], dim=1))
        return self.top(torch.cat([dense, pooled], dim=1)).squeeze(1)


def host_batch(mode: str, shapes: dict):
    """The batch's host tensors as the mode allocates them, and the flat buffer they view (packed)."""
    if mode == "packed":
        flat = torch.empty(packed_bytes(shapes), dtype=torch.uint8, pin_memory=True)
        return packed_views(flat, shapes), flat
    return {k: torch.empty(s, dtype=d, pin_memory=mode == "pinned_each") for k, (s, d) in shapes.items()}, None


def main():
    args = parse(MODES, __doc__, steps=1000, batch=1024)
    device = torch.device("cuda")
    shapes = layout(args.batch)
    src = sources(shapes)
    batch, host_flat = host_batch(args.mode, shapes)
    if args.mode == "packed":
        gpu_flat = torch.empty(host_flat.numel(), dtype=torch.uint8, device=device)
        gpu_batch = packed_views(gpu_flat, shapes)
    torch.manual_seed(0)
    model = Ranker(args.batch).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    loss_fn = nn.BCEWithLogitsLoss()
    asynchronous = args.mode != "as_written"
    copied = torch.cuda.Event()  # the step's copies have left the host's tensors (asynchronous modes)

    def to_gpu():
        if args.mode == "as_written":
            return {k: v.to(device) for k, v in batch.items()}
        if args.mode == "pinned_each":
            return {k: v.to(device, non_blocking=True) for k, v in batch.items()}
        gpu_flat.copy_(host_flat, non_blocking=True)
        return gpu_batch

    def loop():
        total = torch.zeros((), device=device, dtype=torch.float64)
        for step in range(args.steps):
            if asynchronous:
                copied.synchronize()  # before the builder overwrites what the last step's copies read
            fill(batch, src, step)
            gpu = to_gpu()
            if asynchronous:
                copied.record()
            opt.zero_grad()
            loss = loss_fn(model(gpu), gpu["label"])
            loss.backward()
            opt.step()
            total += loss.detach().double()
        return total.item()

    report(args, loop, "dict_batches")


if __name__ == "__main__":
    main()
