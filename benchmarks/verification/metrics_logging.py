"""A training loop that logs its metrics every step, as the tutorials write it: an MLP
(``--features``-``--hidden``-``--hidden``-``--classes``, ReLU; 256-2048-2048-1000) trained with Adam (``--lr``
1e-3) and cross-entropy on a synthetic dataset kept on the GPU (``--steps`` x ``--batch`` rows of standard normal
features from a seeded GPU generator, each labelled by the argmax of a fixed random linear teacher; made before the
timed loop), batches of ``--batch`` (8192) rows in an order shuffled each epoch on the GPU, ``--epochs`` epochs (4)
of ``--steps`` steps (50). After each step's ``opt.step()`` the loop logs: ``losses.append(loss.item())``,
``preds.append(logits.argmax(1).cpu())``, ``targets.append(y.cpu())``, and a top-5 hit count taken on the host
from the step's logits moved there, ``top5_hits(logits.detach().cpu(), y)`` (8192 x 1000 float32: 31 MiB a step,
6 GiB over the loop); at each epoch's end the top-1 accuracy is taken with numpy from the collected predictions and
targets. No ``torch.cuda.synchronize()`` anywhere: the host waits only where it reads.

The checksum is, summed over the epochs, the top-1 hits (from the collected predictions) plus the top-5 hits plus
the sum of the logged losses (every mode trains the same: the same kernels in the same order); the top-5 hits are
counted with ``topk`` on the host or on the GPU, so a tie at the fifth place may count differently, by far less
than run_gpu.py's tolerance. Every epoch's collected predictions and targets are also checked: as many as the epoch
has rows, the targets the labels of the epoch's rows in its order (exit 1).

    python3 metrics_logging.py [--mode MODE] [--epochs 4] [--steps 50] [--batch 8192] [--features 256]
                               [--hidden 2048] [--classes 1000] [--lr 1e-3]

Modes (the same training, the same metrics, the same checksum):
  as_written    each step ``loss.item()``, ``.cpu()`` of the predictions, the targets and the logits (fresh
                pageable tensors), the top-5 hits counted on the host
  pinned_async  pinned buffers allocated at the start of the loop (the logits, a step's; the predictions, targets
                and losses, an epoch's): each step ``copy_(..., non_blocking=True)`` into them, one event recorded
                and synchronized before the host counts the top-5 hits in the pinned logits; the epoch's losses,
                predictions and targets read from the pinned buffers at its end
  gpu_metrics   the metrics computed on the GPU: the top-1 and top-5 hits accumulated in GPU tensors, each loss
                written into a GPU tensor; all read once at the epoch's end (``.item()``, ``.tolist()``)
  side_stream   right after the forward step (before the backward), a side ``torch.cuda.Stream`` that
                ``wait_stream``s the training's copies the logits (into one of two pinned buffers), the predictions,
                the targets and the loss into pinned buffers (``non_blocking=True``; ``record_stream`` on the tensors
                it reads), an event recorded; the host counts step i-1's top-5 hits after waiting on its event, while
                the GPU runs step i; the epoch's end waits on the last step's copies
"""

import sys

import numpy as np
import torch
import torch.nn as nn

from harness import parse, report

MODES = ("as_written", "pinned_async", "gpu_metrics", "side_stream")


def make_model(features: int, hidden: int, classes: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, classes))


