"""The Op machinery: what is measured, built from timed phases, over the axes each op declares.

An op turns a case into a :class:`CaseRun` (allocations and checks outside any timed
region); the runner then calls ``reset`` → ``sample`` (timed phases) → ``verify`` until the
stopping rule is met, and ``close``. Ops import nothing from the GPU at module level.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from umprof.core.axes import AxisSet


@dataclass
class RunContext:
    """What a case needs from the run: the GPU session, compiled kernels, device facts."""

    session: object
    kernels: object  # umprof.measure.kernels.KernelCache
    info: object  # umprof.measure.device.DeviceInfo
    scenario: object  # umprof.measure.scenario.Scenario
    info_dict: dict = field(default_factory=dict)  # info as saved with the results
    devices: list = field(default_factory=list)  # the run's GPUs (an op that spans GPUs uses them)
    kernels_by_device: dict = field(default_factory=dict)  # every GPU's KernelCache, by index

    def peer(self, index: int):
        """(session, kernels) of the run's GPU ``index``: this case's own where it is its GPU."""
        session = self.session.peer(index)
        return session, self.kernels_by_device.get(index, self.kernels if session is self.session else None)


class CaseRun:
    """One case's prepared state. ``extra`` holds per-case facts written with its rows.
    ``verify_every_sample = False`` checks the output once, after the last sample (for checks
    that read back a whole buffer of hundreds of MiB). ``uses_managed_memory = False`` spares
    a case without managed memory the extra sample counted by CUPTI."""

    verify_every_sample = True
    # whether the case uses managed memory: only such cases get the counted UM sample
    uses_managed_memory = True

    def __init__(self):
        self.extra: dict = {}

    def use_strategy(self, name: str, info, pipelines: bool = False):
        """The host-memory strategy ``name``, once the device is known to support it (else the
        case is skipped with the reason). Only a strategy whose pages migrate gives the case the
        counted UM sample. ``pipelines``: the op runs a pipelined plan chunk by chunk (the loop);
        elsewhere such a plan is skipped rather than run as its plain memory."""
        from umprof.core.errors import CaseSkipped
        from umprof.measure import strategies

        st = strategies.get(name)
        why = st.unsupported(info)
        if not why and st.pipelined and not pipelines:
            why = f"{name} is a plan for the loop op (chunks over streams); this op has no chunks to pipeline"
        if why:
            raise CaseSkipped(why)
        st.prepare()
        self.uses_managed_memory = st.pages_migrate
        return st

    def reset(self) -> None:
        """Between samples, untimed: put data back where a sample starts."""

    def sample(self, timer) -> None:
        raise NotImplementedError

    def verify(self) -> None:
        """Raise CaseFailed when the last sample's output is wrong."""

    def finish_rows(self, rows: list[dict]) -> None:
        """After summarising: add figures derived from several phases to the case's rows."""

    def close(self) -> None:
        """Free what prepare allocated."""


@dataclass
class Op:
    """What a scenario measures. ``run`` is the :class:`CaseRun` class built for each case
    (``run(ctx, case)``); ``kernels`` lists, for a scenario, every (ref, signature, options)
    its cases launch, so that all of them compile before the first timed sample; ``merge``
    maps a combination of axis values to an equivalent case's (or None: not a case)."""

    name: str
    about: str
    axes: AxisSet
    default_kernel: str | None = None
    kernel_signature: str = ""
    phases: tuple = ()
    run: type | None = None
    kernels: Callable | None = None
    merge: Callable | None = None  # params → params of an equivalent case, or None to drop it
    # an op whose cases use several GPUs at once runs once per run, not once per GPU; its
    # device_cases(params, devices) makes the cases for the run's GPUs (pair=all: every pair)
    spans_devices: bool = False
    device_cases: Callable | None = None
    counts_um: bool = False  # its cases may use managed memory: the runner adds a sample with UM counters on
    # what the run's time estimate assumes (umprof.measure.budget): a sample's bytes per second
    # (the buffer's bytes, times iterations or rounds), and the shortest sample
    sample_rate: float = 2e9
    min_sample_s: float = 1e-4

    def canonical(self, params: dict) -> dict | None:
        """Params of an equivalent case (merged at expansion), or None to drop the combination."""
        return params if self.merge is None else self.merge(params)

    def label(self, params: dict) -> str:
        """The case's name; axes the op set to None (they do not apply to this case) are left out,
        and so are quiet axes at their default (names stay those of results made before them)."""
        parts = []
        for k, v in params.items():
            spec = self.axes.by_name[k]
            if v is None or (spec.quiet_default and (v,) == spec.default):
                continue
            parts.append(f"{k}={spec.format(v)}")
        return " ".join(parts)

    def kernel_refs(self, scenario) -> list[tuple[str, str, tuple]]:
        """(ref, signature, compile options) of every kernel the scenario's cases launch."""
        if self.kernels is not None:
            return list(self.kernels(scenario))
        if scenario.kernel is None:
            return []
        return [(scenario.kernel, self.kernel_signature, tuple(scenario.compile_options))]

    def prepare(self, ctx: RunContext, case) -> CaseRun:
        """The case's prepared state: allocations and references, outside any timed region."""
        return self.run(ctx, case)


_OPS: dict[str, Op] = {}


def register(op: Op) -> Op:
    _OPS[op.name] = op
    return op


def get_op(name: str) -> Op | None:
    return _OPS.get(name)


def op_names() -> list[str]:
    return sorted(_OPS)

