"""An optimizer offloaded to the host, as a ZeRO-Offload-like training step is written by hand: a stack of
``--depth`` ``Linear(--width, --width)`` layers (ReLU between; 4 x 4096 x 4096: 67 M float32 parameters, 256 MiB,
by default) on the GPU, trained on random data kept there (``DATA`` batches of ``--batch`` rows used in turn, MSE),
whose Adam optimizer state and float32 master copy of the parameters live on the host. Each step: forward and
backward on the GPU, every gradient copied to the host (``m.grad = p.grad.cpu()``), ``torch.optim.Adam`` stepped
over the host's master parameters, and every updated parameter copied back (``p.data.copy_(m)``); ``--steps``
steps (12). The master copy and the optimizer are made at the start of the loop (each mode's own preparation). The
checksum is how far the parameters on the GPU moved from their initial values (the float64 sum of the absolute
differences) plus the float64 sum of every step's loss, read once at the end. After the loop the GPU's parameters
are compared with the host's master copy (they must be equal: the last copy back arrived); a mismatch exits 1.

    python3 cpu_adam_offload.py [--mode MODE] [--steps 12] [--width 4096] [--depth 4] [--batch 1024] [--lr 1e-4]

Modes (the same updates, the same checksum):
  as_written      ``m.grad = p.grad.cpu()`` (a fresh pageable tensor a parameter, each step), Adam over pageable
                  master parameters, ``p.data.copy_(m)`` from pageable memory
  pinned_buffers  the master parameters and one gradient buffer a parameter preallocated in pinned memory: each
                  gradient ``copy_(p.grad, non_blocking=True)`` into its buffer, one ``torch.cuda.synchronize()``
                  (the gradients have arrived and the last step's copies back have read the masters), Adam, each
                  parameter ``p.data.copy_(m, non_blocking=True)``
  flat_pinned     the GPU's parameters and gradients made views of one contiguous GPU buffer each, the master and
                  its gradient one pinned flat tensor each: one gradient copy to the host and one parameter copy back
                  a step (``non_blocking=True``, one synchronize), Adam over the one flat master tensor
  gpu_optimizer   ``torch.optim.Adam(model.parameters())`` on the GPU: nothing moved (what a user tries where the
                  optimizer's state fits in the GPU's memory)

Adam on the host (single-tensor, float32) and on the GPU (foreach, float32) round differently in the last bit; the
parameters then differ by an ulp or so each step, which changes the checksum (about 2.5e4 by default, a sum of 67 M
displacements of about 4e-4 on average) by far less than run_gpu.py's 1e-4 relative tolerance.
"""

import sys

import torch
import torch.nn as nn

from harness import parse, report

MODES = ("as_written", "pinned_buffers", "flat_pinned", "gpu_optimizer")
DATA = 4  # batches of random data kept on the GPU, used in turn


def make_model(width: int, depth: int) -> nn.Sequential:
    layers = []
    for i in range(depth):
        layers.append(nn.Linear(width, width))
        if i < depth - 1:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def as_written(params, lr):
    """Pageable master copy; each step the gradients ``.cpu()``, Adam on the host, ``p.data.copy_(m)``."""
    master = [p.detach().to("cpu", copy=True) for p in params]  # a copy, even from the CPU (the dry run)
    opt = torch.optim.Adam(master, lr=lr)

    def update():
        for m, p in zip(master, params):
            m.grad = p.grad.cpu()
        opt.step()
        for m, p in zip(master, params):
            p.data.copy_(m)
    return update, master


def pinned_buffers(params, lr):
    """Pinned masters and gradient buffers, one per parameter; asynchronous copies, one synchronize a step."""
    master = [torch.empty(p.shape, pin_memory=True) for p in params]
    for m, p in zip(master, params):
        m.copy_(p.detach())
        m.grad = torch.empty(p.shape, pin_memory=True)
    opt = torch.optim.Adam(master, lr=lr)

    def update():
        for m, p in zip(master, params):
            m.grad.copy_(p.grad, non_blocking=True)
        torch.cuda.synchronize()  # the gradients are on the host; last step's copies back have read the masters
        opt.step()
        for m, p in zip(master, params):
            p.data.copy_(m, non_blocking=True)  # the next step's forward follows them on the stream
    return update, master


