"""Sliding-window (tiled) segmentation of large images, as remote-sensing and pathology users write it: ``--images``
RGB images (3 by default) of ``--side`` x ``--side`` (4096) uint8 pixels (48 MiB each, HWC, from a seeded numpy
generator, made before the timed loop) are cut into overlapping ``--tile`` x ``--tile`` tiles (512, overlapping by
``--overlap`` 64 pixels: a stride of 448, the last row and column of tiles flush with the image's edge; 81 tiles an
image); each tile is converted to float32 CHW and normalised with ImageNet's mean and std (``x / 255``, then
``(x - mean) / std``, in float32, in that order), the tiles of an image are batched in row-major order by
``--batch`` (16: 48 MiB of float32; an image's last batch short, 1 tile), and each batch goes through a small fully
convolutional network (two stride-2 3x3 convolutions to ``--width`` 32 then 64 channels, a 3x3 convolution, a 1x1
convolution to 4 class logits per pixel at 1/4 resolution; ReLUs between; seeded weights, eval mode,
``torch.no_grad()``). Each tile's 4 x 128 x 128 logits are stitched into the image's float32 output map (4 x 1024 x
1024), the overlaps averaged (a sum and a count per pixel, divided at the end). Before the loop, one forward of
each batch size the loop uses keeps cuDNN's first-call set-up out of the timing.

The checksum is the float64 sum, over the images, of each output map's absolute values (taken on the host). Every
mode feeds the network bit-identical batches (float32 division, subtraction and division round the same on the host
and on the GPU) in the same order and sums the overlaps in the same order, so the modes agree to the last bit on one
machine. After the loop: every image's count map must cover every output pixel (its minimum at least 1, its sum
that of the tiles), and on the last image one tile of each of its batches is recomputed on a reference path (the
tile normalised in float64 by torch on the CPU, cast to float32, the tiles run as one batch): where no other tile
overlaps, its stitched output must equal the reference within TF32's rounding (2% of the tile's largest logit): a
tile that was not uploaded, came from another batch or was stitched in the wrong place differs by far more. A
failure exits 1.

    python3 tile_inference.py [--mode MODE] [--images 3] [--side 4096] [--tile 512] [--overlap 64] [--batch 16]
                              [--width 32]

Modes (the same tiles in the same batches, the same outputs, the same checksum):
  as_written      each tile cut on the host (``np.ascontiguousarray(img[y:y + tile, x:x + tile].transpose(2, 0,
                  1))``), converted and normalised with numpy into fresh float32 arrays, the batch
                  ``np.stack``-ed and sent with ``torch.from_numpy(batch).to(device)`` from pageable memory; each
                  batch's logits read with ``.cpu()`` and stitched on the host with numpy
  pinned_batches  one pinned float32 batch tensor and one pinned output tensor allocated at the start of the loop;
                  each tile converted and normalised straight into its slot of the pinned batch (``np.divide(...,
                  out=pinned.numpy()[k])`` and in-place ``np.subtract``/``np.divide``), an event recorded after its
                  upload (``.to(device, non_blocking=True)``) waited on before the batch is written again; the logits
                  copied into the pinned output tensor (``copy_(..., non_blocking=True)``) and an event synchronised
                  before the host stitches them
  gpu_tiling      each whole uint8 image uploaded once (``torch.from_numpy(img).to(device)``, 48 MiB instead of
                  243 MiB of float32 tiles), the tiles cut there by slicing (``torch.stack``), converted and
                  normalised on the GPU (``.float().div_(t255).sub_(mean).div_(std)``, every operand a GPU tensor:
                  true divisions, as numpy's, where a Python scalar would be a product with its reciprocal), the
                  logits stitched into a sum and a count map on the GPU, and one ``.cpu()`` of the averaged map
                  per image
  side_stream     as pinned_batches with two pinned batch tensors used in turn: once a batch's work is queued the host
                  converts the next batch (the next image's first, across an image's end) into the other tensor and
                  uploads it on a side ``torch.cuda.Stream`` (``non_blocking=True``) while the current batch computes;
                  the compute waits with ``current_stream().wait_stream(side)`` and ``x.record_stream(...)``, and
                  an event per pinned tensor says when its upload has finished and it may be written again
"""

