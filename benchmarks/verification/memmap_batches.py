"""Training from a dataset stored on disk as a ``.npy`` file and opened as a memory map, as numpy users write it:
at its start the program writes a ``--mib`` MiB float32 array (768 MiB by default: rows of ``--features`` 2048,
standard normal from a seeded generator, the column of each row's label raised by 3) into a temporary directory,
keeps the int64 labels in memory, and opens the file with ``np.load(path, mmap_mode="r")`` (before the timed loop;
the file is removed at exit). The page cache is warm (the file was just written): the loop measures moving the
data from memory to the GPU, not reading the disk. The loop reads contiguous blocks of ``--batch-mib`` MiB (32 MiB,
4096 rows), their order shuffled each epoch by a seeded generator; each batch
``torch.from_numpy(np.ascontiguousarray(arr[i:j])).to(device)``, its labels the same way; an MLP
(``--features``-``--hidden``-``--hidden``-10, ReLU), cross-entropy, SGD; ``--epochs`` epochs (3). The checksum is
the float64 sum of every step's loss, accumulated on the GPU and read once at the end. Every step's batch is also
checked: its float64 sum and its labels' sum, kept on the GPU, are compared at the end with the sums of the block
the host wrote (a stale or overwritten batch differs by thousands); a mismatch exits 1.

    python3 memmap_batches.py [--mode MODE] [--mib 768] [--batch-mib 32] [--features 2048] [--hidden 4096]
                              [--epochs 3]

Modes (the same batches in the same order, the same updates, the same checksum):
  as_written      ``torch.from_numpy(np.ascontiguousarray(arr[i:j])).to(device)``: each batch uploaded from the
                  memory map's pageable pages
  pinned_staging  one preallocated pinned buffer (and one for the labels): each batch copied into it with
                  ``buf[:n].copy_(torch.from_numpy(arr[i:j]))``, then ``.to(device, non_blocking=True)``; an event
                  recorded after the upload is waited on before the buffer is refilled
  pinned_double   two pinned buffers, two GPU buffers and a side ``torch.cuda.Stream``: the host copies batch i+1
                  into one pinned buffer and it uploads on the side stream while batch i computes; events say when an
                  upload has arrived (the step waits), when a pinned buffer may be refilled (the host waits) and when
                  a GPU buffer has been read (the next upload into it waits)
  loaded_pinned   the whole file copied once into one pinned tensor at the start of the loop; each batch a slice
                  of it, ``.to(device, non_blocking=True)``
  on_gpu          the whole dataset moved to the GPU once at the start of the loop (where it fits: at most half the
                  GPU's memory); each batch a slice of it
"""

import shutil
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn

from harness import parse, report

MODES = ("as_written", "pinned_staging", "pinned_double", "loaded_pinned", "on_gpu")
CLASSES, SHIFT = 10, 3.0
# the memory map is read-only and only read: torch's warning about writing through such a tensor does not apply
warnings.filterwarnings("ignore", message="The given NumPy array is not writable")


def write_dataset(path: Path, rows: int, cols: int, step: int) -> tuple[np.ndarray, np.ndarray]:
    """Write the features as a .npy file, one block of ``step`` rows at a time (never the whole array in memory);
    the labels, and each block's float64 sum of features and of labels (what the loop's batches are checked by)."""
    rng = np.random.default_rng(0)
    labels = rng.integers(0, CLASSES, rows, dtype=np.int64)
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(rows, cols))
    sums = []
    for r0 in range(0, rows, step):
        r1 = min(r0 + step, rows)
        block = rng.standard_normal((r1 - r0, cols), dtype=np.float32)
        block[np.arange(r1 - r0), labels[r0:r1]] += SHIFT  # learnable: the label's column raised
        out[r0:r1] = block
        sums.append((block.sum(dtype=np.float64), float(labels[r0:r1].sum())))
    out.flush()
    del out
    return labels, np.array(sums)


def make_model(features: int, hidden: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, CLASSES))


def pageable(arr, labels, spans, device):
    """as_written: each batch from the memory map's pages, ``.to(device)``."""
    for r0, r1 in spans:
        yield (torch.from_numpy(np.ascontiguousarray(arr[r0:r1])).to(device),
               torch.from_numpy(labels[r0:r1]).to(device))


def staged(arr, labels, spans, device, step):
    """pinned_staging: through one pinned buffer, refilled once its last upload has finished."""
    buf = torch.empty((step, arr.shape[1]), pin_memory=True)
    ybuf = torch.empty(step, dtype=torch.int64, pin_memory=True)
    uploaded = torch.cuda.Event()
    for r0, r1 in spans:
        n = r1 - r0
        uploaded.synchronize()  # the previous batch's upload has read the buffer: it may be written again
        buf[:n].copy_(torch.from_numpy(arr[r0:r1]))
        ybuf[:n].copy_(torch.from_numpy(labels[r0:r1]))
        x, y = buf[:n].to(device, non_blocking=True), ybuf[:n].to(device, non_blocking=True)
        uploaded.record()
        yield x, y


