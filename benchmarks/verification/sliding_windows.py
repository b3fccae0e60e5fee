"""Time-series forecasting trained from sliding windows, as the tutorials write it: one long multivariate series
(``--length`` 8388608 time steps of ``--channels`` 32, float32, 1 GiB in a CPU tensor; each channel two seeded
sinusoids plus seeded noise, made before the loop) and a map-style ``Dataset`` whose ``__getitem__(i)`` returns the
views ``(series[i:i+L], series[i+L:i+L+H])`` (``--window`` L 512 input steps, ``--horizon`` H 64 steps to
forecast); ``DataLoader(ds, batch_size=256, sampler=RandomSampler(ds, replacement=True, num_samples=65536,
generator=g), num_workers=0)`` with a seeded generator (``--windows`` 65536 random window starts an epoch, 256
batches), the default collate stacking the views into fresh tensors (16 MiB of inputs and 2 MiB of targets a
batch); each step ``x, y = x.to(device), y.to(device)``, a small model (two strided 1-D convolutions over the
window, an MLP to the H x C forecast), MSE, Adam, ``running_loss += loss.item()``; ``--epochs`` 2 (512 steps, 9 GiB
uploaded).

The checksum is the float64 sum, in step order, of every step's loss, plus the float64 sum of every final
parameter; every mode trains on the same windows in the same order with the same kernels, so the modes agree (to
the last bit on one machine). Each step also stores, on the GPU, the float64 sums of its batch's inputs and
targets (read once after the loop); they are compared with the sums the host takes for the windows a fresh sampler
of the same seed draws (prefix sums of the series' row sums, relative 1e-9): a window missing, stale, shifted or
out of order differs far beyond that. The losses must be finite and the last epoch's mean below the first's. A
failure exits 1.

    python3 sliding_windows.py [--mode MODE] [--channels 32] [--length 8388608] [--window 512] [--horizon 64]
                               [--batch 256] [--windows 65536] [--epochs 2] [--hidden 512] [--lr 0.001]
                               [--workers 4]

Modes (the same windows in the same order, the same training, the same checksum):
  as_written     ``DataLoader(..., pin_memory=False)`` (the default), ``x.to(device)``, ``y.to(device)``: each batch
                 collated into fresh pageable tensors, blocking copies
  pinned_loader  ``DataLoader(..., pin_memory=True)`` (each collated batch copied into pinned memory by the loader,
                 in the main process), ``.to(device, non_blocking=True)``
  series_on_gpu  the whole series moved to the GPU once at the start of the loop (``series.to(device)``, 1 GiB);
                 each batch's window starts drawn by a DataLoader over ``range(len(ds))`` with the same sampler
                 (the same draws), ``starts.to(device)`` (2 KiB), the windows gathered on the GPU by advanced
                 indexing (``series_gpu[starts[:, None] + arange(L)]``, and the targets likewise)
  workers        ``num_workers=--workers`` (4) worker processes collating the batches (``persistent_workers=False``:
                 started each epoch; the sampler with its own generator runs in the main process, so the order is
                 as_written's), ``pin_memory=True``, ``.to(device, non_blocking=True)``
"""

import copy
import math
import sys

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, RandomSampler

from harness import parse, report

MODES = ("as_written", "pinned_loader", "series_on_gpu", "workers")
SEED = 0  # the sampler's generator
CHUNK = 1 << 18  # time steps made at once


class SlidingWindows(Dataset):
    """Every window of a (time, channels) series: the ``window`` steps from ``i`` and the ``horizon`` steps after."""

    def __init__(self, series: torch.Tensor, window: int, horizon: int):
        self.series, self.window, self.horizon = series, window, horizon

    def __len__(self):
        return len(self.series) - self.window - self.horizon + 1

    def __getitem__(self, i):
        x = self.series[i:i + self.window]
        y = self.series[i + self.window:i + self.window + self.horizon]
        return x, y


