"""Contrastive representation learning with a memory bank of negatives kept in host memory, as the instance-
discrimination / MoCo-style code keeps a bank too big for the GPU "to save GPU memory": a ``--bank`` x ``--dim``
float32 bank (131072 x 128: 64 MiB; unit rows, normalised standard normal from a seeded ``torch.Generator``, made
before the loop) on the CPU, used as a queue. A query encoder on the GPU (MLP ``--in-dim`` 512 -> ``--hidden`` 1024
-> 1024 -> ``--dim``, ReLUs, seeded weights; SGD lr ``--lr`` 0.03, momentum 0.9, weight decay 1e-4) and a momentum
key encoder (its copy, updated ``k = 0.99 k + 0.01 q`` each step, no gradient). The inputs are ``--samples`` 8192
synthetic vectors kept on the GPU (seeded, made before the loop); each of ``--steps`` 300 steps takes ``--batch`` 256
of them (seeded numpy ids, on the GPU from before the loop) and makes two noisy views on the GPU (``randn`` from a
``torch.Generator`` on the GPU seeded at the loop's start). A step: the ``--negatives`` 16384 bank rows of the step
(seeded numpy indices precomputed for all steps, with replacement, the same in every mode; 8 MiB) brought to the
GPU; ``q = normalize(encoder_q(view1))``, under ``no_grad`` the momentum update and ``k = normalize(encoder_k(
view2))``; logits ``[q.k, q @ neg.T] / --tau`` (0.07), cross-entropy against class 0, ``backward()``, the optimizer's
step; the step's loss stored into a preallocated GPU tensor (read once after the loop); the keys (detached, unit
rows; 128 KiB) written back into the bank at the queue pointer (``bank[ptr:ptr + B] = k.cpu()``), ``ptr = (ptr + B)
% K``. So data moves both ways each step, and a step's negatives may include rows the previous step wrote. Before
the loop one forward and backward of both encoders and the loss on zeros (cuBLAS's set-up; no optimizer step).

Identity: every mode gathers the same rows of the same bank state (each step reads the bank after the previous
step's write-back, before its own), runs the same GPU kernels on bit-identical inputs in the same order on the
current stream, and writes the same keys to the same rows, so the modes agree to the last bit on one machine. The
checksum is the float64 sum of the 300 losses, plus the final bank's float64 sum (on the host) and the query
encoder's parameters' sum.

Checks (a failure exits 1): (1) each step the GPU records a fingerprint of the negatives it used (the float64 sum of
``(i + 1) * neg[i, 0]``) and the first column and row sums of the keys it wrote; after the loop the host rebuilds each
step's expected negatives' first column from the initial bank and the keys of the last write-back before that step
(the queue's slot arithmetic) and compares the fingerprints (1e-9 of the terms' magnitudes): a gather that read the
bank before the previous step's keys had landed (a non_blocking D2H not synchronised) or a staging buffer overwritten
before its upload differs; (2) the final bank's first column must equal the last keys written to each row (or the
initial row) exactly and its row sums match to 1e-9; (3) every loss finite. The checks' host work (about a second
of numpy at the default sizes) runs after the timed loop and its JSON line; the fingerprints stay on the GPU until
then.

    python3 memory_bank.py [--mode MODE] [--bank 131072] [--dim 128] [--negatives 16384] [--batch 256]
                           [--steps 300] [--in-dim 512] [--hidden 1024] [--samples 8192] [--lr 0.03] [--tau 0.07]

Modes (the same rows, the same keys, the same checksum):
  as_written          ``neg = bank[idx].to(device)`` (a fresh pageable tensor, a blocking copy) at each step's
                      start; ``bank[ptr:ptr + B] = k.cpu()`` (a fresh pageable tensor, synchronising) at its end
  pinned_nonblocking  the bank pinned once at the loop's start (``bank = bank.pin_memory()``);
                      ``bank[idx].to(device, non_blocking=True)`` (the gathered ``bank[idx]`` is itself a fresh
                      pageable tensor); the keys written with ``bank[ptr:ptr + B].copy_(k, non_blocking=True)``
                      straight into the pinned bank and an event recorded, synchronised before the host next reads
                      the bank (the next step's gather, and after the loop)
  pinned_staging      the bank pageable; one preallocated pinned staging buffer for the negatives, filled on the host
                      with ``torch.index_select(bank, 0, idx, out=pin_neg)`` and uploaded with
                      ``.to(device, non_blocking=True)``; the keys copied into a preallocated pinned buffer
                      (``copy_(k, non_blocking=True)``), an event synchronised (it also says the staging buffer's
                      upload is done), then ``bank[ptr:ptr + B] = pin_k``
  side_stream         the bank pinned once; two pinned staging buffers for the negatives used in turn (an event per
                      buffer waited on before it is refilled, ``index_select(out=)``, ``non_blocking=True`` uploads);
                      the write-back issued on a side ``torch.cuda.Stream`` as soon as the keys are computed
                      (``side.wait_stream(current)``, ``bank[ptr:ptr + B].copy_(k, non_blocking=True)`` into the
                      pinned bank, ``k.record_stream(side)``, an event), so it overlaps the loss, backward and
                      optimizer step; the host synchronises that event before gathering the next step's negatives
  bank_on_gpu         the bank moved to the GPU once at the loop's start (``bank.to(device)``, 64 MiB) with every
                      step's indices (``torch.from_numpy(idx).to(device)``, 38 MiB); negatives gathered and keys
                      written there; the bank read back once after the loop (``.cpu()``)
"""

