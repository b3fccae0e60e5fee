"""An exponential moving average of the weights kept on the host, as the tutorials write it: an MLP of
``--depth`` linear layers (``--width`` wide, its input and output half that: 50 M parameters, 192 MiB, by default)
trained on random data kept on the GPU (MSE, SGD); every ``--every`` steps the weights are snapshotted to the host,
``cpu_state = {k: v.detach().cpu() for k, v in model.state_dict().items()}``, and the average updated there,
``ema[k].mul_(decay).add_(cpu_state[k], alpha=1 - decay)``. The average starts from the initial weights; the
checksum is how far it moved from them (the sum of the absolute differences).

    python3 ema_snapshots.py [--mode MODE] [--steps 48] [--every 4] [--batch 512] [--width 4096] [--depth 4]

Modes (the same updates, the same average, the same checksum):
  as_written    each snapshot ``v.detach().cpu()`` (a fresh pageable tensor per entry), the average updated on the host
  pinned_async  a preallocated pinned tensor per entry: an event marks the step's weights ready, the snapshot copied
                ``copy_(v, non_blocking=True)`` on a side ``torch.cuda.Stream``, an event after it; the next step's
                optimizer waits on that event before it writes the weights, and the host waits on it (after queueing
                the next step) before it updates the average from the pinned tensors
  ema_on_gpu    the average kept in GPU tensors, updated with ``torch._foreach_mul_`` / ``torch._foreach_add_``, copied
                to the host once after the last step
"""

import torch
import torch.nn as nn

from harness import parse, report

MODES = ("as_written", "pinned_async", "ema_on_gpu")
DECAY = 0.9
DATA = 4  # batches of random data kept on the GPU, used in turn


def make_model(width: int, depth: int) -> nn.Sequential:
    dims = [width // 2] + [width] * (depth - 1) + [width // 2]
    layers = []
    for i in range(depth):
        layers.append(nn.Linear(dims[i], dims[i + 1]))
        if i < depth - 1:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def main():
    args = parse(MODES, __doc__, steps=48, every=4, batch=512, width=4096, depth=4)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    g = torch.Generator().manual_seed(0)
    features = args.width // 2
    inputs = torch.randn(DATA, args.batch, features, generator=g).to(device)
    targets = torch.randn(DATA, args.batch, features, generator=g).to(device)
    torch.manual_seed(0)
    model = make_model(args.width, args.depth).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    loss_fn = nn.MSELoss()
    state = model.state_dict()  # name -> the model's own tensors (detached views of the parameters)
    initial = {k: v.detach().cpu().clone() for k, v in state.items()}  # what the checksum measures from
    ema = {k: v.to(device, copy=True) if args.mode == "ema_on_gpu" else v.clone() for k, v in initial.items()}
    pinned = {k: torch.empty(v.shape, dtype=v.dtype, pin_memory=True) for k, v in state.items()} \
        if args.mode == "pinned_async" else None
    side = torch.cuda.Stream() if args.mode == "pinned_async" else None

    def update_on_host(snapshot):
        for k, v in snapshot.items():
            ema[k].mul_(DECAY).add_(v, alpha=1 - DECAY)

    def snapshot_async():
        """Queue the copy of the step's weights into the pinned tensors; its event."""
        ready = torch.cuda.Event()
        ready.record()
        copied = torch.cuda.Event()
        with torch.cuda.stream(side):
            side.wait_event(ready)  # the step's optimizer has written the weights
            for k, v in model.state_dict().items():
                pinned[k].copy_(v.detach(), non_blocking=True)
            copied.record(side)
        return copied

    def loop():
        copied = None  # pinned_async: the event of the snapshot whose average is not yet updated
        for step in range(args.steps):
            opt.zero_grad()
            loss = loss_fn(model(inputs[step % DATA]), targets[step % DATA])
            loss.backward()
            if copied is not None:
                torch.cuda.current_stream().wait_event(copied)  # the snapshot has read the weights opt.step writes
            opt.step()
            if copied is not None:
                copied.synchronize()  # the pinned tensors hold the snapshot: read them
                update_on_host(pinned)
                copied = None
            if (step + 1) % args.every:
                continue
            if args.mode == "as_written":
                cpu_state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
                update_on_host(cpu_state)
            elif args.mode == "pinned_async":
                copied = snapshot_async()
            else:
                params = [v.detach() for v in model.state_dict().values()]
                averages = list(ema.values())
                torch._foreach_mul_(averages, DECAY)
                torch._foreach_add_(averages, params, alpha=1 - DECAY)
        if copied is not None:  # the last step's snapshot
            copied.synchronize()
            update_on_host(pinned)
        final = {k: v.cpu() for k, v in ema.items()} if args.mode == "ema_on_gpu" else ema
        # how far the average moved from the initial weights: a missed or stale snapshot moves it beyond the tolerance
        return sum(torch.sub(v, initial[k]).abs_().sum(dtype=torch.float64).item() for k, v in final.items())

    report(args, loop, "ema_snapshots")


if __name__ == "__main__":
    main()
