"""Reinforcement-learning rollouts as RL tutorials write them: ``--envs`` vectorised environments (512) simulated on
the host with numpy, a small actor-critic on the GPU, a PPO update every ``--horizon`` steps (128) from the stored
rollout, ``--rollouts`` rollouts (64: 8192 steps).

The environments: point masses in the box [-1, 1]^2, one goal each (float64 numpy state: position, velocity, goal,
time in the episode). An action (one of 5: nothing, +x, -x, +y, -y) is a force; a step damps the velocity, adds the
force (``v * 0.95 + f * 0.05``), moves (``p + v * 0.05``), clips to the box (a wall reverses and halves the velocity),
rewards ``-0.01 * |goal - p|^2`` plus 1 within 0.1 of the goal. An episode ends at the goal or after ``--episode``
steps (200); an env is then reset (zero velocity, a new start and goal) from a seeded table of 4096 starts and goals
(row ``(env * 7919 + episodes) % 4096``). Observations: 7 floats an env (position, velocity, goal - position, time /
episode length), cast to float32 for the policy (14 KiB a step). The actor and the critic: two MLPs 7-``--hidden``
(64)-64-5 (or 1), tanh, seeded. Each step the actor's logits (``torch.no_grad()``) plus Gumbel noise from a seeded
table (``--noise-steps`` 1024 steps x envs x 5, float32, on the GPU before the loop; step s uses row s % 1024) give the
actions by argmax (a seeded sample of the softmax), read back to the host (int64, 4 KiB a step) to step the
environments; every env's rewards are summed on the host (float64). Every ``--horizon`` steps a PPO update on the GPU
from the stored rollout (observations, actions, float32 rewards and dones): values and old log-probabilities from the
whole rollout, discounted returns bootstrapped with the critic (gamma 0.99, a loop over the steps), ``--epochs`` (4)
epochs of ``--minibatches`` (4) contiguous minibatches (normalised advantages, clipped ratio 0.2, value loss, entropy
bonus 0.01, gradient norm clipped at 0.5, Adam 3e-4). Before the loop: the actor's forward and a read-back, and a
whole update on a copy of the agent and its own optimiser (every kernel's first launch, cuBLAS's set-up, without
touching the agent), and for env_on_gpu a step of a throwaway torch environment.

The checksum is the float64 sum of every env's summed rewards. Every mode feeds the policy bit-identical float32
observations (the environment uses only +, -, *, comparisons and selections in float64, which round the same in numpy,
in torch on the CPU and on the GPU, and in Python; float64 -> float32 casts round to nearest everywhere), runs the same
GPU kernels on the same shapes for the actions and the updates, so every mode takes the same actions and the modes
agree to the last bit on one machine. After the loop, the first 4 envs are re-simulated in plain Python floats from
the actions the loop recorded for them: their summed rewards must equal the loop's (relative 1e-9); each update also
accumulates, on the GPU, the float64 sums of those envs' stored observations, rewards, dones and actions, which must
equal the reference's (relative 1e-9): a stale or missing upload differs by far more; and the first rollout's actions
of those envs must equal the argmax of a float64 CPU copy of the initial actor plus the same noise wherever its best
two scores differ by more than 1e-3. A failure exits 1.

    python3 rl_rollouts.py [--mode MODE] [--envs 512] [--horizon 128] [--rollouts 64] [--epochs 4] [--minibatches 4]
                           [--hidden 64] [--episode 200] [--noise-steps 1024]

Modes (the same environments, actions, updates and checksum):
  as_written          each step ``torch.as_tensor(obs, dtype=torch.float32).to(device)`` from a fresh pageable array,
                      the actions read with ``.cpu().numpy()``; the rollout kept on the host in Python lists of numpy
                      arrays (observations, actions, rewards, dones) and uploaded at the update
                      (``torch.as_tensor(np.array(lst), dtype=...).to(device)``, 1.75 MiB of observations a rollout)
  pinned_buffers      one pinned float32 observation tensor and one pinned int64 action tensor allocated at the start
                      of the loop: each step the observations are written into the pinned tensor (numpy's cast),
                      uploaded with ``.to(device, non_blocking=True)``, the actions copied into the pinned action
                      tensor with ``copy_(..., non_blocking=True)`` and an event synchronised before the host reads
                      them (which also says the observation upload has read its tensor); the rollout as as_written's
  gpu_storage         as CleanRL writes it: the rollout kept in preallocated GPU tensors (K x envs x 7 observations,
                      actions, rewards, dones), each step's observations uploaded as as_written's and stored there
                      (``obs_buf[t] = next_obs``), the actions kept there and read back with ``.cpu().numpy()``, the
                      rewards and dones uploaded each step (``torch.as_tensor(reward, ...).to(device)``); nothing
                      uploaded at the update
  pinned_gpu_storage  the rollout on the GPU as gpu_storage's, the per-step copies through pinned tensors allocated at
                      the start of the loop (observations, rewards, dones up with ``copy_(..., non_blocking=True)``
                      into the GPU's tensors, actions down into a pinned tensor, an event synchronised before the host
                      reads the actions and before it rewrites the pinned tensors)
  env_on_gpu          the environments ported to torch on the GPU (the same float64 operations in the same order,
                      the table and the forces on the GPU), the rollout stored on the GPU, every env's summed rewards
                      and the check envs' actions kept on the GPU and read once after the loop: nothing crosses per step
"""