import copy
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from harness import parse, report

MODES = ("as_written", "pinned_nonblocking", "pinned_staging", "side_stream", "bank_on_gpu")
KEY_MOMENTUM = 0.99
NOISE = 0.1  # the views' noise


def make_encoder(in_dim: int, hidden: int, dim: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, dim))


def main():
    args = parse(MODES, __doc__, bank=131072, dim=128, negatives=16384, batch=256, steps=300, in_dim=512,
                 hidden=1024, samples=8192, lr=0.03, tau=0.07)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    K, D, N, B, S = args.bank, args.dim, args.negatives, args.batch, args.steps
    if min(K, D, N, B, S, args.in_dim, args.hidden, args.samples) < 1 or K % B or N > K:
        sys.exit(f"memory_bank: every size must be positive, --bank ({K}) a multiple of --batch ({B}) and "
                 f"--negatives ({N}) at most --bank")
    slots = K // B  # the queue's slots: step t writes rows [(t % slots) * B, ... + B)

    rng = np.random.default_rng(0)
    neg_idx_np = rng.integers(0, K, (S, N))  # every step's negatives, the same in every mode
    neg_idx = torch.from_numpy(neg_idx_np)
    batch_ids = torch.from_numpy(rng.integers(0, args.samples, (S, B))).to(device)

    bank = F.normalize(torch.randn((K, D), generator=torch.Generator().manual_seed(0)), dim=1)
    init_col0 = bank[:, 0].numpy().copy()  # for the checks after the loop
    init_rowsum = bank.double().sum(1).numpy()

    g_data = torch.Generator(device=device).manual_seed(1)
    data = torch.randn((args.samples, args.in_dim), generator=g_data, device=device)

    torch.manual_seed(0)
    encoder_q = make_encoder(args.in_dim, args.hidden, D).to(device)
    encoder_k = copy.deepcopy(encoder_q)
    for p in encoder_k.parameters():
        p.requires_grad_(False)
    opt = torch.optim.SGD(encoder_q.parameters(), lr=args.lr, momentum=0.9, weight_decay=1e-4)

    def contrastive_loss(q: torch.Tensor, k: torch.Tensor, neg: torch.Tensor) -> torch.Tensor:
        l_pos = (q * k).sum(1, keepdim=True)
        l_neg = q @ neg.t()
        logits = torch.cat([l_pos, l_neg], 1) / args.tau
        labels = torch.zeros(len(q), dtype=torch.int64, device=q.device)
        return F.cross_entropy(logits, labels)

    # cuBLAS's and the first kernels' set-up before the timing: one forward and backward on zeros, no optimizer step
    zq = F.normalize(encoder_q(torch.zeros((B, args.in_dim), device=device)), dim=1)
    with torch.no_grad():
        zk = F.normalize(encoder_k(torch.zeros((B, args.in_dim), device=device)), dim=1)
    contrastive_loss(zq, zk, torch.zeros((N, D), device=device)).backward()
    opt.zero_grad(set_to_none=True)
    del zq, zk

    kept = {}  # what the checks read, kept by the loop

    def loop():
        nonlocal bank
        g_aug = torch.Generator(device=device).manual_seed(2)
        losses = torch.zeros(S, device=device)
        seen = torch.zeros(S, dtype=torch.float64, device=device)  # the fingerprints of the negatives used
        key_col0 = torch.zeros((S, B), device=device)  # the keys written: first column, row sums
        key_rowsum = torch.zeros((S, B), dtype=torch.float64, device=device)
        weights = torch.arange(1, N + 1, dtype=torch.float64, device=device)
        encoder_q.train()

        def queries_and_keys(s: int):
            x = data[batch_ids[s]]
            view1 = x + NOISE * torch.randn(x.shape, generator=g_aug, device=device)
            view2 = x + NOISE * torch.randn(x.shape, generator=g_aug, device=device)
            q = F.normalize(encoder_q(view1), dim=1)
            with torch.no_grad():
                for pq, pk in zip(encoder_q.parameters(), encoder_k.parameters()):
                    pk.data = pk.data * KEY_MOMENTUM + pq.data * (1.0 - KEY_MOMENTUM)
                k = F.normalize(encoder_k(view2), dim=1)
            key_col0[s] = k[:, 0]
            key_rowsum[s] = k.double().sum(1)
            return q, k

        def train(s: int, q: torch.Tensor, k: torch.Tensor, neg: torch.Tensor) -> None:
            seen[s] = (neg[:, 0].double() * weights).sum()
            loss = contrastive_loss(q, k, neg)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses[s] = loss.detach()

        ptr = 0
        if args.mode == "as_written":
            for s in range(S):
                neg = bank[neg_idx[s]].to(device)
                q, k = queries_and_keys(s)
                train(s, q, k, neg)
                bank[ptr:ptr + B] = k.cpu()
                ptr = (ptr + B) % K

        elif args.mode == "pinned_nonblocking":
            bank = bank.pin_memory()
            wrote = None
            for s in range(S):
                if wrote is not None:
                    wrote.synchronize()  # the last keys have landed in the bank before the host reads it
                neg = bank[neg_idx[s]].to(device, non_blocking=True)
                q, k = queries_and_keys(s)
                train(s, q, k, neg)
                bank[ptr:ptr + B].copy_(k, non_blocking=True)
                wrote = torch.cuda.Event()
                wrote.record()
                ptr = (ptr + B) % K
            wrote.synchronize()

        elif args.mode == "pinned_staging":
            pin_neg = torch.empty((N, D), pin_memory=True)
            pin_k = torch.empty((B, D), pin_memory=True)
            for s in range(S):
                torch.index_select(bank, 0, neg_idx[s], out=pin_neg)  # the last upload from it was synchronised
                neg = pin_neg.to(device, non_blocking=True)
                q, k = queries_and_keys(s)
                train(s, q, k, neg)
                pin_k.copy_(k, non_blocking=True)
                ready = torch.cuda.Event()
                ready.record()
                ready.synchronize()  # the keys have arrived (and the negatives' upload is done)
                bank[ptr:ptr + B] = pin_k
                ptr = (ptr + B) % K

        elif args.mode == "side_stream":
            bank = bank.pin_memory()
            side, main_stream = torch.cuda.Stream(), torch.cuda.current_stream()
            pin_neg = [torch.empty((N, D), pin_memory=True) for _ in range(2)]
            uploaded = [None, None]
            wrote = None
            for s in range(S):
                b = s % 2
                if wrote is not None:
                    wrote.synchronize()  # step s - 1's keys are in the bank
                if uploaded[b] is not None:
                    uploaded[b].synchronize()  # the upload that last read this staging buffer has finished
                torch.index_select(bank, 0, neg_idx[s], out=pin_neg[b])
                neg = pin_neg[b].to(device, non_blocking=True)
                uploaded[b] = torch.cuda.Event()
                uploaded[b].record()
                q, k = queries_and_keys(s)
                side.wait_stream(main_stream)  # the keys are computed
                with torch.cuda.stream(side):
                    bank[ptr:ptr + B].copy_(k, non_blocking=True)
                    wrote = side.record_event()
                k.record_stream(side)  # made on the current stream, read by the side stream
                train(s, q, k, neg)
                ptr = (ptr + B) % K
            wrote.synchronize()

        else:  # bank_on_gpu
            bank_gpu = bank.to(device)
            idx_gpu = neg_idx.to(device)
            for s in range(S):
                neg = bank_gpu[idx_gpu[s]]
                q, k = queries_and_keys(s)
                train(s, q, k, neg)
                bank_gpu[ptr:ptr + B] = k
                ptr = (ptr + B) % K
            bank = bank_gpu.cpu()

        loss_v = losses.double().cpu().numpy()
        kept.update(seen=seen, key_col0=key_col0, key_rowsum=key_rowsum, loss_v=loss_v)  # checked after the timing
        params = sum(float(p.detach().double().sum()) for p in encoder_q.parameters())
        return float(loss_v.sum()) + float(bank.double().sum()) + params

    def last_write(s: np.ndarray, slot: np.ndarray) -> np.ndarray:
        """The last step before step ``s`` (exclusive) that wrote queue slot ``slot``; -1 where none did."""
        t = slot + slots * np.floor_divide(s - 1 - slot, slots)
        return np.where(s - 1 >= slot, t, -1)

    def check(seen: np.ndarray, key_col0: np.ndarray, key_rowsum: np.ndarray, loss_v: np.ndarray) -> None:
        """The negatives each step used and the final bank against the queue's arithmetic; exit 1."""
        if not np.isfinite(loss_v).all():
            sys.exit(f"memory_bank: {int((~np.isfinite(loss_v)).sum())} losses are not finite")
        slot = neg_idx_np // B
        t = last_write(np.arange(S)[:, None], slot)
        col0 = np.where(t >= 0, key_col0[np.maximum(t, 0), neg_idx_np % B], init_col0[neg_idx_np]).astype(np.float64)
        terms = col0 * np.arange(1, N + 1, dtype=np.float64)
        want, mag = terms.sum(1), np.abs(terms).sum(1)
        bad = np.nonzero(np.abs(seen - want) > 1e-9 * mag + 1e-300)[0]
        if len(bad):
            s = int(bad[0])
            sys.exit(f"memory_bank: step {s}'s negatives have the fingerprint {seen[s]:.12g}, the bank's rows for its "
                     f"indices {want[s]:.12g} ({len(bad)} steps differ)")
        rows = np.arange(K)
        t = last_write(np.full(K, S), rows // B)
        want_col0 = np.where(t >= 0, key_col0[np.maximum(t, 0), rows % B], init_col0)
        want_sum = np.where(t >= 0, key_rowsum[np.maximum(t, 0), rows % B], init_rowsum)
        got = bank.numpy()
        n_col = int((got[:, 0] != want_col0).sum())
        err = float(np.abs(got.sum(1, dtype=np.float64) - want_sum).max())
        if n_col or not err <= 1e-9:
            sys.exit(f"memory_bank: the final bank differs from the keys written: {n_col} rows' first value, row sums "
                     f"by up to {err:.4g}")

    report(args, loop, "memory_bank")
    check(kept["seen"].cpu().numpy(), kept["key_col0"].cpu().numpy(), kept["key_rowsum"].cpu().numpy(),
          kept["loss_v"])


if __name__ == "__main__":
    main()