def double_buffered(arr, labels, spans, device, step):
    """pinned_double: batch i+1 copied into a pinned buffer and uploaded on a side stream while batch i computes."""
    pinned = [(torch.empty((step, arr.shape[1]), pin_memory=True),
               torch.empty(step, dtype=torch.int64, pin_memory=True)) for _ in range(2)]
    on_gpu = [(torch.empty((step, arr.shape[1]), device=device),
               torch.empty(step, dtype=torch.int64, device=device)) for _ in range(2)]
    side, main_stream = torch.cuda.Stream(), torch.cuda.current_stream()
    uploaded = [torch.cuda.Event() for _ in range(2)]  # an upload has finished: on the GPU, its pinned buffer free
    consumed = [torch.cuda.Event() for _ in range(2)]  # the step that read a GPU buffer has been queued before it

    def stage(i):
        r0, r1 = spans[i]
        k, n = i % 2, r1 - r0
        uploaded[k].synchronize()  # the upload that last read this pinned buffer is done: it may be written
        pinned[k][0][:n].copy_(torch.from_numpy(arr[r0:r1]))
        pinned[k][1][:n].copy_(torch.from_numpy(labels[r0:r1]))
        with torch.cuda.stream(side):
            side.wait_event(consumed[k])  # the step that last read this GPU buffer is done
            on_gpu[k][0][:n].copy_(pinned[k][0][:n], non_blocking=True)
            on_gpu[k][1][:n].copy_(pinned[k][1][:n], non_blocking=True)
            uploaded[k].record(side)

    stage(0)
    for i, (r0, r1) in enumerate(spans):
        k, n = i % 2, r1 - r0
        main_stream.wait_event(uploaded[k])
        yield on_gpu[k][0][:n], on_gpu[k][1][:n]  # the caller queues the step's work before this resumes
        consumed[k].record(main_stream)
        if i + 1 < len(spans):
            stage(i + 1)  # the host fills the other buffer while batch i computes


def sliced(host_x, host_y, spans, device, non_blocking):
    """loaded_pinned (pinned host tensors, uploaded) and on_gpu (GPU tensors, views): slices of the whole."""
    for r0, r1 in spans:
        yield host_x[r0:r1].to(device, non_blocking=non_blocking), host_y[r0:r1].to(device, non_blocking=non_blocking)


def check_batches(seen: np.ndarray, want: np.ndarray) -> None:
    """Every step's batch sums (GPU, float64) against the host's sums of the block it should be; exit 1 if not."""
    bad = np.flatnonzero(~np.isclose(seen, want, rtol=1e-7, atol=1e-3).all(axis=1))
    if len(bad):
        s = bad[0]
        sys.exit(f"memmap_batches: step {s}'s batch sums {seen[s].tolist()} differ from its block's "
                 f"{want[s].tolist()} ({len(bad)} steps differ)")


def main():
    args = parse(MODES, __doc__, mib=768, batch_mib=32, features=2048, hidden=4096, epochs=3)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    rows = (args.mib << 20) // (4 * args.features)
    step = (args.batch_mib << 20) // (4 * args.features)  # rows a batch
    if args.mode == "on_gpu" and torch.cuda.is_available():
        total_mem = torch.cuda.get_device_properties(0).total_memory
        if rows * args.features * 4 > total_mem // 2:
            sys.exit(f"on_gpu: a dataset of {args.mib} MiB does not fit (at most half of {total_mem >> 20} MiB)")
    tmp = Path(tempfile.mkdtemp(prefix="memmap_batches-"))
    try:
        labels, block_sums = write_dataset(tmp / "features.npy", rows, args.features, step)
        arr = np.load(tmp / "features.npy", mmap_mode="r")
        blocks = [(r0, min(r0 + step, rows)) for r0 in range(0, rows, step)]
        order = np.concatenate([np.random.default_rng(1 + e).permutation(len(blocks)) for e in range(args.epochs)])
        spans = [blocks[b] for b in order]  # every step's rows, every epoch's blocks shuffled
        train(args, device, arr, labels, spans, step, block_sums[order])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def train(args, device, arr, labels, spans, step, want):
    torch.manual_seed(0)
    model = make_model(args.features, args.hidden).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    def batches():
        if args.mode == "as_written":
            return pageable(arr, labels, spans, device)
        if args.mode == "pinned_staging":
            return staged(arr, labels, spans, device, step)
        if args.mode == "pinned_double":
            return double_buffered(arr, labels, spans, device, step)
        if args.mode == "loaded_pinned":  # the whole file, copied once into one pinned tensor
            whole = torch.empty(arr.shape, pin_memory=True)
            whole.copy_(torch.from_numpy(arr))
            return sliced(whole, torch.from_numpy(labels).pin_memory(), spans, device, True)
        whole = torch.from_numpy(arr).to(device)  # on_gpu: the whole dataset, once
        return sliced(whole, torch.from_numpy(labels).to(device), spans, device, False)

    def loop():
        total = torch.zeros((), dtype=torch.float64, device=device)
        seen = torch.zeros((len(spans), 2), dtype=torch.float64, device=device)
        for s, (x, y) in enumerate(batches()):
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            total += loss.detach().double()
            seen[s, 0] = x.sum(dtype=torch.float64)  # was this step's batch the block it should be?
            seen[s, 1] = y.sum(dtype=torch.float64)
        check_batches(seen.cpu().numpy(), want)
        return total.item()

    report(args, loop, "memmap_batches")


if __name__ == "__main__":
    main()
