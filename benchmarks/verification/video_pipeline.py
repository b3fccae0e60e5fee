"""A video-analytics pipeline as PyTorch users write it: a decoder thread (one ``threading.Thread``) "decodes"
``--frames`` frames (300 by default) of a synthetic ``--height`` x ``--width`` (432 x 768) video, in order, and puts
them into a ``queue.Queue(maxsize=--queue)`` (8 frames); the main thread takes them in batches of ``--batch`` (8: 37
batches and a last one of 4 frames), normalises them, runs a small segmentation network on the GPU and post-processes
each frame's mask on the host.

Decoding: every frame is made deterministically from its index ``j`` as a decoder would hand it over: a YUV 4:2:0
picture (a panning luma background and two chroma planes at half resolution from smooth patterns made before the
loop, 6 moving rectangles, a burned-in frame counter, sensor noise from a noise plane made before the loop at an
offset that moves with ``j``) converted with integer BT.601-style arithmetic into an HxWx3 uint8 RGB array, a few
milliseconds of numpy per frame. The network: 3x3 stride-2 convolutions to ``--channels`` (16) then twice as many,
a 3x3 convolution, a 1x1 convolution to one mask logit per pixel at 1/4 resolution (108 x 192); ReLUs between; seeded
weights, eval mode, ``torch.no_grad()``; ``cudnn.deterministic`` on, ``cudnn.benchmark`` off. The network sees its
input as ``torch.from_numpy(nhwc).permute(0, 3, 1, 2)`` would give it (NCHW sizes, channels-last memory) in every
mode. Post-processing of a frame's logits (numpy): the pixels above an adaptive threshold (the frame's mean logit
plus two standard deviations, float64) counted, their bounding box (first and last row and column holding one; -1s
where none) and the float64 sum of the logits. Before the loop, one forward (and one GPU normalisation) of each
batch size the loop uses keeps cuDNN's and the allocator's first-call set-up out of the timing; the decoder thread is
started inside the timed loop.

Normalisation: ImageNet's per-channel mean and std, float32: ``x / 255``, then ``(x - mean) / std``, in that order.
Where it runs on the GPU every operand is a GPU tensor (true divisions, as numpy's, where a Python scalar would be a
product with its reciprocal), so the network gets bit-identical batches in every mode, in the same order (one
decoder thread, FIFO), and gives bit-identical logits.

The checksum is the float64 sum over the frames of the pixel count, the four bounding-box coordinates and the logit
sum; the modes agree to the last bit on one machine. Checks after the loop (a failure exits 1): (1) the network's
input as the GPU saw it: every batch's per-frame, per-channel float64 sums of the normalised input are stored on the
GPU (``x.sum((2, 3), dtype=torch.float64)``, read once after the loop): every frame must be there, and every 23rd
frame (at the default sizes: every position in a batch, every slot of the ring) and the last are decoded again and
their sums derived from their uint8 channel sums, within the float32 rounding bound of the normalisation: a frame
that was not uploaded, came stale from a reused buffer or out of order differs by far more; (2) 4 frames (the first,
the second of the second batch, the middle and the last) decoded again, normalised in float64 by torch on the CPU,
cast to float32 and run as one NCHW batch: their logits must equal those the loop post-processed within TF32's
rounding (2% of the largest logit).

    python3 video_pipeline.py [--mode MODE] [--frames 300] [--height 432] [--width 768] [--batch 8] [--queue 8]
                              [--channels 16]

Modes (the same frames in the same batches, the same logits, the same checksum):
  as_written     the decoder puts each frame, a fresh uint8 array, into the queue; the main thread takes ``--batch``
                 frames, ``batch = np.stack(frames).astype(np.float32) / 255.0``, ``batch = (batch - mean) / std``
                 (numpy, float32, fresh arrays), ``x = torch.from_numpy(batch).to('cuda').permute(0, 3, 1, 2)`` from
                 pageable memory (30.4 MiB a batch), ``model(x).cpu().numpy()`` (a fresh pageable tensor), then each
                 frame post-processed
  pinned_float   the decoder and queue as as_written; one pinned float32 batch tensor and one pinned output tensor
                 allocated at the start of the loop; each frame converted and normalised with numpy straight into its
                 slot of the pinned batch (``np.divide(frame, np.float32(255), out=...)``, in-place
                 ``np.subtract``/``np.divide``), uploaded with ``.to('cuda', non_blocking=True)``, an event recorded
                 after the upload synchronised before the batch is written again; the logits copied into the pinned
                 output (``copy_(..., non_blocking=True)``) and an event synchronised before the host reads them
  gpu_normalize  the decoder and queue as as_written; the uint8 batch ``np.stack``-ed and uploaded as it is
                 (``torch.from_numpy(u8).to('cuda')``, pageable, 7.6 MiB a batch, a quarter of the float32 bytes),
                 converted and normalised on the GPU (``.permute(0, 3, 1, 2).float().div_(t255).sub_(mean).div_(std)``
                 with GPU tensors); ``model(x).cpu().numpy()`` as as_written
  pinned_ring    a ring of 3 pinned uint8 batch tensors allocated at the start of the loop (the decoder at most 3
                 batches ahead, where as_written's queue holds 8 frames); the decoder thread takes a free slot from a
                 ``queue.Queue`` (with the event of the upload that last read it, synchronised before it writes),
                 decodes a batch's frames straight into it and puts the slot into a queue of ready batches; the main
                 thread uploads the slot (``.to('cuda', non_blocking=True)``), records an event,
                 queues the GPU normalisation and hands the slot back with the event; the logits copied into a pinned
                 output tensor (``copy_(..., non_blocking=True)``) and an event synchronised before the host reads them
  side_stream    as pinned_ring, the uploads on a side ``torch.cuda.Stream``: once batch i's work is queued, the main
                 thread takes batch i+1 from the decoder and uploads it on the side stream (an event recorded there,
                 handed back with the slot) while batch i computes; the compute waits for its batch's event
                 (``current_stream().wait_event``) and ``record_stream``s the uploaded tensor
"""