import sys

import numpy as np
import torch
from torch import nn

from harness import parse, report

MODES = ("as_written", "pinned_batches", "gpu_tiling", "side_stream")
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
CLASSES = 4
SCALE = 4  # the network's output is 1/4 of its input's resolution


def make_model(width: int) -> nn.Sequential:
    """A small fully convolutional segmenter: 3 -> width -> 2 width (both stride 2) -> 2 width -> CLASSES."""
    return nn.Sequential(nn.Conv2d(3, width, 3, stride=2, padding=1), nn.ReLU(),
                         nn.Conv2d(width, 2 * width, 3, stride=2, padding=1), nn.ReLU(),
                         nn.Conv2d(2 * width, 2 * width, 3, padding=1), nn.ReLU(),
                         nn.Conv2d(2 * width, CLASSES, 1))


def tile_starts(side: int, tile: int, stride: int) -> list[int]:
    """Where the tiles start along one axis: every ``stride``, the last one flush with the edge."""
    starts = list(range(0, side - tile + 1, stride))
    if starts[-1] + tile < side:
        starts.append(side - tile)
    return starts


def main():
    args = parse(MODES, __doc__, images=3, side=4096, tile=512, overlap=64, batch=16, width=32)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    # the same cuDNN engines for the same shapes in every mode, none nondeterministic (the checksum's bit-identity)
    torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = True, False
    S, T, B = args.side, args.tile, args.batch
    if not (T <= S and 0 <= args.overlap < T // 2 and S % SCALE == 0 and T % SCALE == 0
            and args.overlap % SCALE == 0 and B >= 1 and args.images >= 1):
        sys.exit(f"tile_inference: tiles of {T} overlapping by {args.overlap} do not fit images of {S} "
                 f"(sizes multiples of {SCALE}, the overlap under half a tile)")
    rng = np.random.default_rng(0)
    images = [rng.integers(0, 256, (S, S, 3), dtype=np.uint8) for _ in range(args.images)]
    starts = tile_starts(S, T, T - args.overlap)
    tiles = [(y, x) for y in starts for x in starts]  # row-major
    # (image, its tiles) a batch; an image's batches in turn, its last one short
    batches = [(i, tiles[j:j + B]) for i in range(args.images) for j in range(0, len(tiles), B)]
    last_of_image = {i: max(b for b, (k, _) in enumerate(batches) if k == i) for i in range(args.images)}
    t, m_side = T // SCALE, S // SCALE  # a tile's and the map's side in the output
    mean_np = np.array(MEAN, np.float32).reshape(3, 1, 1)
    std_np = np.array(STD, np.float32).reshape(3, 1, 1)
    mean_gpu = torch.tensor(MEAN).view(1, 3, 1, 1).to(device)
    std_gpu = torch.tensor(STD).view(1, 3, 1, 1).to(device)
    t255 = torch.full((1, 3, 1, 1), 255.0).to(device)  # a tensor, not a Python scalar: a true division

    # the coverage every image's count map must show (from the tile grid), and the last image's check tiles
    cover = np.zeros((m_side, m_side), np.float32)
    for y, x in tiles:
        cover[y // SCALE:y // SCALE + t, x // SCALE:x // SCALE + t] += 1
    last = args.images - 1
    check = [ts[q % len(ts)] for q, (i, ts) in enumerate(b for b in batches if b[0] == last)]

    torch.manual_seed(0)
    model = make_model(args.width).to(device).eval()
    with torch.no_grad():  # cuDNN's set-up for every batch size the loop runs, before the timing
        for n in sorted({B, len(tiles) % B or B, len(check)}):
            model(torch.zeros((n, 3, T, T), device=device))

    def convert_into(out: np.ndarray, img: np.ndarray, y: int, x: int) -> None:
        """One tile of ``img`` cut, converted to float32 CHW and normalised, written into ``out``."""
        np.divide(img[y:y + T, x:x + T].transpose(2, 0, 1), np.float32(255), out=out)
        np.subtract(out, mean_np, out=out)
        np.divide(out, std_np, out=out)

    def convert(img: np.ndarray, y: int, x: int) -> np.ndarray:
        """The same tile as a fresh array: the same float32 operations in the same order. (CHW made contiguous
        first: ``astype`` of the transposed view would keep its HWC memory order, and the batch would reach the
        network channels-last, through other convolution kernels.)"""
        chw = np.ascontiguousarray(img[y:y + T, x:x + T].transpose(2, 0, 1)).astype(np.float32) / np.float32(255)
        return (chw - mean_np) / std_np

    class HostMap:
        """An image's output map on the host: a sum of the tiles' logits and a count per pixel."""

        def __init__(self):
            self.acc = np.zeros((CLASSES, m_side, m_side), np.float32)
            self.cnt = np.zeros((m_side, m_side), np.float32)

        def add(self, logits: np.ndarray, where: list) -> None:
            for o, (y, x) in zip(logits, where):
                oy, ox = y // SCALE, x // SCALE
                self.acc[:, oy:oy + t, ox:ox + t] += o
                self.cnt[oy:oy + t, ox:ox + t] += 1

        def finish(self):
            return self.acc / self.cnt, np.array([self.cnt.min(), self.cnt.sum(dtype=np.float64)])

    def loop():
        maps, counts, total = {}, [None] * args.images, 0.0
        result = None

        def done(i: int, averaged: np.ndarray) -> None:
            nonlocal total, result
            total += float(np.abs(averaged).sum(dtype=np.float64))
            if i == last:
                result = averaged

        with torch.no_grad():
            if args.mode == "as_written":
                for b, (i, where) in enumerate(batches):
                    hm = maps.setdefault(i, HostMap())
                    batch = np.stack([convert(images[i], y, x) for y, x in where])
                    x = torch.from_numpy(batch).to(device)
                    hm.add(model(x).cpu().numpy(), where)
                    if b == last_of_image[i]:
                        averaged, counts[i] = maps.pop(i).finish()
                        done(i, averaged)

            elif args.mode == "pinned_batches":
                pinned = torch.empty((B, 3, T, T), pin_memory=True)
                pinned_out = torch.empty((B, CLASSES, t, t), pin_memory=True)
                freed = None
                for b, (i, where) in enumerate(batches):
                    n = len(where)
                    hm = maps.setdefault(i, HostMap())
                    if freed is not None:
                        freed.synchronize()  # the last upload has read the pinned batch
                    buf = pinned.numpy()
                    for k, (y, x) in enumerate(where):
                        convert_into(buf[k], images[i], y, x)
                    x = pinned[:n].to(device, non_blocking=True)
                    freed = torch.cuda.Event()
                    freed.record()
                    pinned_out[:n].copy_(model(x), non_blocking=True)
                    ready = torch.cuda.Event()
                    ready.record()
                    ready.synchronize()  # the logits have arrived
                    hm.add(pinned_out[:n].numpy(), where)
                    if b == last_of_image[i]:
                        averaged, counts[i] = maps.pop(i).finish()
                        done(i, averaged)

            elif args.mode == "gpu_tiling":
                for i in range(args.images):
                    img = torch.from_numpy(images[i]).to(device).permute(2, 0, 1)  # 3 x S x S uint8, on the GPU
                    acc = torch.zeros((CLASSES, m_side, m_side), device=device)
                    cnt = torch.zeros((m_side, m_side), device=device)
                    for _, where in (bt for bt in batches if bt[0] == i):
                        x = torch.stack([img[:, y:y + T, x:x + T] for y, x in where]).float()
                        x = x.div_(t255).sub_(mean_gpu).div_(std_gpu)
                        logits = model(x)
                        for o, (y, x0) in zip(logits, where):
                            oy, ox = y // SCALE, x0 // SCALE
                            acc[:, oy:oy + t, ox:ox + t] += o
                            cnt[oy:oy + t, ox:ox + t] += 1
                    counts[i] = torch.stack([cnt.min().double(), cnt.sum(dtype=torch.float64)])  # read after
                    done(i, (acc / cnt).cpu().numpy())
                counts = [c.cpu().numpy() for c in counts]

            else:  # side_stream
                pinned = [torch.empty((B, 3, T, T), pin_memory=True) for _ in range(2)]
                pinned_out = torch.empty((B, CLASSES, t, t), pin_memory=True)
                uploaded = [None, None]
                side, main_stream = torch.cuda.Stream(), torch.cuda.current_stream()

                def stage(b):
                    """Batch b converted into pinned tensor b % 2 and uploaded on the side stream."""
                    k = b % 2
                    i, where = batches[b]
                    if uploaded[k] is not None:
                        uploaded[k].synchronize()  # the upload that last read this pinned tensor has finished
                    buf = pinned[k].numpy()
                    for j, (y, x) in enumerate(where):
                        convert_into(buf[j], images[i], y, x)
                    with torch.cuda.stream(side):
                        x = pinned[k][:len(where)].to(device, non_blocking=True)
                        uploaded[k] = side.record_event()
                    return x

                nxt = stage(0)
                for b, (i, where) in enumerate(batches):
                    n = len(where)
                    hm = maps.setdefault(i, HostMap())
                    main_stream.wait_stream(side)  # the batch has arrived
                    x = nxt
                    x.record_stream(main_stream)  # made on the side stream, read on this one
                    pinned_out[:n].copy_(model(x), non_blocking=True)
                    ready = torch.cuda.Event()
                    ready.record()
                    if b + 1 < len(batches):
                        nxt = stage(b + 1)  # the host converts, the side stream uploads, while batch b computes
                    ready.synchronize()  # the logits have arrived
                    hm.add(pinned_out[:n].numpy(), where)
                    if b == last_of_image[i]:
                        averaged, counts[i] = maps.pop(i).finish()
                        done(i, averaged)

        check_cover(counts)
        check_tiles(result)
        return total

    def check_cover(counts) -> None:
        """Every image's count map: every output pixel covered, as many tile pixels as the grid has; exit 1."""
        want = float(cover.sum(dtype=np.float64))
        for i, (lo, n) in enumerate(counts):
            if lo < 1 or n != want:
                sys.exit(f"tile_inference: image {i}'s tiles cover its map at least {lo} times, {n} tile pixels "
                         f"in all (the grid's: {want})")

    def check_tiles(averaged: np.ndarray) -> None:
        """The last image's check tiles recomputed on a reference path, against its stitched map where no other
        tile overlaps; exit 1."""
        img = torch.from_numpy(images[last])
        mean64, std64 = torch.tensor(MEAN, dtype=torch.float64).view(3, 1, 1), \
            torch.tensor(STD, dtype=torch.float64).view(3, 1, 1)
        x = torch.stack([((img[y:y + T, x:x + T].permute(2, 0, 1).double() / 255 - mean64) / std64).float()
                         for y, x in check])
        with torch.no_grad():
            ref = model(x.to(device)).cpu().numpy()
        checked = 0
        for r, (y, x) in zip(ref, check):
            oy, ox = y // SCALE, x // SCALE
            alone = cover[oy:oy + t, ox:ox + t] == 1
            got = averaged[:, oy:oy + t, ox:ox + t][:, alone]
            err = float(np.abs(got - r[:, alone]).max()) if alone.any() else 0.0
            bound = 0.02 * float(np.abs(r).max()) + 1e-6
            if err > bound:
                sys.exit(f"tile_inference: image {last}'s tile at ({y}, {x}): its stitched logits differ from the "
                         f"reference by {err:.4g} (bound {bound:.4g})")
            checked += int(alone.sum())
        if checked == 0:
            sys.exit("tile_inference: no check tile has an output pixel that no other tile overlaps")

    report(args, loop, "tile_inference")


if __name__ == "__main__":
    main()
