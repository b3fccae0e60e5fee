"""Evaluating a classifier over an in-memory dataset and collecting its logits, as the tutorials write it: a CPU
float32 tensor of ``--mib`` MiB (1 GiB by default: rows of ``--features`` 4096, standard normal from a seeded
generator, made before the timed loop), an MLP (``--features``-``--hidden``-``--hidden``-``--classes``, ReLU;
4096-2048-2048-1000) in eval mode under ``torch.no_grad()``, batches of ``--batch-mib`` MiB (16 MiB, 1024 rows)
sliced from the tensor in order and moved with ``.to(device)``; each batch's logits (1024 x 1000 float32, 3.9 MiB)
collected with ``preds.append(logits.cpu())`` and joined with ``torch.cat(preds)`` after the last batch (256 MiB
of logits a pass). The evaluation runs ``--passes`` times (3), as after each of several epochs: between two passes
every weight is scaled by 1.01 on the GPU (a stand-in for the training between them), so no two passes' logits are
the same and a stale one shows. The checksum is, summed over the passes, the float64 sum of the absolute values of
every row's float64 sum, taken by the host from the collected logits. Every row's float64 sum is also taken on the
GPU from the logits as they were computed (kept there, read once a pass) and compared with the host's: a row that
did not arrive, or arrived from another batch or pass, differs; a mismatch exits 1.

    python3 eval_collect.py [--mode MODE] [--mib 1024] [--batch-mib 16] [--features 4096] [--hidden 2048]
                            [--classes 1000] [--passes 3]

Modes (the same batches in the same order, the same logits, the same checksum):
  as_written     each batch ``data[i:j].to(device)`` from pageable memory, its logits ``preds.append(logits.cpu())``
                 (a fresh pageable tensor a batch), ``torch.cat(preds)`` after the last batch
  pinned_out     one pinned tensor for all the logits (rows x classes) allocated at the start of the loop: each
                 batch's logits ``out[i:j].copy_(logits, non_blocking=True)``, one ``torch.cuda.synchronize()``
                 after the pass's last batch, before the host reads ``out`` (no ``torch.cat``: ``out`` is the whole);
                 the inputs as in as_written
  gpu_collect    the logits kept on the GPU: each batch's ``gpu_out[i:j].copy_(logits)`` into one GPU tensor
                 allocated at the start of the loop, ``gpu_out.cpu()`` once after the pass's last batch; the inputs as
                 in as_written
  pinned_in_out  the dataset pinned once at the start of the loop (``data.pin_memory()``), each batch a slice of it
                 ``.to(device, non_blocking=True)``; the logits into one pinned tensor as in pinned_out
  dataset_on_gpu the dataset moved to the GPU once at the start of the loop (``data.to(device)``), each batch a
                 slice of it there; the logits as in as_written (added after umprof's advice on the as_written
                 traces named this change, to time it)
"""

import sys

import torch
import torch.nn as nn

from harness import parse, report

MODES = ("as_written", "pinned_out", "gpu_collect", "pinned_in_out", "dataset_on_gpu")
NUDGE = 1.01  # every weight scaled by it between two passes


def make_model(features: int, hidden: int, classes: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, classes))


def check_rows(host_rows: torch.Tensor, gpu_rows: torch.Tensor, p: int) -> None:
    """The host's row sums of a pass's collected logits against the GPU's of the logits it computed; exit 1."""
    bad = torch.nonzero(~torch.isclose(host_rows, gpu_rows, rtol=1e-7, atol=1e-6)).flatten()
    if len(bad):
        r = bad[0].item()
        sys.exit(f"eval_collect: pass {p}, row {r}: the collected logits sum to {host_rows[r].item():.9g}, the "
                 f"computed ones to {gpu_rows[r].item():.9g} ({len(bad)} rows differ)")


def main():
    args = parse(MODES, __doc__, mib=1024, batch_mib=16, features=4096, hidden=2048, classes=1000, passes=3)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    rows = (args.mib << 20) // (4 * args.features)
    step = (args.batch_mib << 20) // (4 * args.features)  # rows a batch
    spans = [(r0, min(r0 + step, rows)) for r0 in range(0, rows, step)]
    data = torch.randn(rows, args.features, generator=torch.Generator().manual_seed(0))
    torch.manual_seed(0)
    model = make_model(args.features, args.hidden, args.classes).to(device)
    model.eval()

    def evaluate(inputs, non_blocking, out, gpu_rows):
        """One pass over the dataset: the collected logits (rows x classes) on the host."""
        preds = []
        for r0, r1 in spans:
            x = inputs[r0:r1].to(device, non_blocking=non_blocking)
            logits = model(x)
            gpu_rows[r0:r1] = logits.sum(1, dtype=torch.float64)  # the check's: what the host must find
            if args.mode in ("as_written", "dataset_on_gpu"):
                preds.append(logits.cpu())
            elif args.mode == "gpu_collect":
                out[r0:r1].copy_(logits)
            else:
                out[r0:r1].copy_(logits, non_blocking=True)
        if args.mode in ("as_written", "dataset_on_gpu"):
            return torch.cat(preds)
        if args.mode == "gpu_collect":
            return out.cpu()
        torch.cuda.synchronize()  # every batch's logits have arrived in the pinned tensor: the host reads it
        return out

    def loop():
        inputs, non_blocking, out = data, False, None
        if args.mode in ("pinned_out", "pinned_in_out"):
            out = torch.empty((rows, args.classes), pin_memory=True)
        elif args.mode == "gpu_collect":
            out = torch.empty((rows, args.classes), device=device)
        if args.mode == "pinned_in_out":  # the dataset pinned once: every pass's uploads come from it
            inputs, non_blocking = data.pin_memory(), True
        elif args.mode == "dataset_on_gpu":  # the dataset moved once: every pass's batches are slices on the GPU
            inputs = data.to(device)
        gpu_rows = torch.empty(rows, dtype=torch.float64, device=device)
        total = 0.0
        with torch.no_grad():
            for p in range(args.passes):
                if p:
                    for w in model.parameters():  # a stand-in for the training between two evaluations
                        w.mul_(NUDGE)
                all_logits = evaluate(inputs, non_blocking, out, gpu_rows)
                host_rows = all_logits.sum(1, dtype=torch.float64)
                check_rows(host_rows, gpu_rows.cpu(), p)
                total += host_rows.abs().sum().item()
        return total

    report(args, loop, "eval_collect")


if __name__ == "__main__":
    main()