import copy
import sys

import numpy as np
import torch
from torch import nn

from harness import parse, report

MODES = ("as_written", "pinned_buffers", "gpu_storage", "pinned_gpu_storage", "env_on_gpu")
OBS = 7  # position (2), velocity (2), goal - position (2), time in the episode / episode length
ACTIONS = 5  # nothing, +x, -x, +y, -y
DT, DAMP, FORCE, BOUNCE = 0.05, 0.95, 1.0, -0.5
RADIUS2 = 0.01  # within 0.1 of the goal: reached
SHAPING = -0.01
TABLE = 4096  # seeded starts and goals
STRIDE = 7919  # an env's row in the table: (env * STRIDE + episodes) % TABLE
CHECK = 4  # envs re-simulated by the reference
GAMMA, CLIP, LR, ENT, VF, MAX_NORM = 0.99, 0.2, 3e-4, 0.01, 0.5, 0.5
MARGIN = 1e-3  # the reference's best two scores must differ by more for its action to be compared


def forces() -> np.ndarray:
    return np.array([[0, 0], [1, 0], [-1, 0], [0, 1], [0, -1]], np.float64) * FORCE


class ParticleEnvs:
    """``n`` point masses chasing goals in [-1, 1]^2: numpy, float64, every method returning fresh arrays."""

    def __init__(self, n: int, episode: int, starts: np.ndarray):
        self.n, self.episode, self.starts = n, episode, starts
        self.ids = np.arange(n, dtype=np.int64)
        self.forces = forces()
        self.inv = 1.0 / episode

    def reset(self) -> np.ndarray:
        self.episodes = np.zeros(self.n, np.int64)
        s = self.starts[(self.ids * STRIDE + self.episodes) % TABLE]
        self.pos, self.goal = s[:, 0:2].copy(), s[:, 2:4].copy()
        self.vel = np.zeros((self.n, 2))
        self.t = np.zeros(self.n)
        return self.observe()

    def observe(self) -> np.ndarray:
        return np.concatenate([self.pos, self.vel, self.goal - self.pos, (self.t * self.inv)[:, None]], axis=1)

    def step(self, actions: np.ndarray):
        self.vel = self.vel * DAMP + self.forces[actions] * DT
        self.pos = self.pos + self.vel * DT
        out = np.abs(self.pos) > 1.0
        self.pos = np.clip(self.pos, -1.0, 1.0)
        self.vel = np.where(out, self.vel * BOUNCE, self.vel)
        d = self.goal - self.pos
        dist2 = d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1]
        reached = dist2 < RADIUS2
        reward = dist2 * SHAPING
        reward = np.where(reached, reward + 1.0, reward)
        self.t = self.t + 1.0
        done = reached | (self.t >= self.episode)
        self.episodes = self.episodes + done
        s = self.starts[(self.ids * STRIDE + self.episodes) % TABLE]
        d1 = done[:, None]
        self.pos = np.where(d1, s[:, 0:2], self.pos)
        self.vel = np.where(d1, 0.0, self.vel)
        self.goal = np.where(d1, s[:, 2:4], self.goal)
        self.t = np.where(done, 0.0, self.t)
        return self.observe(), reward, done