import queue
import sys
import threading

import numpy as np
import torch
from torch import nn

from harness import parse, report

MODES = ("as_written", "pinned_float", "gpu_normalize", "pinned_ring", "side_stream")
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
SCALE = 4  # the mask's resolution: 1/4 of the frame's
RING = 3  # pinned batch tensors in pinned_ring's and side_stream's ring
OBJECTS = 6  # moving rectangles in the video
PAN = 256  # the background's extra width the camera pans over
NOISE = 64  # the noise plane's extra rows and columns


def make_model(channels: int) -> nn.Sequential:
    """A small fully convolutional segmenter: 3 -> channels -> 2 channels (both stride 2) -> 2 channels -> 1 logit."""
    return nn.Sequential(nn.Conv2d(3, channels, 3, stride=2, padding=1), nn.ReLU(),
                         nn.Conv2d(channels, 2 * channels, 3, stride=2, padding=1), nn.ReLU(),
                         nn.Conv2d(2 * channels, 2 * channels, 3, padding=1), nn.ReLU(),
                         nn.Conv2d(2 * channels, 1, 1))


class Video:
    """The synthetic video: frame ``j`` decoded deterministically from its index (YUV 4:2:0 to RGB, integers)."""

    def __init__(self, height: int, width: int):
        H, W = self.H, self.W = height, width
        yy = np.arange(H, dtype=np.float32)[:, None]
        xx = np.arange(W + PAN, dtype=np.float32)[None, :]
        self.luma = (40 + 70 * (1 + np.sin(xx / 97 + yy / 53))).astype(np.uint8)
        yh, xh = yy[::2], xx[:, ::2]
        self.cb = (128 + 40 * np.sin(xh / 41 - yh / 29)).astype(np.uint8)
        self.cr = (128 + 40 * np.cos(xh / 37 + yh / 31)).astype(np.uint8)
        self.noise = np.random.default_rng(0).integers(0, 12, (H + NOISE, W + NOISE), dtype=np.uint8)
        self.oh, self.ow = max(2, H // 10 // 2 * 2), max(2, W // 12 // 2 * 2)  # an object's size (even)
        self.digit = max(2, min(H // 45, W // 40) // 2 * 2)  # the frame counter's bit blocks (even)

    def decode_into(self, j: int, out: np.ndarray) -> None:
        """Frame j, HxWx3 uint8 RGB, written into ``out``."""
        H, W = self.H, self.W
        off = (2 * j) % PAN  # the camera pans 2 pixels a frame
        Y = self.luma[:, off:off + W].astype(np.int16)
        U = self.cb[:, off // 2:off // 2 + W // 2].astype(np.int16) - 128
        V = self.cr[:, off // 2:off // 2 + W // 2].astype(np.int16) - 128
        oh, ow = self.oh, self.ow
        for o in range(OBJECTS):
            y0 = (o + 1) * H // (OBJECTS + 2) // 2 * 2
            x0 = (j * (2 + 2 * o) + o * W // OBJECTS) % (W - ow) // 2 * 2
            Y[y0:y0 + oh, x0:x0 + ow] = 190 - 12 * o
            U[y0 // 2:(y0 + oh) // 2, x0 // 2:(x0 + ow) // 2] = -60 + 20 * o
            V[y0 // 2:(y0 + oh) // 2, x0 // 2:(x0 + ow) // 2] = 70 - 25 * o
        d = self.digit
        for k in range(10):  # the frame counter, burned in: bit k of j a bright or dark block
            Y[:d, k * d:(k + 1) * d] = 220 if (j >> k) & 1 else 20
        r, c = (7 * j) % NOISE, (13 * j) % NOISE
        Y += self.noise[r:r + H, c:c + W]
        Y4 = Y.reshape(H // 2, 2, W // 2, 2)
        rgb4 = out.reshape(H // 2, 2, W // 2, 2, 3)
        for ch, chroma in enumerate(((90 * V) >> 6, -((22 * U + 46 * V) >> 6), (113 * U) >> 6)):
            np.clip(Y4 + chroma[:, None, :, None], 0, 255, out=rgb4[..., ch], casting="unsafe")

    def decode(self, j: int) -> np.ndarray:
        """Frame j as a fresh array, as a decoder returns it."""
        out = np.empty((self.H, self.W, 3), np.uint8)
        self.decode_into(j, out)
        return out


def postprocess(m: np.ndarray) -> tuple:
    """One frame's h x w mask logits: the pixels above the frame's threshold (the logits' mean plus two standard
    deviations, float64) counted, their bounding box, the logits' float64 sum."""
    fg = m > m.mean(dtype=np.float64) + 2 * m.std(dtype=np.float64)
    count = int(np.count_nonzero(fg))
    if count:
        rows, cols = np.flatnonzero(fg.any(1)), np.flatnonzero(fg.any(0))
        box = (int(rows[0]), int(cols[0]), int(rows[-1]), int(cols[-1]))
    else:
        box = (-1, -1, -1, -1)
    return count, box, float(m.sum(dtype=np.float64))


def main():
    args = parse(MODES, __doc__, frames=300, height=432, width=768, batch=8, queue=8, channels=16)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    # the same cuDNN engines for the same shapes in every mode, none nondeterministic (the checksum's bit-identity)
    torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = True, False
    F, H, W, B = args.frames, args.height, args.width, args.batch
    if not (H % SCALE == 0 and W % SCALE == 0 and H >= 32 and W >= 48 and F >= 1 and B >= 1 and args.queue >= 1):
        sys.exit(f"video_pipeline: frames of {H} x {W} (multiples of {SCALE}, at least 32 x 48), {F} frames in "
                 f"batches of {B}, a queue of {args.queue}: no such pipeline")
    h, w = H // SCALE, W // SCALE
    video = Video(H, W)
    mean_np, std_np = np.array(MEAN, np.float32), np.array(STD, np.float32)
    mean_gpu = torch.tensor(MEAN).view(1, 3, 1, 1).to(device)
    std_gpu = torch.tensor(STD).view(1, 3, 1, 1).to(device)
    t255 = torch.full((1, 3, 1, 1), 255.0).to(device)  # a tensor, not a Python scalar: a true division
    check = sorted({j for j in (0, B + 1, F // 2, F - 1) if j < F})

    torch.manual_seed(0)
    model = make_model(args.channels).to(device).eval()

    def normalize_gpu(u8: torch.Tensor) -> torch.Tensor:
        """An uploaded n x H x W x 3 uint8 batch converted and normalised on the GPU, NCHW sizes (channels-last)."""
        return u8.permute(0, 3, 1, 2).float().div_(t255).sub_(mean_gpu).div_(std_gpu)

    with torch.no_grad():  # cuDNN's and the allocator's set-up for every batch size the loop runs, before the timing
        for n in sorted({B, F % B or B}):
            x = normalize_gpu(torch.zeros((n, H, W, 3), dtype=torch.uint8, device=device))
            x.sum((2, 3), dtype=torch.float64)
            model(x)
            model(torch.zeros((n, H, W, 3), device=device).permute(0, 3, 1, 2))

    def loop():
        results, kept = [], {}
        total = 0.0
        seen = torch.full((F, 3), float("nan"), dtype=torch.float64, device=device)  # per frame, per channel

        def finish(s: int, masks: np.ndarray) -> None:
            """A batch's n x 1 x h x w logits (frames s, s + 1, ...) post-processed in order."""
            nonlocal total
            for i in range(masks.shape[0]):
                j, m = s + i, masks[i, 0]
                if j != len(results):
                    sys.exit(f"video_pipeline: frame {j} came after {len(results)} frames")
                count, box, score = postprocess(m)
                results.append((count, box, score))
                total += count + sum(box) + score
                if j in check:
                    kept[j] = m.copy()

        def decode_frames(q: queue.Queue) -> None:
            """The decoder thread of as_written, pinned_float and gpu_normalize: every frame into the queue."""
            try:
                for j in range(F):
                    q.put((j, video.decode(j)))
            finally:
                q.put(None)

        def batches_of(q: queue.Queue):
            """The frames from the queue, ``B`` at a time (the last batch short): (first index, frames)."""
            items = []
            while True:
                item = q.get()
                if item is None:
                    break
                items.append(item)
                if len(items) == B:
                    yield items[0][0], [f for _, f in items]
                    items = []
            if items:
                yield items[0][0], [f for _, f in items]

        with torch.no_grad():
            if args.mode in ("as_written", "pinned_float", "gpu_normalize"):
                frames_q = queue.Queue(maxsize=args.queue)
                decoder = threading.Thread(target=decode_frames, args=(frames_q,), daemon=True)
                decoder.start()

                if args.mode == "as_written":
                    for s, frames in batches_of(frames_q):
                        n = len(frames)
                        batch = np.stack(frames).astype(np.float32) / 255.0
                        batch = (batch - mean_np) / std_np
                        x = torch.from_numpy(batch).to(device).permute(0, 3, 1, 2)
                        seen[s:s + n] = x.sum((2, 3), dtype=torch.float64)
                        masks = model(x).cpu().numpy()
                        finish(s, masks)

                elif args.mode == "pinned_float":
                    pinned = torch.empty((B, H, W, 3), pin_memory=True)
                    pinned_out = torch.empty((B, 1, h, w), pin_memory=True)
                    buf = pinned.numpy()
                    freed = None
                    for s, frames in batches_of(frames_q):
                        n = len(frames)
                        if freed is not None:
                            freed.synchronize()  # the last upload has read the pinned batch
                        for i, f in enumerate(frames):
                            np.divide(f, np.float32(255), out=buf[i])
                        np.subtract(buf[:n], mean_np, out=buf[:n])
                        np.divide(buf[:n], std_np, out=buf[:n])
                        x = pinned[:n].to(device, non_blocking=True).permute(0, 3, 1, 2)
                        freed = torch.cuda.Event()
                        freed.record()
                        seen[s:s + n] = x.sum((2, 3), dtype=torch.float64)
                        pinned_out[:n].copy_(model(x), non_blocking=True)
                        ready = torch.cuda.Event()
                        ready.record()
                        ready.synchronize()  # the logits have arrived
                        finish(s, pinned_out[:n].numpy())

                else:  # gpu_normalize
                    for s, frames in batches_of(frames_q):
                        n = len(frames)
                        u8 = torch.from_numpy(np.stack(frames)).to(device)
                        x = normalize_gpu(u8)
                        seen[s:s + n] = x.sum((2, 3), dtype=torch.float64)
                        masks = model(x).cpu().numpy()
                        finish(s, masks)
                decoder.join()

            else:  # pinned_ring, side_stream: the decoder writes straight into a ring of pinned batch tensors
                ring = [torch.empty((B, H, W, 3), dtype=torch.uint8, pin_memory=True) for _ in range(RING)]
                pinned_out = torch.empty((B, 1, h, w), pin_memory=True)
                free, ready_q = queue.Queue(), queue.Queue()
                for k in range(RING):
                    free.put((k, None))

                def decode_into_ring() -> None:
                    """The decoder thread: each batch's frames decoded into a free pinned slot, then announced."""
                    try:
                        for s in range(0, F, B):
                            n = min(B, F - s)
                            k, uploaded = free.get()
                            if uploaded is not None:
                                uploaded.synchronize()  # the upload that last read slot k has finished
                            buf = ring[k].numpy()
                            for i in range(n):
                                video.decode_into(s + i, buf[i])
                            ready_q.put((s, n, k))
                    finally:
                        ready_q.put(None)

                decoder = threading.Thread(target=decode_into_ring, daemon=True)
                decoder.start()

                if args.mode == "pinned_ring":
                    for s, n, k in iter(ready_q.get, None):
                        u8 = ring[k][:n].to(device, non_blocking=True)
                        uploaded = torch.cuda.Event()
                        uploaded.record()
                        x = normalize_gpu(u8)
                        free.put((k, uploaded))  # the slot back to the decoder, with the event of its upload
                        seen[s:s + n] = x.sum((2, 3), dtype=torch.float64)
                        pinned_out[:n].copy_(model(x), non_blocking=True)
                        done = torch.cuda.Event()
                        done.record()
                        done.synchronize()  # the logits have arrived
                        finish(s, pinned_out[:n].numpy())

                else:  # side_stream
                    side, main_stream = torch.cuda.Stream(), torch.cuda.current_stream()

                    def upload(item):
                        """A ready slot uploaded on the side stream: (first index, n, slot, tensor, event)."""
                        if item is None:
                            return None
                        s, n, k = item
                        with torch.cuda.stream(side):
                            u8 = ring[k][:n].to(device, non_blocking=True)
                            uploaded = side.record_event()
                        return s, n, k, u8, uploaded

                    nxt = upload(ready_q.get())
                    while nxt is not None:
                        s, n, k, u8, uploaded = nxt
                        main_stream.wait_event(uploaded)  # the batch has arrived
                        u8.record_stream(main_stream)  # made on the side stream, read on this one
                        x = normalize_gpu(u8)
                        free.put((k, uploaded))  # the slot back to the decoder, with the event of its upload
                        seen[s:s + n] = x.sum((2, 3), dtype=torch.float64)
                        pinned_out[:n].copy_(model(x), non_blocking=True)
                        done = torch.cuda.Event()
                        done.record()
                        del u8, x
                        nxt = upload(ready_q.get())  # batch i+1 uploads on the side stream while batch i computes
                        done.synchronize()  # the logits have arrived
                        finish(s, pinned_out[:n].numpy())
                decoder.join()

        if len(results) != F:
            sys.exit(f"video_pipeline: {len(results)} frames post-processed, the video has {F}")
        check_inputs(seen.cpu().numpy())
        check_logits(kept)
        return total

    def check_inputs(got: np.ndarray) -> None:
        """The per-frame, per-channel sums of the network's input, as the GPU saw it: every frame's there, and those
        of every 23rd frame and the last equal the sums derived from the frame decoded again (within the float32
        rounding bound of the normalisation); exit 1."""
        missing = np.flatnonzero(np.isnan(got).any(1))
        if len(missing):
            sys.exit(f"video_pipeline: {len(missing)} frames never reached the network (frame {missing[0]} first)")
        v = np.arange(256, dtype=np.float32)[:, None]
        table = (v / np.float32(255) - mean_np) / std_np  # what each uint8 value becomes, as the loop computes it
        mean64, std64 = mean_np.astype(np.float64), std_np.astype(np.float64)
        exact = (v.astype(np.float64) / 255 - mean64) / std64
        N = H * W
        bound = N * np.abs(table - exact).max(0) + 1e-9 * N * np.abs(exact).max(0) + 1e-6
        for j in sorted(set(range(0, F, 23)) | {F - 1}):
            s = video.decode(j).reshape(H, W * 3).sum(0, dtype=np.int64).reshape(W, 3).sum(0)
            want = (s / 255 - N * mean64) / std64
            err = np.abs(got[j] - want)
            if not (err <= bound).all():
                sys.exit(f"video_pipeline: frame {j}'s normalised input summed to {got[j].tolist()} per channel on "
                         f"the GPU, the decoded frame's to {want.tolist()} (bound {bound.tolist()})")

    def check_logits(kept: dict) -> None:
        """The check frames recomputed on a reference path (float64 normalisation on the CPU, one NCHW batch)
        against the logits the loop post-processed; exit 1."""
        mean64 = torch.tensor(MEAN, dtype=torch.float64).view(3, 1, 1)
        std64 = torch.tensor(STD, dtype=torch.float64).view(3, 1, 1)
        x = torch.stack([((torch.from_numpy(video.decode(j)).permute(2, 0, 1).double() / 255 - mean64) / std64)
                         .float() for j in check])
        with torch.no_grad():
            ref = model(x.to(device)).cpu().numpy()[:, 0]
        for r, j in zip(ref, check):
            err = float(np.abs(kept[j] - r).max())
            bound = 0.02 * float(np.abs(r).max()) + 1e-6
            if err > bound:
                sys.exit(f"video_pipeline: frame {j}'s mask logits differ from the reference by {err:.4g} "
                         f"(bound {bound:.4g})")

    report(args, loop, "video_pipeline")


if __name__ == "__main__":
    main()
