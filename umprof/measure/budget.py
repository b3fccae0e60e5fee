"""How long a run takes, and how a run's time budget is shared among its cases.

Before a run starts, every case gets an estimate from its op's effective rate (a whole
sample's bytes per second, from the committed H100/H200 runs) and the stopping rule; the sum
is what ``run --dry-run`` and the start of a run print. While the run goes, :class:`RunBudget`
scales the estimates of the cases left by how the finished ones compared (the progress bar's
time left) and, when a run budget is set, gives each case its share of the time that remains:
a case whose share is spent stops after one sample, flagged, and the run goes on. No GPU here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

SETUP_S = 4.0  # opening the GPU, querying it, the device-copy ceiling, loading kernels
CASE_OVERHEAD_S = 0.01  # saving one case
PREPARE_BYTES_PER_S = 1.5e9  # allocating, filling and checking a case's buffers, per byte (H200: ~1 s per GiB)
MIN_SHARE_S = 0.05  # a case's share never falls below this: one sample still runs


def sample_estimate(op, params: dict) -> float:
    """Seconds one sample of the case should take: the buffer's bytes (times the loop's
    iterations or rounds) at the op's effective rate, never under the op's floor."""
    nbytes = params.get("bytes") or 0
    repeats = (params.get("iterations") or 1) * (params.get("rounds") or 1)
    rate = getattr(op, "sample_rate", None) or 2e9
    floor = getattr(op, "min_sample_s", None) or 1e-4
    return max(floor, nbytes * repeats / rate)


def case_estimate(rule, sample_s: float, counted: bool = False, nbytes: int = 0) -> float:
    """Seconds a case takes under the stopping rule: preparing and checking its ``nbytes``,
    warm-up, samples until the rule stops (the timeout where the noise target may not be met),
    the counted UM sample."""
    warm = rule.warmup * sample_s
    overhead = CASE_OVERHEAD_S + nbytes / PREPARE_BYTES_PER_S
    if rule.warmup and sample_s > rule.hard_timeout:  # the warm-up is the one sample
        return overhead + warm
    wanted = max(rule.min_samples * sample_s, rule.min_time)
    # small samples often miss the noise target and run to the timeout; long ones stop at
    # min_samples, or at the rule's hard limit
    sampling = rule.timeout if wanted < rule.timeout / 4 else min(rule.hard_timeout + sample_s, wanted)
    return overhead + warm + sampling + (sample_s if counted else 0.0)


@dataclass
class Plan:
    """A run's cases with their estimates, in run order."""

    names: list[str]
    estimates: list[float]

    @property
    def total_s(self) -> float:
        return SETUP_S + sum(self.estimates)

    def describe(self, budget_s: float | None) -> str:
        """'152 cases: about 1 min 41 s (budget 1 min 40 s)'."""
        line = f"{len(self.estimates)} cases: about {format_seconds(self.total_s)}"
        return line + (f" (budget {format_seconds(budget_s)})" if budget_s else " (no budget)")


def plan_run(plan, rules: dict, counted_ops: bool = True) -> Plan:
    """Estimates for the cases of ``plan`` (``[(scenario, cases)]``, in run order), under each
    scenario's stopping rule."""
    names, est = [], []
    for s, cases in plan:
        rule = rules[s.name]
        for case in cases:
            t = sample_estimate(s.op, case.params)
            names.append(f"{s.name} {case.label}")
            est.append(case_estimate(rule, t, counted_ops and s.op.counts_um, case.params.get("bytes") or 0))
    return Plan(names, est)


class RunBudget:
    """The time left and each case's share, as cases finish."""

    def __init__(self, plan: Plan, budget_s: float | None):
        self.plan = plan
        self.budget_s = budget_s if budget_s else None
        self.done = 0
        self.spent_estimate = 0.0  # the estimates of the finished cases
        self.spent_actual = 0.0  # what they took

    def share(self, elapsed_s: float) -> float | None:
        """Seconds the next case may take (None: no run budget): the time left, split among the
        cases left in proportion to their estimates."""
        if self.budget_s is None:
            return None
        left = self.plan.estimates[self.done:]
        if not left:
            return None
        remaining = self.budget_s - elapsed_s
        return max(MIN_SHARE_S, remaining * left[0] / max(sum(left), 1e-9))

    def finished(self, actual_s: float) -> None:
        self.spent_estimate += self.plan.estimates[self.done]
        self.spent_actual += actual_s
        self.done += 1

    def time_left(self) -> float:
        """Seconds the cases left should take, their estimates scaled by how the finished ones compared."""
        left = sum(self.plan.estimates[self.done:])
        scale = self.spent_actual / self.spent_estimate if self.spent_estimate > 0 else 1.0
        return left * min(max(scale, 0.25), 4.0)


def format_seconds(s: float) -> str:
    """'45 s', '3 min 20 s', '1 h 5 min'."""
    if math.isnan(s):
        return "?"
    s = int(round(s))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"
