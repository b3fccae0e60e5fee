"""DQN training from an experience replay buffer kept in host memory as numpy arrays, as Stable-Baselines3's
``ReplayBuffer`` (and CleanRL, which uses it) keeps it: ``--buffer`` transitions (1000000) of float32 observations of
``--obs-dim`` (256) floats, int64 actions (one of ``--actions`` 18, shape (N, 1)), float32 next observations, float32
rewards and float32 done flags (2 GiB in all, almost all observations), filled once before the loop with seeded
synthetic transitions (observations uniform in [-1, 1); episodes of about 200 steps: ``next_obs[i]`` is
``obs[i + 1]`` but at an episode's end, where it is a terminal observation of its own). A Q-network, an MLP
``--obs-dim`` -> ``--hidden`` (512) -> 512 -> ``--actions`` with ReLUs (seeded), and its target network (a copy,
refreshed with ``load_state_dict`` every ``--target-every`` 100 steps) on the GPU, trained for ``--steps`` (400) steps
as CleanRL's dqn.py does: a minibatch of ``--batch`` (4096) transitions sampled uniformly (``rng.integers(0, N,
size=batch)`` from a seeded ``np.random.default_rng``, one draw a step: the same indices in every mode), ``td_target =
r + gamma * max_a target(next_obs) * (1 - done)`` (gamma 0.99, no grad), ``q(obs).gather(1, actions)``,
``F.mse_loss``, Adam (lr 2.5e-4). Each minibatch is 8.06 MiB (4 MiB of observations, 4 MiB of next observations,
64 KiB of the rest); the network is small, so a step's time is the host's gather and the copies. Before the loop one
forward and backward of the Q-network and a forward of the target on zeros (cuBLAS's set-up; no optimizer step).

Every mode feeds the networks bit-identical minibatches (rows gathered by exact indexing, host or GPU) through the same
GPU kernels in the same order, so the modes agree to the last bit on one machine. The checksum is the float64 sum of
the final Q-network's parameters plus the sum of the steps' losses (kept in a GPU tensor, read once after the loop).
Check (a failure exits 1): each step the GPU records a fingerprint of the minibatch it trained on (the float64 sum over
rows ``i`` of ``(i + 1) * (obs[i, c] + next_obs[i, c'] + reward + 2 * done + action)``, the columns varying with the
step), compared after the loop with the host's, computed before the loop from the numpy buffer and the same index
draws, to 1e-9 of the sum of the terms' magnitudes: a staging buffer rewritten before its upload, a stale or another
step's minibatch, differs by far more; every loss must be finite.

    python3 replay_buffer.py [--mode MODE] [--buffer 1000000] [--obs-dim 256] [--actions 18] [--batch 4096]
                             [--steps 400] [--hidden 512] [--target-every 100] [--gamma 0.99] [--lr 0.00025]

Modes (the same indices, minibatches, updates and checksum):
  as_written            SB3's ``sample()``: ``idx = rng.integers(...)``, each field gathered by numpy fancy indexing
                        (``self.observations[idx]``: a fresh pageable array) and ``torch.as_tensor(a).to(device)``
  pinned_staging        one pinned staging tensor a field allocated at the start of the loop, filled through its numpy
                        view with ``np.take(buf, idx, axis=0, out=view, mode="clip")``, uploaded with
                        ``.to(device, non_blocking=True)``; an event recorded after the uploads and synchronised before
                        the staging tensors are written again (the host gathers step s + 1 while step s computes)
  buffer_pinned         the whole buffer made pinned torch tensors at the start of the loop
                        (``torch.from_numpy(a).pin_memory()``, 2 GiB), each field gathered on the host with
                        ``torch.index_select(field, 0, idx, out=staging)`` into pinned staging tensors, uploaded
                        ``non_blocking=True``, an event as pinned_staging's
  buffer_on_gpu         the whole buffer moved to the GPU once at the start of the loop (``.to(device)``, 2 GiB), the
                        index sequence drawn up front with the same generator and the same per-step draws and uploaded
                        once (S x batch int64), each minibatch gathered on the GPU (``field[idx_d[s]]``): nothing
                        crosses per step
  side_stream_prefetch  two sets of pinned staging tensors and two of preallocated GPU tensors: once step s's work is
                        queued, the host draws and gathers step s + 1's minibatch (``np.take(..., out=)``) into the
                        other pinned set and uploads it with ``copy_(non_blocking=True)`` on a side
                        ``torch.cuda.Stream`` while step s computes; events say when a pinned set may be refilled (its
                        upload done), when a GPU set may be overwritten (the step that read it done) and when the
                        compute may read it (``current_stream().wait_event``)
"""

