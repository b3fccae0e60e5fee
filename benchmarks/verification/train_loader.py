"""Training from a DataLoader over a CPU TensorDataset, as the tutorials write it: a 1 GiB float32 dataset
(samples of 64 KiB, 256 to a 16 MiB batch), a small MLP, SGD, 3 epochs, no shuffling.

    python3 train_loader.py [--mode MODE] [--mib 1024] [--batch 256] [--epochs 3]

Modes (the same batches, the same updates, the same checksum):
  as_written           DataLoader(pin_memory=False); each batch ``.to(device)``
  loader_pinned        DataLoader(pin_memory=True) (its pin thread copies each batch into pinned memory);
                       each batch ``.to(device, non_blocking=True)``
  dataset_pinned_once  the dataset tensor pinned once (``.pin_memory()``) and sliced in batches, each slice
                       ``.to(device, non_blocking=True)`` (no DataLoader)
  dataset_on_gpu       the dataset moved to the GPU once and sliced there
"""

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from harness import parse, report

MODES = ("as_written", "loader_pinned", "dataset_pinned_once", "dataset_on_gpu")
FEATURES = 16384  # floats a sample: 64 KiB
CLASSES = 10


def make_dataset(mib: int):
    """A dataset of ``mib`` MiB: a 16 MiB block of normal samples repeated with a per-block offset (cheap to
    build, every batch different), labels from the sample's index."""
    n = mib * 2**20 // (FEATURES * 4)
    block = torch.randn(256, FEATURES, generator=torch.Generator().manual_seed(0))
    x = block.repeat(n // 256, 1)
    x += torch.arange(n // 256).repeat_interleave(256).unsqueeze(1) * 1e-3
    y = torch.arange(n) % CLASSES
    return x, y


def prepare(args, x, y, device):
    """The data as the mode keeps it, made once before the first epoch (pinned, or on the GPU)."""
    if args.mode == "as_written":
        return DataLoader(TensorDataset(x, y), batch_size=args.batch, shuffle=False)
    if args.mode == "loader_pinned":
        return DataLoader(TensorDataset(x, y), batch_size=args.batch, shuffle=False, pin_memory=True)
    if args.mode == "dataset_pinned_once":
        return x.pin_memory(), y.pin_memory()
    return x.to(device), y.to(device)


def batches(args, data, device):
    """The (inputs, labels) of one epoch on the GPU, batch after batch, as the mode gets them there."""
    if isinstance(data, DataLoader):
        blocking = args.mode == "as_written"
        for xb, yb in data:
            yield xb.to(device, non_blocking=not blocking), yb.to(device, non_blocking=not blocking)
        return
    x, y = data
    for i in range(0, len(x), args.batch):
        yield x[i:i + args.batch].to(device, non_blocking=True), y[i:i + args.batch].to(device, non_blocking=True)


def main():
    args = parse(MODES, __doc__, mib=1024, batch=256, epochs=3)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    x, y = make_dataset(args.mib)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(FEATURES, 256), nn.ReLU(), nn.Linear(256, CLASSES)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()

    def loop():
        data = prepare(args, x, y, device)
        for _ in range(args.epochs):
            for xb, yb in batches(args, data, device):
                opt.zero_grad()
                loss = loss_fn(model(xb), yb)
                loss.backward()
                opt.step()
        return sum(p.double().sum().item() for p in model.parameters())

    report(args, loop, "train_loader")


if __name__ == "__main__":
    main()