def top5_hits(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """How many rows have their target among their five largest logits (a 0-dim tensor on their device)."""
    return logits.topk(5, 1).indices.eq(targets[:, None]).any(1).sum()


def check_epoch(epoch: int, preds: np.ndarray, targets: np.ndarray, want: np.ndarray, classes: int) -> None:
    """The epoch's collected predictions and targets: every row's, the targets its labels in its order; exit 1."""
    if preds.shape != want.shape or targets.shape != want.shape:
        sys.exit(f"metrics_logging: epoch {epoch}: {preds.shape[0]} predictions and {targets.shape[0]} targets "
                 f"collected, {want.shape[0]} rows")
    bad = np.flatnonzero(targets != want)
    if len(bad) or preds.min() < 0 or preds.max() >= classes:
        r = bad[0] if len(bad) else 0
        sys.exit(f"metrics_logging: epoch {epoch}: row {r}: target {targets[r]}, label {want[r]} ({len(bad)} rows "
                 f"differ); predictions {preds.min()} to {preds.max()}")


def main():
    args = parse(MODES, __doc__, epochs=4, steps=50, batch=8192, features=256, hidden=2048, classes=1000, lr=1e-3)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    B, rows = args.batch, args.steps * args.batch
    gen = torch.Generator(device=device).manual_seed(0)  # the data and each epoch's order, made on the GPU
    data = torch.randn(rows, args.features, device=device, generator=gen)
    teacher = torch.randn(args.features, args.classes, device=device, generator=gen)
    labels = torch.cat([(data[i:i + B] @ teacher).argmax(1) for i in range(0, rows, B)])
    orders = [torch.randperm(rows, device=device, generator=gen) for _ in range(args.epochs)]
    want = [labels[o].cpu().numpy() for o in orders]  # what each epoch's collected targets must be
    torch.manual_seed(0)
    model = make_model(args.features, args.hidden, args.classes).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()

    def loop():
        pin_logits = pin_preds = pin_targets = pin_losses = side = None
        if args.mode in ("pinned_async", "side_stream"):
            nbuf = 2 if args.mode == "side_stream" else 1
            pin_logits = [torch.empty((B, args.classes), pin_memory=True) for _ in range(nbuf)]
            pin_preds = torch.empty(rows, dtype=torch.long, pin_memory=True)
            pin_targets = torch.empty(rows, dtype=torch.long, pin_memory=True)
            pin_losses = torch.empty(args.steps, pin_memory=True)
        if args.mode == "side_stream":
            side = torch.cuda.Stream()
        if args.mode == "gpu_metrics":
            gpu_losses = torch.empty(args.steps, device=device)

        def count(s, k, done):
            """side_stream: step s's top-5 hits from logits buffer k, once its copies (``done[k]``) have landed."""
            done[k].synchronize()
            return top5_hits(pin_logits[k], pin_targets[s * B:(s + 1) * B]).item()

        total = 0.0
        for epoch in range(args.epochs):
            order = orders[epoch]
            losses, preds, targets, top5 = [], [], [], 0
            hits1 = hits5 = None
            if args.mode == "gpu_metrics":
                hits1 = torch.zeros((), dtype=torch.long, device=device)
                hits5 = torch.zeros((), dtype=torch.long, device=device)
            done = [None, None]  # side_stream: the copies' events, a logits buffer each
            pending = None  # side_stream: the step whose top-5 hits the host has yet to count
            for s in range(args.steps):
                idx = order[s * B:(s + 1) * B]
                x, y = data[idx], labels[idx]
                logits = model(x)
                loss = loss_fn(logits, y)
                if args.mode == "side_stream":
                    k = s % 2
                    with torch.no_grad():
                        lg = logits.detach()
                        pr = lg.argmax(1)
                    if done[k] is not None:
                        done[k].synchronize()  # counted already (one step behind): the buffer may be written
                    side.wait_stream(torch.cuda.current_stream())  # the logits, predictions and loss are made
                    with torch.cuda.stream(side):
                        pin_logits[k].copy_(lg, non_blocking=True)
                        pin_preds[s * B:(s + 1) * B].copy_(pr, non_blocking=True)
                        pin_targets[s * B:(s + 1) * B].copy_(y, non_blocking=True)
                        pin_losses[s].copy_(loss.detach(), non_blocking=True)
                        done[k] = side.record_event()
                    for t in (lg, pr, y, loss):
                        t.record_stream(side)  # the allocator keeps them until the side stream has read them
                opt.zero_grad()
                loss.backward()
                opt.step()
                if args.mode == "as_written":
                    losses.append(loss.item())
                    preds.append(logits.argmax(1).cpu())
                    targets.append(y.cpu())
                    top5 += top5_hits(logits.detach().cpu(), targets[-1]).item()
                elif args.mode == "pinned_async":
                    with torch.no_grad():
                        pin_losses[s].copy_(loss.detach(), non_blocking=True)
                        pin_preds[s * B:(s + 1) * B].copy_(logits.argmax(1), non_blocking=True)
                        pin_targets[s * B:(s + 1) * B].copy_(y, non_blocking=True)
                        pin_logits[0].copy_(logits.detach(), non_blocking=True)
                    copied = torch.cuda.Event()
                    copied.record()
                    copied.synchronize()  # the copies have landed: the host reads the pinned buffers
                    top5 += top5_hits(pin_logits[0], pin_targets[s * B:(s + 1) * B]).item()
                elif args.mode == "gpu_metrics":
                    with torch.no_grad():
                        gpu_losses[s] = loss.detach()
                        hits1 += logits.argmax(1).eq(y).sum()
                        hits5 += top5_hits(logits.detach(), y)
                elif pending is not None:  # side_stream: the previous step's, while the GPU runs this one
                    top5 += count(*pending, done)
                if args.mode == "side_stream":
                    pending = (s, k)
            # the epoch's end: its metrics
            if args.mode == "as_written":
                preds = torch.cat(preds).numpy()
                targets = torch.cat(targets).numpy()
            elif args.mode == "gpu_metrics":
                losses = gpu_losses.tolist()
                top1, top5 = hits1.item(), hits5.item()
            else:
                if pending is not None:
                    top5 += count(*pending, done)  # its event follows every copy of the epoch on the side stream
                losses = pin_losses.tolist()
                preds, targets = pin_preds.numpy().copy(), pin_targets.numpy().copy()
            if args.mode != "gpu_metrics":
                check_epoch(epoch, preds, targets, want[epoch], args.classes)
                top1 = int((preds == targets).sum())
            total += top1 + top5 + sum(losses)
        return total

    report(args, loop, "metrics_logging")


if __name__ == "__main__":
    main()
