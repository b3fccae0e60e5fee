"""Image batches cropped and flipped on the host in numpy, as a training script without a DataLoader writes it:
``--images`` uint8 images (3 x 256 x 256, held in a numpy array), each step a batch of ``--batch`` cut at a random
224 x 224 offset and flipped on odd steps (``np.ascontiguousarray``), uploaded with
``torch.from_numpy(batch).to(device)``, scaled to float on the GPU, a small convolutional network trained on it
(SGD); ``--epochs`` passes over the images in order. The offsets come from a seeded generator, the same in every
mode.

    python3 augment_batches.py [--mode MODE] [--images 1024] [--batch 128] [--epochs 3]

Modes (the same batches, the same updates, the same checksum):
  as_written       the batch cut into a fresh numpy array each step, ``torch.from_numpy(b).to(device)``
  pinned_prealloc  the batch cut into one of two preallocated pinned tensors (``np.copyto`` into its ``.numpy()``
                   view) and uploaded ``.to(device, non_blocking=True)``; an event says when a buffer may be reused
  gpu_augment      the uint8 images moved to the GPU once (before the epochs), each batch cut and flipped there
"""

import numpy as np
import torch
import torch.nn as nn

from harness import parse, report

MODES = ("as_written", "pinned_prealloc", "gpu_augment")
FULL, CROP, CLASSES = 256, 224, 10


def make_model() -> nn.Module:
    return nn.Sequential(nn.Conv2d(3, 32, 3, stride=2), nn.ReLU(), nn.Conv2d(32, 64, 3, stride=2), nn.ReLU(),
                         nn.Conv2d(64, 64, 3, stride=2), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(64, CLASSES))


def offsets(steps: int):
    """Each step's crop offset (row, column) and whether it flips."""
    rng = np.random.default_rng(1)
    return [(int(rng.integers(0, FULL - CROP + 1)), int(rng.integers(0, FULL - CROP + 1)), s % 2 == 1)
            for s in range(steps)]


def cut(images, start: int, batch: int, r: int, c: int, flip: bool):
    """The batch's view: images[start:start+batch] cropped at (r, c), flipped left to right where asked."""
    view = images[start:start + batch, :, r:r + CROP, c:c + CROP]
    return view[..., ::-1] if flip else view


def main():
    args = parse(MODES, __doc__, images=1024, batch=128, epochs=3)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    images = np.random.default_rng(0).integers(0, 256, (args.images, 3, FULL, FULL), dtype=np.uint8)
    labels = torch.arange(args.images, device=device) % CLASSES
    per_epoch = args.images // args.batch
    plan = offsets(per_epoch * args.epochs)
    torch.manual_seed(0)
    model = make_model().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    loss_fn = nn.CrossEntropyLoss()
    shape = (args.batch, 3, CROP, CROP)
    bufs = [torch.empty(shape, dtype=torch.uint8, pin_memory=True) for _ in range(2)] \
        if args.mode == "pinned_prealloc" else None
    freed = [None, None]

    def batch_on_gpu(step, gpu_images):
        start = (step % per_epoch) * args.batch
        r, c, flip = plan[step]
        if args.mode == "as_written":
            return torch.from_numpy(np.ascontiguousarray(cut(images, start, args.batch, r, c, flip))).to(device)
        if args.mode == "pinned_prealloc":
            k = step % 2
            if freed[k] is not None:
                freed[k].synchronize()  # its last upload has finished: the buffer may be written again
            np.copyto(bufs[k].numpy(), cut(images, start, args.batch, r, c, flip))
            xb = bufs[k].to(device, non_blocking=True)
            freed[k] = torch.cuda.Event()
            freed[k].record()
            return xb
        view = gpu_images[start:start + args.batch, :, r:r + CROP, c:c + CROP]
        return view.flip(-1) if flip else view

    def loop():
        gpu_images = torch.from_numpy(images).to(device) if args.mode == "gpu_augment" else None
        for step in range(len(plan)):
            xb = batch_on_gpu(step, gpu_images).float().div_(255)
            start = (step % per_epoch) * args.batch
            opt.zero_grad()
            loss = loss_fn(model(xb), labels[start:start + args.batch])
            loss.backward()
            opt.step()
        return sum(p.double().sum().item() for p in model.parameters())

    report(args, loop, "augment_batches")


if __name__ == "__main__":
    main()