class TorchParticleEnvs:
    """ParticleEnvs ported to torch: the same float64 operations in the same order, on ``device``."""

    def __init__(self, n: int, episode: int, starts: torch.Tensor, device):
        self.n, self.episode, self.starts, self.device = n, episode, starts, device
        self.ids = torch.arange(n, dtype=torch.int64, device=device)
        self.forces = torch.from_numpy(forces()).to(device)
        self.inv = 1.0 / episode

    def reset(self) -> torch.Tensor:
        self.episodes = torch.zeros(self.n, dtype=torch.int64, device=self.device)
        s = self.starts[(self.ids * STRIDE + self.episodes) % TABLE]
        self.pos, self.goal = s[:, 0:2].clone(), s[:, 2:4].clone()
        self.vel = torch.zeros((self.n, 2), dtype=torch.float64, device=self.device)
        self.t = torch.zeros(self.n, dtype=torch.float64, device=self.device)
        return self.observe()

    def observe(self) -> torch.Tensor:
        return torch.cat([self.pos, self.vel, self.goal - self.pos, (self.t * self.inv)[:, None]], dim=1)

    def step(self, actions: torch.Tensor):
        self.vel = self.vel * DAMP + self.forces[actions] * DT
        self.pos = self.pos + self.vel * DT
        out = self.pos.abs() > 1.0
        self.pos = self.pos.clamp(-1.0, 1.0)
        self.vel = torch.where(out, self.vel * BOUNCE, self.vel)
        d = self.goal - self.pos
        dist2 = d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1]
        reached = dist2 < RADIUS2
        reward = dist2 * SHAPING
        reward = torch.where(reached, reward + 1.0, reward)
        self.t = self.t + 1.0
        done = reached | (self.t >= self.episode)
        self.episodes = self.episodes + done
        s = self.starts[(self.ids * STRIDE + self.episodes) % TABLE]
        d1 = done[:, None]
        self.pos = torch.where(d1, s[:, 0:2], self.pos)
        self.vel = torch.where(d1, 0.0, self.vel)
        self.goal = torch.where(d1, s[:, 2:4], self.goal)
        self.t = torch.where(done, 0.0, self.t)
        return self.observe(), reward, done


