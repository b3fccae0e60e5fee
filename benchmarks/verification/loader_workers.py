"""Training from a DataLoader over a map-style Dataset that builds each sample on the host, as the tutorials write it
and already at its best: 10240 images held as decoded uint8 (64 x 64 x 3, 120 MiB), each sample converted to a
3 x 64 x 64 float32 tensor, normalised per channel and flipped on odd indices in ``__getitem__``; batches of 64
(3 MiB); ``DataLoader(num_workers=4, pin_memory=True, shuffle=True)`` with a seeded generator; each batch
``.to(device, non_blocking=True)``; a six-convolution network, cross-entropy, SGD; 2 epochs. The loss is summed on
the GPU and read once at the end (the checksum).

    python3 loader_workers.py [--mode MODE] [--samples 10240] [--batch 64] [--epochs 2] [--width 64]

Modes (the same batches in the same order, the same updates, the same checksum):
  as_written  ``DataLoader(..., num_workers=4, pin_memory=True)``, ``.to(device, non_blocking=True)``: four worker
              processes build the batches, the loader's pin thread copies each into pinned memory, the uploads
              are asynchronous
  unpinned    ``pin_memory=False`` and ``.to(device)`` (a blocking copy from pageable memory each batch)
  workers0    ``num_workers=0`` (the loop's own thread builds and pins every batch), otherwise as written
"""

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

from harness import parse, report

MODES = ("as_written", "unpinned", "workers0")
SIDE, CLASSES, WORKERS = 64, 10, 4
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


class Images(Dataset):
    """Decoded images (uint8, height x width x channel) made into normalised float32 tensors, one per sample."""

    def __init__(self, raw: np.ndarray):
        self.raw = raw
        self.mean = torch.tensor(MEAN).view(3, 1, 1)
        self.std = torch.tensor(STD).view(3, 1, 1)

    def __len__(self):
        return len(self.raw)

    def __getitem__(self, i):
        x = torch.from_numpy(self.raw[i]).permute(2, 0, 1).float().div_(255)
        x = (x - self.mean) / self.std
        if i % 2:
            x = x.flip(-1)
        return x, i % CLASSES


def make_images(n: int) -> np.ndarray:
    return np.random.default_rng(0).integers(0, 256, (n, SIDE, SIDE, 3), dtype=np.uint8)


def make_model(width: int) -> nn.Module:
    """Three stages of two 3x3 convolutions (width, 2x, 4x channels), pooled between, a linear head."""
    layers, c_in = [], 3
    for c in (width, 2 * width, 4 * width):
        layers += [nn.Conv2d(c_in, c, 3, padding=1), nn.ReLU(), nn.Conv2d(c, c, 3, padding=1), nn.ReLU(),
                   nn.MaxPool2d(2)]
        c_in = c
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c_in, CLASSES))


def make_loader(mode: str, data: Dataset, batch: int) -> DataLoader:
    return DataLoader(data, batch_size=batch, shuffle=True, generator=torch.Generator().manual_seed(0),
                      num_workers=0 if mode == "workers0" else WORKERS, pin_memory=mode != "unpinned")


def main():
    args = parse(MODES, __doc__, samples=10240, batch=64, epochs=2, width=64)
    device = torch.device("cuda")
    torch.backends.cudnn.deterministic = True  # the same updates in every mode (the checksum)
    loader = make_loader(args.mode, Images(make_images(args.samples)), args.batch)
    torch.manual_seed(0)
    model = make_model(args.width).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    blocking = args.mode == "unpinned"

    def loop():
        total = torch.zeros((), device=device, dtype=torch.float64)
        for _ in range(args.epochs):
            for x, y in loader:
                x, y = x.to(device, non_blocking=not blocking), y.to(device, non_blocking=not blocking)
                opt.zero_grad()
                loss = loss_fn(model(x), y)
                loss.backward()
                opt.step()
                total += loss.detach().double()
        return total.item()

    report(args, loop, "loader_workers")


if __name__ == "__main__":
    main()