def make_series(length: int, channels: int) -> torch.Tensor:
    """Each channel a * sin(2 pi t / p + phi) + b * sin(2 pi t / q + psi) + 0.1 noise, all seeded; (length, channels).
    Made in chunks of CHUNK steps by angle addition (the sines and cosines of one chunk's steps taken once)."""
    g = torch.Generator().manual_seed(1)
    p = 16 + 240 * torch.rand(channels, generator=g, dtype=torch.float64)
    q = 256 + 3840 * torch.rand(channels, generator=g, dtype=torch.float64)
    k = torch.arange(min(CHUNK, length), dtype=torch.float64)[:, None]
    waves = []  # (amplitude * sin(w k), amplitude * cos(w k), w, phase) of each sinusoid
    for period in (p, q):
        w = 2 * math.pi / period
        amp = 0.5 + torch.rand(channels, generator=g, dtype=torch.float64)
        phase = 2 * math.pi * torch.rand(channels, generator=g, dtype=torch.float64)
        waves.append(((amp * torch.sin(w * k)).float(), (amp * torch.cos(w * k)).float(), w, phase))
    series = torch.empty(length, channels)
    for start in range(0, length, CHUNK):
        n = min(CHUNK, length - start)
        out = series[start:start + n]
        torch.randn(n, channels, generator=g, out=out)
        out.mul_(0.1)
        for sin_wk, cos_wk, w, phase in waves:  # sin(w (start + k) + phase), by angle addition
            angle = w * start + phase
            out.addcmul_(sin_wk[:n], torch.cos(angle).float()).addcmul_(cos_wk[:n], torch.sin(angle).float())
    return series


class Forecaster(nn.Module):
    """Two strided 1-D convolutions over the window's time axis, an MLP from their features to the H x C forecast."""

    def __init__(self, channels: int, window: int, horizon: int, hidden: int, width: int = 64):
        super().__init__()
        self.horizon, self.channels = horizon, channels
        self.conv = nn.Sequential(nn.Conv1d(channels, width, 8, stride=4, padding=2), nn.GELU(),
                                  nn.Conv1d(width, width, 4, stride=4), nn.GELU(), nn.Flatten())
        with torch.no_grad():
            features = self.conv(torch.zeros(1, channels, window)).shape[1]
        self.mlp = nn.Sequential(nn.Linear(features, hidden), nn.GELU(), nn.Linear(hidden, horizon * channels))

    def forward(self, x):  # x: (batch, window, channels)
        out = self.mlp(self.conv(x.transpose(1, 2)))
        return out.view(-1, self.horizon, self.channels)


