"""In-memory checkpoints of the weights on the host during training, as users write them: a stack of ``--depth``
``Linear(--width, --width)`` layers (ReLU between; 6 x 4096 x 4096: 101 M float32 parameters, 384 MiB, by default)
trained with Adam (``--lr`` 1e-4, on the GPU) on random data made on the GPU each step (``--batch`` rows of inputs
and targets from a seeded GPU generator, MSE); every ``--every`` steps (4), after the optimizer's step, the weights
are snapshotted to the host, ``snapshot = {k: v.detach().cpu() for k, v in model.state_dict().items()}``, the new
snapshot replacing the previous one (the latest kept for a rollback, never read unless needed); ``--steps`` steps
(40). The initial weights are kept on the host and on the GPU (before the loop); the checksum is how far the last
snapshot is from them (the float64 sum of the absolute differences, taken by the host) plus how far the final
weights are (the same on the GPU), read once at the end. At each snapshot every entry's float64 sum is also taken
on the GPU, on the training's stream, before the next step; after the loop the last snapshot's entries must have
those sums (a snapshot torn by a later step, or not yet arrived, differs); a mismatch exits 1.

    python3 checkpoint_copies.py [--mode MODE] [--steps 40] [--every 4] [--width 4096] [--depth 6] [--batch 1024]
                                 [--lr 1e-4]

Modes (the same steps, the same snapshots, the same checksum):
  as_written       ``{k: v.detach().cpu() ...}``: a fresh pageable tensor an entry, each snapshot
  pinned_snapshot  one pinned tensor an entry allocated at the start of the loop: each snapshot every entry
                   ``copy_(v, non_blocking=True)`` into its tensor, then ``torch.cuda.current_stream().synchronize()``
                   before the snapshot is considered done
  side_stream      the same pinned tensors, and one GPU tensor an entry (a staging clone) allocated at the start of
                   the loop: each snapshot every entry ``copy_(v)`` into its clone on the training's stream (device to
                   device: the weights as of this step, whatever the next steps write), an event recorded, and a side
                   ``torch.cuda.Stream`` that waits on it copies the clones into the pinned tensors
                   (``non_blocking=True``) while the training goes on, an event recorded after the copies; the next
                   snapshot (before it writes the clones and the pinned tensors again) and the end wait on that event
                   on the host. The optimizer never waits: it writes the weights, not the clones the copies read
  gpu_clone        each snapshot ``{k: v.detach().clone() ...}`` kept on the GPU (replacing the previous one), copied
                   to the host (``.cpu()``, an entry at a time) once, after the last step
"""

import sys

import torch
import torch.nn as nn

from harness import parse, report

MODES = ("as_written", "pinned_snapshot", "side_stream", "gpu_clone")


def make_model(width: int, depth: int) -> nn.Sequential:
    layers = []
    for i in range(depth):
        layers.append(nn.Linear(width, width))
        if i < depth - 1:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def entry_sums(state: dict) -> torch.Tensor:
    """Every entry's float64 sum (on the entries' device): what the snapshot taken now must hold."""
    return torch.stack([v.detach().sum(dtype=torch.float64) for v in state.values()])


def check_snapshot(snapshot: dict, want: torch.Tensor) -> None:
    """The last snapshot's entries against the sums the GPU took of the weights when it was taken; exit 1."""
    got = entry_sums(snapshot)
    want = want.cpu()
    bad = torch.nonzero(~torch.isclose(got, want, rtol=1e-9, atol=1e-6)).flatten()
    if len(bad):
        i = bad[0].item()
        sys.exit(f"checkpoint_copies: the last snapshot's {list(snapshot)[i]} sums to {got[i].item():.12g}, the "
                 f"weights it was taken of to {want[i].item():.12g} ({len(bad)} entries differ)")


def main():
    args = parse(MODES, __doc__, steps=40, every=4, width=4096, depth=6, batch=1024, lr=1e-4)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    model = make_model(args.width, args.depth).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.MSELoss()
    gen = torch.Generator(device=device).manual_seed(1)  # the steps' random data, made on the GPU
    initial_gpu = {k: v.detach().clone() for k, v in model.state_dict().items()}  # what the checksum measures from
    initial_host = {k: v.cpu() for k, v in initial_gpu.items()}
    held = {}  # the last snapshot and its entries' sums on the GPU, for the check after the loop

    def loop():
        state = model.state_dict()
        pinned = staging = side = copied = None
        if args.mode in ("pinned_snapshot", "side_stream"):
            pinned = {k: torch.empty(v.shape, dtype=v.dtype, pin_memory=True) for k, v in state.items()}
        if args.mode == "side_stream":
            staging = {k: torch.empty_like(v) for k, v in state.items()}
            side = torch.cuda.Stream()
        snapshot = want = None
        for step in range(args.steps):
            x = torch.randn(args.batch, args.width, device=device, generator=gen)
            y = torch.randn(args.batch, args.width, device=device, generator=gen)
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            if (step + 1) % args.every:
                continue
            if args.mode == "as_written":
                snapshot = {k: v.detach().cpu() for k, v in model.state_dict().items()}
                if device.type == "cpu":  # the CPU dry run: there ``.cpu()`` is the weights themselves, not a copy
                    snapshot = {k: v.clone() for k, v in snapshot.items()}
            elif args.mode == "pinned_snapshot":
                for k, v in model.state_dict().items():
                    pinned[k].copy_(v.detach(), non_blocking=True)
                torch.cuda.current_stream().synchronize()  # the snapshot has arrived: it is done
                snapshot = pinned
            elif args.mode == "side_stream":
                if copied is not None:
                    copied.synchronize()  # the previous snapshot's copies have read the clones, written the pinned
                for k, v in model.state_dict().items():
                    staging[k].copy_(v.detach())  # on the training's stream: the weights after this step
                ready = torch.cuda.Event()
                ready.record()
                copied = torch.cuda.Event()
                with torch.cuda.stream(side):
                    side.wait_event(ready)  # the clones hold this step's weights
                    for k, v in staging.items():
                        pinned[k].copy_(v, non_blocking=True)
                    copied.record(side)
                snapshot = pinned  # done once ``copied`` has completed
            else:
                snapshot = {k: v.detach().clone() for k, v in model.state_dict().items()}
            want = entry_sums(state)  # on the training's stream, before the next step writes the weights
        if copied is not None:
            copied.synchronize()  # the last snapshot has arrived
        if args.mode == "gpu_clone" and snapshot is not None:
            snapshot = {k: v.cpu() for k, v in snapshot.items()}
        held["snapshot"], held["want"] = snapshot, want
        final = sum(torch.sub(v.detach(), initial_gpu[k]).abs_().sum(dtype=torch.float64) for k, v in state.items())
        last = 0.0
        if snapshot is not None:
            last = sum(torch.sub(v, initial_host[k]).abs_().sum(dtype=torch.float64).item()
                       for k, v in snapshot.items())
        return last + final.item()

    report(args, loop, "checkpoint_copies")
    if held["snapshot"] is not None:
        check_snapshot(held["snapshot"], held["want"])


if __name__ == "__main__":
    main()