def flatten(params, device):
    """The parameters and their gradients made views of one flat GPU buffer each (backward accumulates into the
    gradient views in place, so they must be zeroed, never set to None)."""
    total = sum(p.numel() for p in params)
    flat = torch.empty(total, device=device)
    grads = torch.zeros(total, device=device)
    off = 0
    for p in params:
        n = p.numel()
        flat[off:off + n].copy_(p.detach().reshape(-1))
        p.data = flat[off:off + n].view_as(p)
        p.grad = grads[off:off + n].view_as(p)
        off += n
    return flat, grads


def flat_pinned(params, lr, device):
    """One flat pinned master and gradient: one copy each way a step, Adam over one tensor."""
    flat, grads = flatten(params, device)
    master = torch.empty(flat.numel(), pin_memory=True)
    master.copy_(flat)
    master.grad = torch.empty(flat.numel(), pin_memory=True)
    opt = torch.optim.Adam([master], lr=lr)

    def update():
        master.grad.copy_(grads, non_blocking=True)
        torch.cuda.synchronize()  # the gradients are on the host; last step's copy back has read the master
        opt.step()
        flat.copy_(master, non_blocking=True)
    views, off = [], 0
    for p in params:  # the master's parameters, shaped as the model's (the check after the loop)
        views.append(master[off:off + p.numel()].view_as(p))
        off += p.numel()
    return update, views, grads


def check_copied(params, master) -> None:
    """The GPU's parameters against the host's masters after the loop: the last copy back arrived whole."""
    for i, (p, m) in enumerate(zip(params, master)):
        if not torch.equal(p.detach().cpu(), m):
            sys.exit(f"cpu_adam_offload: parameter {i} on the GPU differs from its master copy on the host "
                     f"(largest difference {(p.detach().cpu() - m).abs().max().item():.3g})")


def main():
    args = parse(MODES, __doc__, steps=12, width=4096, depth=4, batch=1024, lr=1e-4)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    g = torch.Generator().manual_seed(0)
    inputs = torch.randn(DATA, args.batch, args.width, generator=g).to(device)
    targets = torch.randn(DATA, args.batch, args.width, generator=g).to(device)
    torch.manual_seed(0)
    model = make_model(args.width, args.depth).to(device)
    params = list(model.parameters())
    initial = [p.detach().clone() for p in params]  # what the checksum measures from
    loss_fn = nn.MSELoss()
    # torch.optim's first optimizer imports what it needs (about a second): process start, not the loop's
    torch.optim.Adam([nn.Parameter(torch.zeros(1))])
    held = {}  # the mode's master copy, for the check after the loop

    def loop():
        grads = None  # flat_pinned: the flat gradient buffer, zeroed in place
        if args.mode == "as_written":
            update, held["master"] = as_written(params, args.lr)
        elif args.mode == "pinned_buffers":
            update, held["master"] = pinned_buffers(params, args.lr)
        elif args.mode == "flat_pinned":
            update, held["master"], grads = flat_pinned(params, args.lr, device)
        else:
            update = torch.optim.Adam(params, lr=args.lr).step
        total = torch.zeros((), dtype=torch.float64, device=device)
        for step in range(args.steps):
            if grads is None:
                model.zero_grad()
            else:
                grads.zero_()
            loss = loss_fn(model(inputs[step % DATA]), targets[step % DATA])
            loss.backward()
            update()
            total += loss.detach().double()
        moved = sum(torch.sub(p.detach(), p0).abs_().sum(dtype=torch.float64) for p, p0 in zip(params, initial))
        return (moved + total).item()

    report(args, loop, "cpu_adam_offload")
    if "master" in held:
        check_copied(params, held["master"])


if __name__ == "__main__":
    main()
