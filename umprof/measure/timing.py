"""The timing engine: phases timed with CUDA events and the host clock, NVTX-ranged,
and the rule that says when a case has enough samples.

Only :class:`PhaseTimer` touches the GPU, and only through the session handed to it.
"""

from __future__ import annotations

import math
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

from umprof.core.stats import noise
from umprof.nsight import nvtx


@dataclass
class StoppingRule:
    """nvbench's rule, lighter by default: stop once there are ``min_samples`` samples,
    ``min_time`` seconds of measured time and a relative spread under ``max_noise``; give
    up at ``timeout`` seconds of wall time once ``min_samples`` are in (at ``HARD_FACTOR``
    times it regardless: long samples still get their minimum where that fits), and say which
    condition was unmet."""

    HARD_FACTOR = 4

    LONG_MIN_SAMPLES = 2

    min_samples: int = 5
    min_time: float = 0.02
    max_noise: float = 0.03
    timeout: float = 0.5
    warmup: int = 1
    max_samples: int = 10_000
    # a case whose samples take this long or longer (0: no such rule) keeps its warm-up as its first
    # sample and stops at LONG_MIN_SAMPLES: a long sample is many operations already, and its warm-up
    # ran the same work (a calibration's 256 MiB loops spent three quarters of their time so)
    long_sample: float = 0.0

    def __post_init__(self):
        for name in ("min_samples", "min_time", "max_noise", "timeout", "warmup", "long_sample"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
                raise ValueError(f"timing setting {name}: expected a non-negative number, got {v!r}")
        self.min_samples = max(1, int(self.min_samples))
        self.warmup = int(self.warmup)

    def is_long(self, totals: list[float]) -> bool:
        """Whether samples of these totals are long (see ``long_sample``)."""
        return bool(self.long_sample) and bool(totals) and min(totals) >= self.long_sample

    @property
    def hard_timeout(self) -> float:
        """Sampling stops here whatever else is unmet; a warm-up longer than it is a case's one sample."""
        return self.HARD_FACTOR * self.timeout

    def check(self, totals: list[float], elapsed_s: float, cap_s: float | None = None) -> tuple[bool, str | None]:
        """(stop?, why it stopped short) for the sample totals so far and the wall time spent;
        ``cap_s``: a hard limit on the time (the case's share of a run budget).

        The reason is None when every condition was met.
        """
        n = len(totals)
        measured = sum(totals)
        rel = noise(totals)
        met_n = n >= (self.LONG_MIN_SAMPLES if self.is_long(totals) else self.min_samples)
        met_t = measured >= self.min_time
        met_noise = n >= 2 and not math.isnan(rel) and rel <= self.max_noise
        if met_n and met_t and met_noise:
            return True, None
        if n >= self.max_samples:
            return True, f"stopped at {n} samples: noise {rel:.1%} > {self.max_noise:.1%}"
        limit = self.hard_timeout if cap_s is None else min(self.hard_timeout, cap_s)
        if n >= 1 and ((elapsed_s >= self.timeout and met_n) or elapsed_s >= limit):
            unmet = []
            if not met_n:
                unmet.append(f"{n} of {self.min_samples} samples")
            if not met_t:
                unmet.append(f"{measured:.3g} s of {self.min_time:.3g} s measured")
            if not met_noise:
                unmet.append(f"noise {rel:.1%} > {self.max_noise:.1%}" if not math.isnan(rel) else "noise unknown (1 sample)")
            return True, f"timeout after {elapsed_s:.1f} s: " + ", ".join(unmet)
        return False, None


@dataclass
class PhaseTime:
    """One phase of one sample: GPU time (events; NaN for host-only phases) and CPU time."""

    name: str
    gpu_s: float
    cpu_s: float
    bytes: int = 0
    ceiling: str = ""  # "pcie", "dram" or "" — what this phase's throughput is measured against

    @property
    def time_s(self) -> float:
        """GPU time where the phase ran on the GPU, else the host's."""
        return self.cpu_s if math.isnan(self.gpu_s) else self.gpu_s


@dataclass
class Sample:
    phases: list[PhaseTime] = field(default_factory=list)
    extra: dict = field(default_factory=dict)  # {phase: {counter: value}}: UM faults and migrations, op facts
    windows: list = field(default_factory=list)  # (phase, start, end) on CUPTI's clock, while UM counters run

    @property
    def total_s(self) -> float:
        return sum(p.time_s for p in self.phases)


class PhaseTimer:
    """Times the phases of one sample.

    ``with timer.phase("h2d", bytes=n, ceiling="pcie"):`` records CUDA events on the
    session's stream around the body and the host clock around body and synchronisation,
    inside an NVTX range named after the phase. ``gpu=False`` marks a host-only phase
    (allocation, host init, host read), timed by the host clock alone. ``reps`` divides
    the measured time when the body repeats an operation to rise above timer resolution.
    """

    def __init__(self, session):
        self.session = session
        self.sample = Sample()
        self._events = session.event_pair_pool()
        um = getattr(session, "um", None)
        self._um = um if um is not None and um.counting else None  # windows only while CUPTI counts

    @contextmanager
    def phase(self, name: str, *, bytes: int = 0, ceiling: str = "", gpu: bool = True, reps: int = 1):
        with nvtx.range(name, category=name):
            u0 = self._um.now() if self._um is not None else None
            if gpu:
                start, end = self._events.pair(name)
                start.record(self.session.stream)
            c0 = time.perf_counter()
            yield
            if gpu:
                end.record(self.session.stream)
                end.synchronize()
            c1 = time.perf_counter()
            if u0 is not None:
                self.sample.windows.append((name, u0, self._um.now()))
        gpu_s = end.time_since(start) / 1e3 / reps if gpu else math.nan
        self.sample.phases.append(PhaseTime(name, gpu_s, (c1 - c0) / reps, bytes, ceiling))

    def set_gpu_time(self, name: str, seconds: float) -> None:
        """Replace the GPU time of the phase ``name`` just timed, for an op that measures a span
        more exactly itself (the overlap op: from its first operation's start, as Nsight
        Systems projects a range, rather than from when the host began to issue)."""
        for p in reversed(self.sample.phases):
            if p.name == name:
                p.gpu_s = seconds
                return
        raise KeyError(name)

    def add_phase(self, name: str, gpu_s: float, cpu_s: float, *, bytes: int = 0, ceiling: str = "") -> None:
        """A phase timed by the op itself: work on several GPUs at once, each GPU's share timed
        by its own events (the host-links op), beside the phase that spans them all."""
        self.sample.phases.append(PhaseTime(name, gpu_s, cpu_s, bytes, ceiling))

    def finish(self) -> Sample:
        """The sample, with the UM counters of each phase (and of all of them, as 'total') in ``extra``.

        A phase entered several times (a loop's iterations, a ping-pong's rounds) counts once:
        its times and bytes summed, in the order it first ran.
        """
        self.sample.phases = merge_repeated(self.sample.phases)
        if self._um is not None:
            from umprof.measure.um_counters import attribute, summarize_records

            records = self._um.drain()
            for phase, counters in attribute(records, self.sample.windows).items():
                self.sample.extra.setdefault(phase, {}).update(counters)
            inside = [r for r in records if any(t0 <= r.start <= t1 for _, t0, t1 in self.sample.windows)]
            self.sample.extra.setdefault("total", {}).update(summarize_records(inside))
        return self.sample


def merge_repeated(phases: list[PhaseTime]) -> list[PhaseTime]:
    """One PhaseTime per name: times and bytes of repeated entries summed."""
    merged: dict[str, PhaseTime] = {}
    for p in phases:
        m = merged.get(p.name)
        if m is None:
            merged[p.name] = PhaseTime(p.name, p.gpu_s, p.cpu_s, p.bytes, p.ceiling)
        else:
            m.gpu_s += p.gpu_s
            m.cpu_s += p.cpu_s
            m.bytes += p.bytes
    return list(merged.values())