class Agent(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.actor = nn.Sequential(nn.Linear(OBS, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                                   nn.Linear(hidden, ACTIONS))
        self.critic = nn.Sequential(nn.Linear(OBS, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                                    nn.Linear(hidden, 1))


def update(agent, opt, obs, actions, rewards, dones, next_obs, epochs, minibatches, seen=None) -> None:
    """PPO on one rollout (obs K x N x OBS float32, actions K x N int64, rewards and dones K x N float32, next_obs
    N x OBS), on the GPU. ``seen`` (check envs x OBS + 3, float64) accumulates the check envs' stored data."""
    K, N = rewards.shape
    with torch.no_grad():
        values = agent.critic(obs).squeeze(-1)
        old_logp = torch.log_softmax(agent.actor(obs), -1).gather(-1, actions.unsqueeze(-1)).squeeze(-1)
        ret = agent.critic(next_obs).squeeze(-1)
        returns = torch.empty_like(rewards)
        for t in reversed(range(K)):
            ret = rewards[t] + GAMMA * (1.0 - dones[t]) * ret
            returns[t] = ret
        advantages = returns - values
        if seen is not None:
            c = seen.shape[0]
            seen += torch.cat([obs[:, :c], rewards[:, :c, None], dones[:, :c, None], actions[:, :c, None].float()],
                              2).sum(0, dtype=torch.float64)
    b_obs = obs.reshape(K * N, OBS)
    b_act, b_logp, b_adv, b_ret = (x.reshape(K * N) for x in (actions, old_logp, advantages, returns))
    size = K * N // minibatches
    for _ in range(epochs):
        for m in range(minibatches):
            mb = slice(m * size, (m + 1) * size)
            logp_all = torch.log_softmax(agent.actor(b_obs[mb]), -1)
            logp = logp_all.gather(1, b_act[mb, None]).squeeze(1)
            ratio = (logp - b_logp[mb]).exp()
            adv = b_adv[mb]
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
            pg_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - CLIP, 1 + CLIP)).mean()
            v_loss = 0.5 * ((agent.critic(b_obs[mb]).squeeze(1) - b_ret[mb]) ** 2).mean()
            entropy = -(logp_all.exp() * logp_all).sum(1).mean()
            loss = pg_loss - ENT * entropy + VF * v_loss
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(agent.parameters(), MAX_NORM)
            opt.step()


def main():
    args = parse(MODES, __doc__, envs=512, horizon=128, rollouts=64, epochs=4, minibatches=4, hidden=64,
                 episode=200, noise_steps=1024)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    N, K, R, NT = args.envs, args.horizon, args.rollouts, args.noise_steps
    if min(N, K, R, NT, args.epochs, args.minibatches, args.hidden, args.episode) < 1 or (K * N) % args.minibatches:
        sys.exit(f"rl_rollouts: {K} steps of {N} envs do not split into {args.minibatches} minibatches "
                 f"(every size at least 1)")
    rng = np.random.default_rng(0)
    starts = rng.uniform(-0.9, 0.9, (TABLE, 4))  # start x, y, goal x, y
    noise_np = rng.gumbel(size=(NT, N, ACTIONS)).astype(np.float32)
    noise = torch.from_numpy(noise_np).to(device)
    starts_gpu = torch.from_numpy(starts).to(device) if args.mode == "env_on_gpu" else None
    C = min(CHECK, N)

    torch.manual_seed(0)
    agent = Agent(args.hidden).to(device)
    opt = torch.optim.Adam(agent.parameters(), lr=LR, eps=1e-5)
    ref_actor = copy.deepcopy(agent.actor).cpu().double()  # the initial actor, for the reference

    # warm-up: the actor and a read-back, a whole update on a copy (its own optimiser), the torch environment
    with torch.no_grad():
        agent.actor(torch.zeros((N, OBS)).to(device)).argmax(1).cpu()
    shadow = copy.deepcopy(agent)
    zeros = torch.zeros((K, N), device=device)
    update(shadow, torch.optim.Adam(shadow.parameters(), lr=LR, eps=1e-5), torch.zeros((K, N, OBS), device=device),
           torch.zeros((K, N), dtype=torch.int64, device=device), zeros, zeros, torch.zeros((N, OBS), device=device),
           args.epochs, args.minibatches)
    if args.mode == "env_on_gpu":
        warm_env = TorchParticleEnvs(N, args.episode, starts_gpu, device)
        warm_env.reset()
        warm_env.step(torch.zeros(N, dtype=torch.int64, device=device))[0].float()
    del shadow, zeros

    def loop():
        totals = np.zeros(N)  # every env's rewards, summed (float64)
        seen = torch.zeros((C, OBS + 3), dtype=torch.float64, device=device)
        hist = []  # the check envs' actions, a row a step
        step = 0
        if args.mode != "env_on_gpu":
            env = ParticleEnvs(N, args.episode, starts)
            obs = env.reset()

        if args.mode == "as_written":
            for _ in range(R):
                obs_list, act_list, rew_list, done_list = [], [], [], []
                for _ in range(K):
                    obs_t = torch.as_tensor(obs, dtype=torch.float32).to(device)
                    with torch.no_grad():
                        logits = agent.actor(obs_t)
                        action = (logits + noise[step % NT]).argmax(dim=1).cpu().numpy()
                    next_obs, reward, done = env.step(action)
                    obs_list.append(obs)
                    act_list.append(action)
                    rew_list.append(reward)
                    done_list.append(done)
                    totals += reward
                    hist.append(action[:C])
                    obs, step = next_obs, step + 1
                update(agent, opt,
                       torch.as_tensor(np.array(obs_list), dtype=torch.float32).to(device),
                       torch.as_tensor(np.array(act_list)).to(device),
                       torch.as_tensor(np.array(rew_list), dtype=torch.float32).to(device),
                       torch.as_tensor(np.array(done_list), dtype=torch.float32).to(device),
                       torch.as_tensor(obs, dtype=torch.float32).to(device),
                       args.epochs, args.minibatches, seen)

        elif args.mode == "pinned_buffers":
            pin_obs = torch.empty((N, OBS), pin_memory=True)
            pin_act = torch.empty(N, dtype=torch.int64, pin_memory=True)
            ready = torch.cuda.Event()
            for _ in range(R):
                obs_list, act_list, rew_list, done_list = [], [], [], []
                for _ in range(K):
                    pin_obs.numpy()[:] = obs  # the last step's ready.synchronize(): its upload has read pin_obs
                    obs_t = pin_obs.to(device, non_blocking=True)
                    with torch.no_grad():
                        logits = agent.actor(obs_t)
                        pin_act.copy_((logits + noise[step % NT]).argmax(dim=1), non_blocking=True)
                    ready.record()
                    ready.synchronize()  # the actions have arrived
                    action = pin_act.numpy().copy()  # pin_act is rewritten next step; the list keeps this
                    next_obs, reward, done = env.step(action)
                    obs_list.append(obs)
                    act_list.append(action)
                    rew_list.append(reward)
                    done_list.append(done)
                    totals += reward
                    hist.append(action[:C])
                    obs, step = next_obs, step + 1
                update(agent, opt,
                       torch.as_tensor(np.array(obs_list), dtype=torch.float32).to(device),
                       torch.as_tensor(np.array(act_list)).to(device),
                       torch.as_tensor(np.array(rew_list), dtype=torch.float32).to(device),
                       torch.as_tensor(np.array(done_list), dtype=torch.float32).to(device),
                       torch.as_tensor(obs, dtype=torch.float32).to(device),
                       args.epochs, args.minibatches, seen)

        elif args.mode == "gpu_storage":
            obs_buf = torch.zeros((K, N, OBS), device=device)
            act_buf = torch.zeros((K, N), dtype=torch.int64, device=device)
            rew_buf = torch.zeros((K, N), device=device)
            done_buf = torch.zeros((K, N), device=device)
            next_obs = torch.as_tensor(obs, dtype=torch.float32).to(device)
            for _ in range(R):
                for t in range(K):
                    obs_buf[t] = next_obs
                    with torch.no_grad():
                        logits = agent.actor(next_obs)
                        action = (logits + noise[step % NT]).argmax(dim=1)
                    act_buf[t] = action
                    action_np = action.cpu().numpy()
                    obs_np, reward, done = env.step(action_np)
                    rew_buf[t] = torch.as_tensor(reward, dtype=torch.float32).to(device)
                    done_buf[t] = torch.as_tensor(done, dtype=torch.float32).to(device)
                    next_obs = torch.as_tensor(obs_np, dtype=torch.float32).to(device)
                    totals += reward
                    hist.append(action_np[:C])
                    step += 1
                update(agent, opt, obs_buf, act_buf, rew_buf, done_buf, next_obs, args.epochs, args.minibatches,
                       seen)

        elif args.mode == "pinned_gpu_storage":
            obs_buf = torch.zeros((K, N, OBS), device=device)
            act_buf = torch.zeros((K, N), dtype=torch.int64, device=device)
            rew_buf = torch.zeros((K, N), device=device)
            done_buf = torch.zeros((K, N), device=device)
            pin_obs = torch.empty((N, OBS), pin_memory=True)
            pin_rew = torch.empty(N, pin_memory=True)
            pin_done = torch.empty(N, pin_memory=True)
            pin_act = torch.empty(N, dtype=torch.int64, pin_memory=True)
            ready = torch.cuda.Event()
            next_obs = torch.empty((N, OBS), device=device)
            pin_obs.numpy()[:] = obs
            next_obs.copy_(pin_obs, non_blocking=True)
            for _ in range(R):
                for t in range(K):
                    obs_buf[t] = next_obs
                    with torch.no_grad():
                        logits = agent.actor(next_obs)
                        action = (logits + noise[step % NT]).argmax(dim=1)
                    act_buf[t] = action
                    pin_act.copy_(action, non_blocking=True)
                    ready.record()
                    ready.synchronize()  # the actions are here; the last step's uploads have read the pinned tensors
                    obs_np, reward, done = env.step(pin_act.numpy())
                    pin_obs.numpy()[:] = obs_np
                    pin_rew.numpy()[:] = reward
                    pin_done.numpy()[:] = done
                    next_obs.copy_(pin_obs, non_blocking=True)
                    rew_buf[t].copy_(pin_rew, non_blocking=True)
                    done_buf[t].copy_(pin_done, non_blocking=True)
                    totals += reward
                    hist.append(pin_act.numpy()[:C].copy())
                    step += 1
                update(agent, opt, obs_buf, act_buf, rew_buf, done_buf, next_obs, args.epochs, args.minibatches,
                       seen)

        else:  # env_on_gpu
            env = TorchParticleEnvs(N, args.episode, starts_gpu, device)
            obs = env.reset()
            totals_gpu = torch.zeros(N, dtype=torch.float64, device=device)
            act_hist = torch.zeros((R * K, C), dtype=torch.int64, device=device)
            obs_buf = torch.zeros((K, N, OBS), device=device)
            act_buf = torch.zeros((K, N), dtype=torch.int64, device=device)
            rew_buf = torch.zeros((K, N), device=device)
            done_buf = torch.zeros((K, N), device=device)
            for r in range(R):
                for t in range(K):
                    obs_t = obs.float()
                    obs_buf[t] = obs_t
                    with torch.no_grad():
                        logits = agent.actor(obs_t)
                        action = (logits + noise[step % NT]).argmax(dim=1)
                    act_buf[t] = action
                    obs, reward, done = env.step(action)
                    rew_buf[t] = reward  # float64 -> float32, as the host modes' casts
                    done_buf[t] = done
                    totals_gpu += reward
                    step += 1
                act_hist[r * K:(r + 1) * K] = act_buf[:, :C]
                update(agent, opt, obs_buf, act_buf, rew_buf, done_buf, obs.float(), args.epochs, args.minibatches,
                       seen)
            totals = totals_gpu.cpu().numpy()
            hist = act_hist.cpu().numpy()

        check(np.stack(hist) if isinstance(hist, list) else hist, totals, seen.cpu().numpy())
        return float(totals.sum())

    def check(hist: np.ndarray, totals: np.ndarray, seen: np.ndarray) -> None:
        """The check envs re-simulated in Python floats from the actions the loop took; the first rollout's
        actions against a float64 reference of the initial actor; exit 1."""
        inv, f = 1.0 / args.episode, forces().tolist()
        F = min(K, len(hist))  # the first rollout's steps
        want_seen = np.zeros((C, OBS + 3))
        first = np.zeros((F, C, OBS), np.float32)  # the first rollout's observations
        for i in range(C):
            episodes, total, rows = 0, 0.0, []
            px, py, gx, gy = starts[(i * STRIDE + episodes) % TABLE].tolist()
            vx = vy = t = 0.0
            for a in hist[:, i].tolist():
                obs = [px, py, vx, vy, gx - px, gy - py, t * inv]
                vx, vy = vx * DAMP + f[a][0] * DT, vy * DAMP + f[a][1] * DT
                px, py = px + vx * DT, py + vy * DT
                if abs(px) > 1.0:
                    px, vx = min(max(px, -1.0), 1.0), vx * BOUNCE
                if abs(py) > 1.0:
                    py, vy = min(max(py, -1.0), 1.0), vy * BOUNCE
                dx, dy = gx - px, gy - py
                dist2 = dx * dx + dy * dy
                reward = dist2 * SHAPING
                if dist2 < RADIUS2:
                    reward = reward + 1.0
                t = t + 1.0
                done = dist2 < RADIUS2 or t >= args.episode
                total += reward
                rows.append(obs + [reward, float(done), float(a)])
                if done:
                    episodes += 1
                    px, py, gx, gy = starts[(i * STRIDE + episodes) % TABLE].tolist()
                    vx = vy = t = 0.0
            if abs(totals[i] - total) > 1e-9 * max(1.0, abs(total)):
                sys.exit(f"rl_rollouts: env {i}'s rewards summed to {float(totals[i])!r}, its re-simulation's to "
                         f"{total!r}")
            stored = np.array(rows).astype(np.float32)  # as the rollouts store them: float32
            want_seen[i] = stored.sum(0, dtype=np.float64)
            first[:, i] = stored[:F, :OBS]
        bad = np.argwhere(~np.isclose(seen, want_seen, rtol=1e-9, atol=1e-9))
        if len(bad):
            i, k = bad[0]
            sys.exit(f"rl_rollouts: the updates saw env {i}'s column {k} sum to {seen[i, k]:.12g}, the "
                     f"re-simulation's rollouts to {want_seen[i, k]:.12g} ({len(bad)} sums differ)")
        with torch.no_grad():
            scores = ref_actor(torch.from_numpy(first).double()).numpy()
        scores += noise_np[np.arange(F) % NT, :C].astype(np.float64)
        top2 = np.sort(scores, axis=-1)[..., -2:]
        clear = (top2[..., 1] - top2[..., 0]) > MARGIN
        wrong = clear & (scores.argmax(-1) != hist[:F])
        if wrong.any():
            s, i = np.argwhere(wrong)[0]
            sys.exit(f"rl_rollouts: step {s}, env {i}: action {hist[s, i]}, the reference actor's "
                     f"{scores[s, i].argmax()} ({int(wrong.sum())} of {int(clear.sum())} clear actions differ)")
        if not clear.any():
            sys.exit("rl_rollouts: no action of the first rollout is clear of a near-tie to compare")

    report(args, loop, "rl_rollouts")


if __name__ == "__main__":
    main()
