"""Training from a DataLoader whose samples are dicts, as the tutorials write it: an in-memory map-style Dataset of
``--samples`` records, each a dict of tensors of different dtypes and shapes ('image' float32 3 x ``--side`` x
``--side``, 'mask' uint8 ``--side`` x ``--side``, 'label' an int64 scalar, 'weights' float32 64: 208 KiB a record,
416 MiB in all, by default), ``DataLoader(batch_size=64, shuffle=True, num_workers=0)`` with a seeded generator and
the default collate (a dict of batched tensors, 13 MiB a batch); each step moves every field with
``{k: v.to(device) for k, v in batch.items()}``, then a small convolutional network (the image and the mask as four
channels, the weights beside the pooled features), cross-entropy, SGD; 2 epochs. The checksum sums each step's loss
and its batch's label and mask sums (float64, on the GPU, read once at the end): a stale or overwritten batch
changes the mask sums far beyond the tolerance (each record's mask has its own density).

    python3 dict_collate.py [--mode MODE] [--samples 2048] [--batch 64] [--epochs 2] [--side 128] [--width 32]

Modes (the same batches in the same order, the same updates, the same checksum):
  as_written     ``DataLoader(..., pin_memory=False)`` (the default), each field ``.to(device)``
  pinned_loader  ``DataLoader(..., pin_memory=True)`` (each collated batch copied into pinned memory by the loader),
                 each field ``.to(device, non_blocking=True)``
  on_gpu         every field of the whole dataset stacked (``default_collate`` of every record) and moved to the GPU
                 once, at the start of the loop; each step's batch indexed there, its indices drawn by a DataLoader
                 over ``range(len(data))`` with the same seeded generator (the same sampler order)
"""

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, default_collate

from harness import parse, report

MODES = ("as_written", "pinned_loader", "on_gpu")
CLASSES, AUX, CHUNK, SEED = 10, 64, 256, 0


class Records(Dataset):
    """Records held in memory, a dict of tensors each, returned as they are."""

    def __init__(self, records: list[dict]):
        self.records = records

    def __len__(self):
        return len(self.records)

    def __getitem__(self, i):
        return self.records[i]


def make_records(n: int, side: int) -> list[dict]:
    """``n`` records, made in chunks from one seeded generator; record i's mask has density (i % 16 + 1) / 17."""
    g = torch.Generator().manual_seed(1)
    records = []
    for start in range(0, n, CHUNK):
        k = min(CHUNK, n - start)
        images = torch.randn(k, 3, side, side, generator=g)
        noise = torch.rand(k, side, side, generator=g)
        weights = torch.randn(k, AUX, generator=g)
        for j in range(k):
            i = start + j
            records.append({"image": images[j].clone(),
                            "mask": (noise[j] < (i % 16 + 1) / 17).to(torch.uint8),
                            "label": torch.tensor(i % CLASSES, dtype=torch.int64),
                            "weights": weights[j].clone()})
    return records


class Net(nn.Module):
    """Three strided 3x3 convolutions over the image and its mask, pooled; a linear head over the pooled features
    and the record's weights."""

    def __init__(self, width: int):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(4, width, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(width, 2 * width, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(2 * width, 4 * width, 3, stride=2, padding=1), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.head = nn.Linear(4 * width + AUX, CLASSES)

    def forward(self, batch: dict) -> torch.Tensor:
        x = torch.cat([batch["image"], batch["mask"].unsqueeze(1).float()], 1)
        return self.head(torch.cat([self.features(x), batch["weights"]], 1))


def make_loader(dataset, batch: int, pin_memory: bool) -> DataLoader:
    return DataLoader(dataset, batch_size=batch, shuffle=True, generator=torch.Generator().manual_seed(SEED),
                      num_workers=0, pin_memory=pin_memory)


def main():
    args = parse(MODES, __doc__, samples=2048, batch=64, epochs=2, side=128, width=32)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.backends.cudnn.deterministic = True  # the same updates in every mode (the checksum)
    data = Records(make_records(args.samples, args.side))
    if args.mode == "on_gpu":  # the indices only: the sampler's order, each epoch, as the other modes' loader draws it
        loader = make_loader(range(len(data)), args.batch, False)
    else:
        loader = make_loader(data, args.batch, args.mode == "pinned_loader")
    torch.manual_seed(0)
    model = Net(args.width).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    def batches(whole):
        """One epoch's batches on the GPU, as the mode gets them there."""
        if args.mode == "as_written":
            for batch in loader:
                yield {k: v.to(device) for k, v in batch.items()}
        elif args.mode == "pinned_loader":
            for batch in loader:
                yield {k: v.to(device, non_blocking=True) for k, v in batch.items()}
        else:
            for idx in loader:
                idx = idx.to(device)
                yield {k: v[idx] for k, v in whole.items()}

    def loop():
        whole = None
        if args.mode == "on_gpu":  # every field of every record, stacked and moved once
            whole = {k: v.to(device) for k, v in default_collate([data[i] for i in range(len(data))]).items()}
        total = torch.zeros((), dtype=torch.float64, device=device)
        for _ in range(args.epochs):
            for batch in batches(whole):
                opt.zero_grad()
                loss = loss_fn(model(batch), batch["label"])
                loss.backward()
                opt.step()
                # the batch's own label and mask sums: were they the step's?
                total += loss.detach().double() + batch["label"].sum(dtype=torch.float64) \
                    + batch["mask"].sum(dtype=torch.float64)
        return total.item()

    report(args, loop, "dict_collate")


if __name__ == "__main__":
    main()