import copy
import sys
from collections import namedtuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from harness import parse, report

MODES = ("as_written", "pinned_staging", "buffer_pinned", "buffer_on_gpu", "side_stream_prefetch")
FIELDS = ("observations", "actions", "next_observations", "dones", "rewards")
ReplayBufferSamples = namedtuple("ReplayBufferSamples", FIELDS)
EPISODE = 200  # the mean episode length of the synthetic transitions
INDEX_SEED = 1


class ReplayBuffer:
    """A replay buffer in numpy arrays, as Stable-Baselines3's (one env, ``optimize_memory_usage=False``)."""

    def __init__(self, buffer_size: int, obs_dim: int, device: torch.device):
        self.buffer_size, self.device = buffer_size, device
        self.observations = np.zeros((buffer_size, obs_dim), dtype=np.float32)
        self.next_observations = np.zeros((buffer_size, obs_dim), dtype=np.float32)
        self.actions = np.zeros((buffer_size, 1), dtype=np.int64)
        self.rewards = np.zeros(buffer_size, dtype=np.float32)
        self.dones = np.zeros(buffer_size, dtype=np.float32)
        self.pos, self.full = 0, False

    def fill_synthetic(self, n_actions: int, seed: int = 0) -> None:
        """Seeded synthetic transitions: episodes of about EPISODE steps, each next observation the following
        observation but at an episode's end, where it is a terminal observation of its own."""
        rng = np.random.default_rng(seed)
        n = self.buffer_size
        rng.random(out=self.observations, dtype=np.float32)  # uniform in [-1, 1), filled in place
        self.observations *= 2.0
        self.observations -= 1.0
        self.next_observations[:-1] = self.observations[1:]
        self.dones[:] = rng.random(n) < 1.0 / EPISODE
        self.dones[-1] = 1.0
        ends = np.flatnonzero(self.dones)
        terminal = rng.random((len(ends), self.observations.shape[1]), dtype=np.float32)
        self.next_observations[ends] = terminal * 2.0 - 1.0
        self.actions[:, 0] = rng.integers(0, n_actions, size=n)
        self.rewards[:] = np.where(rng.random(n) < 0.05, 1.0, -0.01) + 10.0 * self.dones * (rng.random(n) < 0.5)
        self.pos, self.full = 0, True

    def size(self) -> int:
        return self.buffer_size if self.full else self.pos

    def to_torch(self, array: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(array).to(self.device)

    def sample(self, batch_size: int, rng: np.random.Generator) -> ReplayBufferSamples:
        batch_inds = rng.integers(0, self.size(), size=batch_size)
        return self._get_samples(batch_inds)

    def _get_samples(self, batch_inds: np.ndarray) -> ReplayBufferSamples:
        data = (self.observations[batch_inds], self.actions[batch_inds], self.next_observations[batch_inds],
                self.dones[batch_inds], self.rewards[batch_inds])
        return ReplayBufferSamples(*tuple(map(self.to_torch, data)))


class QNetwork(nn.Module):
    def __init__(self, obs_dim: int, n_actions: int, hidden: int):
        super().__init__()
        self.network = nn.Sequential(nn.Linear(obs_dim, hidden), nn.ReLU(), nn.Linear(hidden, 512), nn.ReLU(),
                                     nn.Linear(512, n_actions))

    def forward(self, x):
        return self.network(x)


def columns(s: int, dim: int) -> tuple[int, int]:
    """The observation and next-observation columns step s's fingerprint reads."""
    return s % dim, (7 * s + 3) % dim


def host_fingerprints(rb: ReplayBuffer, steps: int, batch: int) -> np.ndarray:
    """Each step's fingerprint (and the sum of its terms' magnitudes) from the numpy buffer and the index draws the
    loop makes (the same generator, the same calls)."""
    rng = np.random.default_rng(INDEX_SEED)
    w = np.arange(1, batch + 1, dtype=np.float64)
    out = np.zeros((steps, 2))
    for s in range(steps):
        idx = rng.integers(0, rb.size(), size=batch)
        c, c2 = columns(s, rb.observations.shape[1])
        t = w * (rb.observations[idx, c].astype(np.float64) + rb.next_observations[idx, c2].astype(np.float64)
                 + rb.rewards[idx].astype(np.float64) + 2.0 * rb.dones[idx].astype(np.float64)
                 + rb.actions[idx, 0].astype(np.float64))
        out[s] = t.sum(), np.abs(t).sum()
    return out


def main():
    args = parse(MODES, __doc__, buffer=1000000, obs_dim=256, actions=18, batch=4096, steps=400, hidden=512,
                 target_every=100, gamma=0.99, lr=2.5e-4)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    N, D, A, B, S = args.buffer, args.obs_dim, args.actions, args.batch, args.steps
    if min(N, D, A, B, S, args.hidden, args.target_every) < 1:
        sys.exit("replay_buffer: every size must be positive")

    rb = ReplayBuffer(N, D, device)
    rb.fill_synthetic(A, seed=0)
    expect = host_fingerprints(rb, S, B)

    torch.manual_seed(0)
    q_network = QNetwork(D, A, args.hidden).to(device)
    optimizer = torch.optim.Adam(q_network.parameters(), lr=args.lr)
    target_network = copy.deepcopy(q_network)
    target_network.load_state_dict(q_network.state_dict())
    w_dev = torch.arange(1, B + 1, dtype=torch.float64, device=device)

    # cuBLAS and the first kernels set up before the timing: no optimizer step
    zeros = torch.zeros((B, D), device=device)
    with torch.no_grad():
        target_network(zeros).max(dim=1)
    q_network(zeros).gather(1, torch.zeros((B, 1), dtype=torch.int64, device=device)).sum().backward()
    q_network.zero_grad(set_to_none=True)
    del zeros

    def loop():
        rng = np.random.default_rng(INDEX_SEED)
        losses = torch.zeros(S, device=device)
        seen = torch.zeros(S, dtype=torch.float64, device=device)

        def train_step(s: int, data: ReplayBufferSamples) -> None:
            c, c2 = columns(s, D)
            seen[s] = (w_dev * (data.observations[:, c].double() + data.next_observations[:, c2].double()
                                + data.rewards.double() + 2.0 * data.dones.double()
                                + data.actions[:, 0].double())).sum()
            with torch.no_grad():
                target_max, _ = target_network(data.next_observations).max(dim=1)
                td_target = data.rewards.flatten() + args.gamma * target_max * (1 - data.dones.flatten())
            old_val = q_network(data.observations).gather(1, data.actions).squeeze()
            loss = F.mse_loss(td_target, old_val)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses[s] = loss.detach()
            if (s + 1) % args.target_every == 0:
                target_network.load_state_dict(q_network.state_dict())

        def staging_set():
            """One pinned tensor a field, a minibatch's shape, and its numpy view."""
            pin = {f: torch.empty((B,) + getattr(rb, f).shape[1:], dtype=torch.from_numpy(getattr(rb, f)[:1]).dtype,
                                  pin_memory=True) for f in FIELDS}
            return pin, {f: t.numpy() for f, t in pin.items()}

        if args.mode == "as_written":
            for s in range(S):
                train_step(s, rb.sample(B, rng))

        elif args.mode == "pinned_staging":
            pin, view = staging_set()
            uploaded = None
            for s in range(S):
                idx = rng.integers(0, rb.size(), size=B)
                if uploaded is not None:
                    uploaded.synchronize()  # the last uploads have read the staging tensors
                for f in FIELDS:
                    np.take(getattr(rb, f), idx, axis=0, out=view[f], mode="clip")
                data = ReplayBufferSamples(*(pin[f].to(device, non_blocking=True) for f in FIELDS))
                uploaded = torch.cuda.Event()
                uploaded.record()
                train_step(s, data)

        elif args.mode == "buffer_pinned":
            buf = {f: torch.from_numpy(getattr(rb, f)).pin_memory() for f in FIELDS}  # once: 2 GiB pinned
            pin, _ = staging_set()
            uploaded = None
            for s in range(S):
                idx = torch.from_numpy(rng.integers(0, rb.size(), size=B))
                if uploaded is not None:
                    uploaded.synchronize()  # the last uploads have read the staging tensors
                for f in FIELDS:
                    torch.index_select(buf[f], 0, idx, out=pin[f])
                data = ReplayBufferSamples(*(pin[f].to(device, non_blocking=True) for f in FIELDS))
                uploaded = torch.cuda.Event()
                uploaded.record()
                train_step(s, data)

        elif args.mode == "buffer_on_gpu":
            buf = {f: torch.from_numpy(getattr(rb, f)).to(device) for f in FIELDS}  # once: 2 GiB
            idx_all = np.stack([rng.integers(0, rb.size(), size=B) for _ in range(S)])
            idx_d = torch.from_numpy(idx_all).to(device)  # the whole index sequence, once
            for s in range(S):
                i = idx_d[s]
                train_step(s, ReplayBufferSamples(*(buf[f][i] for f in FIELDS)))

        else:  # side_stream_prefetch
            side, main_stream = torch.cuda.Stream(), torch.cuda.current_stream()
            sets = [staging_set() for _ in range(2)]
            dev = [{f: torch.empty(p.shape, dtype=p.dtype, device=device) for f, p in sets[k][0].items()}
                   for k in range(2)]
            copied = [None, None]  # set k's upload done: its pinned tensors may be refilled, its GPU ones read
            consumed = [None, None]  # the step that read GPU set k done: it may be overwritten

            def prefetch(s: int) -> None:
                """Step s's minibatch drawn, gathered into pinned set s % 2 and uploaded on the side stream."""
                k = s % 2
                pin, view = sets[k]
                idx = rng.integers(0, rb.size(), size=B)
                if copied[k] is not None:
                    copied[k].synchronize()  # the last upload from these pinned tensors has finished
                for f in FIELDS:
                    np.take(getattr(rb, f), idx, axis=0, out=view[f], mode="clip")
                with torch.cuda.stream(side):
                    if consumed[k] is not None:
                        side.wait_event(consumed[k])
                    for f in FIELDS:
                        dev[k][f].copy_(pin[f], non_blocking=True)
                    copied[k] = side.record_event()

            prefetch(0)
            for s in range(S):
                k = s % 2
                main_stream.wait_event(copied[k])  # the minibatch has arrived
                train_step(s, ReplayBufferSamples(*(dev[k][f] for f in FIELDS)))
                consumed[k] = torch.cuda.Event()
                consumed[k].record()
                if s + 1 < S:
                    prefetch(s + 1)  # gathered and uploaded while step s computes

        check(seen.cpu().numpy(), losses.cpu().numpy())
        params = sum(float(p.detach().double().sum()) for p in q_network.parameters())
        return params + float(losses.double().sum())

    def check(seen: np.ndarray, losses: np.ndarray) -> None:
        """Every step's fingerprint of the minibatch the GPU trained on against the host's; every loss finite."""
        bad = np.flatnonzero(np.abs(seen - expect[:, 0]) > 1e-9 * expect[:, 1] + 1e-300)
        if len(bad):
            s = int(bad[0])
            sys.exit(f"replay_buffer: step {s} trained on a minibatch whose fingerprint is {seen[s]:.12g}, the "
                     f"buffer's rows for its indices {expect[s, 0]:.12g} ({len(bad)} steps differ)")
        if not np.isfinite(losses).all():
            sys.exit(f"replay_buffer: a loss is not finite (step {int(np.flatnonzero(~np.isfinite(losses))[0])})")

    report(args, loop, "replay_buffer")


if __name__ == "__main__":
    main()