def main():
    args = parse(MODES, __doc__, channels=32, length=8388608, window=512, horizon=64, batch=256, windows=65536,
                 epochs=2, hidden=512, lr=1e-3, workers=4)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.backends.cudnn.deterministic = True  # the same updates in every mode (the checksum)
    C, L, H, B, W, E = args.channels, args.window, args.horizon, args.batch, args.windows, args.epochs
    if L < 16 or H < 1 or args.length < L + H or B < 1 or W < 1 or E < 2 or args.workers < 1:
        sys.exit(f"sliding_windows: a series of {args.length} steps, windows of {L} + {H}, batches of {B}, {W} "
                 f"windows an epoch, {E} epochs, {args.workers} workers: need a window of 16 steps or more within "
                 f"the series, a batch, a window an epoch, 2 epochs and a worker")
    series = make_series(args.length, C)
    ds = SlidingWindows(series, L, H)
    prefix = torch.zeros(args.length + 1, dtype=torch.float64)  # for the check after the loop
    row_sums = torch.cat([series[i:i + CHUNK].sum(1, dtype=torch.float64) for i in range(0, args.length, CHUNK)])
    torch.cumsum(row_sums, 0, out=prefix[1:])
    per_epoch = -(-W // B)
    sizes = sorted({B, W % B or B})

    torch.manual_seed(0)
    model = Forecaster(C, L, H, args.hidden).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.MSELoss()

    # cuDNN's, cuBLAS's and Adam's first calls, on a copy: the real model, optimizer and generators untouched
    spare = copy.deepcopy(model)
    spare_opt = torch.optim.Adam(spare.parameters(), lr=args.lr)
    for m in sizes:
        spare_opt.zero_grad()
        out = loss_fn(spare(torch.zeros((m, L, C), device=device)), torch.zeros((m, H, C), device=device))
        out.backward()
        spare_opt.step()
        torch.zeros((m, L, C), device=device).sum(dtype=torch.float64)
    del spare, spare_opt, out

    def sampler(source):
        return RandomSampler(source, replacement=True, num_samples=W, generator=torch.Generator().manual_seed(SEED))

    def loop():
        seen = torch.zeros((E * per_epoch, 2), dtype=torch.float64, device=device)
        epochs = []  # every epoch's losses, as Python floats, in step order
        s = 0

        def train_step(x, y):
            nonlocal s
            seen[s, 0] = x.sum(dtype=torch.float64)  # the batch's fingerprint, checked after the loop
            seen[s, 1] = y.sum(dtype=torch.float64)
            s += 1
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            return loss.item()

        model.train()
        if args.mode == "series_on_gpu":
            series_gpu = series.to(device)
            offsets_x = torch.arange(L, device=device)
            offsets_y = torch.arange(L, L + H, device=device)
            starts_loader = DataLoader(range(len(ds)), batch_size=B, sampler=sampler(ds))
            for epoch in range(E):
                running_loss = []
                for starts in starts_loader:
                    starts = starts.to(device)[:, None]
                    x = series_gpu[starts + offsets_x]
                    y = series_gpu[starts + offsets_y]
                    running_loss.append(train_step(x, y))
                epochs.append(running_loss)
        else:
            pin = args.mode != "as_written"
            loader = DataLoader(ds, batch_size=B, sampler=sampler(ds), pin_memory=pin,
                                num_workers=args.workers if args.mode == "workers" else 0, persistent_workers=False)
            for epoch in range(E):
                running_loss = []
                for x, y in loader:
                    x, y = x.to(device, non_blocking=pin), y.to(device, non_blocking=pin)
                    running_loss.append(train_step(x, y))
                epochs.append(running_loss)

        check_batches(seen.cpu(), s)
        check_losses(epochs)
        loss_sum = 0.0
        for running_loss in epochs:
            for v in running_loss:
                loss_sum += v
        param_sum = sum(p.detach().double().sum().item() for p in model.parameters())
        return loss_sum + param_sum

    def check_batches(seen: torch.Tensor, steps: int) -> None:
        """Every step's input and target sums against those of a fresh sampler's windows, from the host; exit 1."""
        if steps != E * per_epoch:
            sys.exit(f"sliding_windows: {steps} training steps, {E} epochs of {per_epoch} batches expected")
        ref = DataLoader(range(len(ds)), batch_size=B, sampler=sampler(ds))
        s = 0
        for epoch in range(E):
            for starts in ref:
                want_x = (prefix[starts + L] - prefix[starts]).sum().item()
                want_y = (prefix[starts + L + H] - prefix[starts + L]).sum().item()
                got_x, got_y = seen[s, 0].item(), seen[s, 1].item()
                if not (math.isclose(got_x, want_x, rel_tol=1e-9, abs_tol=1e-6)
                        and math.isclose(got_y, want_y, rel_tol=1e-9, abs_tol=1e-6)):
                    sys.exit(f"sliding_windows: epoch {epoch}'s step {s}: its inputs summed to {got_x:.12g} and "
                             f"targets to {got_y:.12g}, the reference windows' to {want_x:.12g} and {want_y:.12g}")
                s += 1

    def check_losses(epochs: list) -> None:
        """The losses finite, and the model learned (the last epoch's mean loss below the first's); exit 1."""
        flat = [v for running_loss in epochs for v in running_loss]
        if not all(math.isfinite(v) for v in flat):
            sys.exit(f"sliding_windows: {sum(not math.isfinite(v) for v in flat)} losses are not finite")
        first, last = (sum(epochs[k]) / len(epochs[k]) for k in (0, -1))
        if not last < first:
            sys.exit(f"sliding_windows: the last epoch's mean loss {last:.6g} is not below the first's {first:.6g}")

    report(args, loop, "sliding_windows")


if __name__ == "__main__":
    main()
