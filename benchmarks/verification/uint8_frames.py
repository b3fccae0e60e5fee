"""Classifying video frames held as uint8 in numpy, as the tutorials write the preprocessing: ``--frames`` frames
(3 x 224 x 224 uint8, 2048 by default: 294 MiB, from a seeded generator: noise plus a level per frame and channel,
made before the timed loop) in one numpy array; each batch of ``--batch`` (64) is
``torch.from_numpy(frames[i:j]).float().div(255)``, normalised on the CPU with ImageNet's mean and std
(``(x - mean) / std``), moved with ``.to(device)`` (37 MiB of float32 a batch), and classified by a small
convolutional network (three strided convolutions with batch normalisation, global average pooling, a linear
layer to ``--classes`` 10; eval mode, ``torch.no_grad()``; the batch norms' running statistics are those of the
first 4 batches, taken before the loop: a stand-in for trained weights that spreads the predictions over the
classes); each batch's predicted class and its probability (``probs.max(1)``) are collected
with ``.cpu()``. ``--passes`` passes (3) over the frames, in order.

The checksum is the float64 sum of the collected probabilities over every frame and pass: a continuous quantity,
so the 1-ulp differences between normalising on the CPU (a true division by 255) and on the GPU (a product with
its reciprocal) move it by far less than run_gpu.py's tolerance, where a sum of predicted classes could flip.
Each batch's float64 sum per frame of the normalised input is also taken on the GPU (kept there, read once a
pass) and compared with the exact value the host computes from the uint8 frames before the loop: a frame that did
not arrive, or arrived from another batch, differs; a mismatch exits 1.

    python3 uint8_frames.py [--mode MODE] [--frames 2048] [--batch 64] [--side 224] [--classes 10] [--passes 3]

Modes (the same frames in the same order, the same predictions, the same checksum):
  as_written     each batch converted to float32 and normalised on the CPU, ``.to(device)`` from pageable memory
  pinned_float   the same conversion on the CPU, its last step (``torch.div(x, std, out=...)``) written into one
                 pinned float32 tensor allocated at the start of the loop, ``gpu_x.copy_(pinned, non_blocking=True)``
                 into one preallocated GPU tensor; an event says when the pinned tensor may be written again
  uint8_to_gpu   the uint8 batch sent as it is (``torch.from_numpy(frames[i:j]).to(device)``, 9 MiB: 4x fewer
                 bytes), ``.float().div_(255)`` and the normalisation done on the GPU
  uint8_pinned   the uint8 frames pinned once at the start of the loop
                 (``torch.from_numpy(frames).pin_memory()``), each batch a slice of them
                 ``.to(device, non_blocking=True)``, converted on the GPU
  frames_on_gpu  the uint8 frames moved to the GPU once at the start of the loop, each batch a slice there,
                 converted on the GPU
"""

import sys

import numpy as np
import torch
import torch.nn as nn

from harness import parse, report

MODES = ("as_written", "pinned_float", "uint8_to_gpu", "uint8_pinned", "frames_on_gpu")
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
CALIBRATE = 4  # batches whose statistics the batch norms take, before the loop


def make_model(classes: int) -> nn.Sequential:
    """Three strided convolutions with batch normalisation, pooled, a linear classifier. Its batch norms' running
    statistics are set by ``calibrate`` (a cumulative average: ``momentum=None``)."""
    return nn.Sequential(nn.Conv2d(3, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32, momentum=None), nn.ReLU(),
                         nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64, momentum=None), nn.ReLU(),
                         nn.Conv2d(64, 128, 3, stride=2, padding=1), nn.BatchNorm2d(128, momentum=None), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.BatchNorm1d(128, momentum=None),
                         nn.Linear(128, classes))


def make_frames(n: int, side: int) -> np.ndarray:
    """Seeded uint8 frames: noise in [0, 128) plus a level in [0, 128) per frame and channel (so the network's
    pooled features, and its predictions, differ from frame to frame)."""
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 128, (n, 3, side, side), dtype=np.uint8)
    frames += rng.integers(0, 128, (n, 3, 1, 1), dtype=np.uint8)
    return frames


def expected_sums(frames: np.ndarray) -> torch.Tensor:
    """Every frame's sum of its normalised pixels, exactly (float64, from the uint8 channel sums)."""
    pixels = frames.shape[2] * frames.shape[3]
    chan = frames.sum(axis=(2, 3), dtype=np.int64).astype(np.float64)  # frames x 3
    mean, std = np.array(MEAN), np.array(STD)
    return torch.from_numpy(((chan / 255 - pixels * mean) / std).sum(1))


def check_inputs(got: torch.Tensor, want: torch.Tensor, p: int) -> None:
    """The GPU's sums of the inputs it classified against the host's of the frames; exit 1."""
    bad = torch.nonzero(~torch.isclose(got, want, rtol=1e-6, atol=0.25)).flatten()
    if len(bad):
        f = bad[0].item()
        sys.exit(f"uint8_frames: pass {p}, frame {f}: the normalised input sums to {got[f].item():.9g}, the frame "
                 f"to {want[f].item():.9g} ({len(bad)} frames differ)")


def main():
    args = parse(MODES, __doc__, frames=2048, batch=64, side=224, classes=10, passes=3)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    frames = make_frames(args.frames, args.side)
    want = expected_sums(frames)
    spans = [(i, min(i + args.batch, args.frames)) for i in range(0, args.frames, args.batch)]
    mean = torch.tensor(MEAN).view(3, 1, 1)
    std = torch.tensor(STD).view(3, 1, 1)
    mean_gpu, std_gpu = mean.to(device), std.to(device)

    def on_gpu(x_u8):
        """A uint8 batch already on the GPU, converted and normalised there."""
        return x_u8.float().div_(255).sub_(mean_gpu).div_(std_gpu)

    torch.manual_seed(0)
    model = make_model(args.classes).to(device)
    with torch.no_grad():  # a stand-in for trained weights: the batch norms' statistics of the first frames
        model.train()
        for i, j in spans[:CALIBRATE]:
            model(on_gpu(torch.from_numpy(frames[i:j]).to(device)))
    model.eval()

    def loop():
        pinned = gpu_x = freed = source = None
        if args.mode == "pinned_float":
            shape = (args.batch, 3, args.side, args.side)
            pinned = torch.empty(shape, pin_memory=True)
            gpu_x = torch.empty(shape, device=device)
        elif args.mode == "uint8_pinned":  # pinned once: every pass's batches are slices of it
            source = torch.from_numpy(frames).pin_memory()
        elif args.mode == "frames_on_gpu":  # moved once: every pass's batches are slices on the GPU
            source = torch.from_numpy(frames).to(device)
        in_sums = torch.empty(args.frames, dtype=torch.float64, device=device)
        total = 0.0
        with torch.no_grad():
            for p in range(args.passes):
                preds, confs = [], []
                for i, j in spans:
                    n = j - i
                    if args.mode == "as_written":
                        x = torch.from_numpy(frames[i:j]).float().div(255)
                        x = (x - mean) / std
                        x = x.to(device)
                    elif args.mode == "pinned_float":
                        if freed is not None:
                            freed.synchronize()  # the last batch's upload has read the pinned tensor
                        x = torch.from_numpy(frames[i:j]).float().div_(255).sub_(mean)
                        torch.div(x, std, out=pinned[:n])
                        x = gpu_x[:n]
                        x.copy_(pinned[:n], non_blocking=True)
                        freed = torch.cuda.Event()
                        freed.record()
                    elif args.mode == "uint8_to_gpu":
                        x = on_gpu(torch.from_numpy(frames[i:j]).to(device))
                    elif args.mode == "uint8_pinned":
                        x = on_gpu(source[i:j].to(device, non_blocking=True))
                    else:
                        x = on_gpu(source[i:j])
                    in_sums[i:j] = x.sum((1, 2, 3), dtype=torch.float64)  # the check's: what the GPU classified
                    probs = model(x).softmax(1)
                    conf, pred = probs.max(1)
                    preds.append(pred.cpu())
                    confs.append(conf.cpu())
                preds = torch.cat(preds).numpy()
                confs = torch.cat(confs).numpy()
                if preds.shape[0] != args.frames or preds.min() < 0 or preds.max() >= args.classes:
                    sys.exit(f"uint8_frames: pass {p}: {preds.shape[0]} predictions of {args.frames} frames, "
                             f"classes {preds.min()} to {preds.max()}")
                check_inputs(in_sums.cpu(), want, p)
                total += float(confs.astype(np.float64).sum())
        return total

    report(args, loop, "uint8_frames")


if __name__ == "__main__":
    main()
