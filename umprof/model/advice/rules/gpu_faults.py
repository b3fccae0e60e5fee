"""The GPU's side of the host's faults: its kernels' time faulting the pages back beyond the model's price of them, as
the trace measured it; the current way's, and kept by the ways that keep the host's stalls. Only where the host's
touches stalled beyond their priced accesses (a word here and there, each page faulting alone): where the host
rewrites runs of the buffer, the calibration's loop is what the program does, and its kernels' price stands
(managed_stream's kernels, 30-35 ms a step as traced against 13-17 ms priced, measured fastest or near it under
accessed-by, which keeps them)."""

from __future__ import annotations

from umprof.core.units import format_time
from umprof.model.advice import thresholds as th
from umprof.model.advice.read import Reading
from umprof.model.advice.result import Limit
from umprof.model.advice.rules import Adjustment
from umprof.model.advice.rules.host_faults import keeps_stalls
from umprof.model.application import Application
from umprof.model.calibration import kind
from umprof.model.predict import Prediction


def adjust(app: Application, r: Reading, stall_s: float) -> Adjustment:
    """The kernels' faults beyond their priced time, untraced (``gpu_fault_s``): added to the time now and to every
    other way that keeps the host's stalls."""
    gpu_s = gpu_fault_s(app, r.base, stall_s, r.one_pass)
    ways = {p.strategy: gpu_s for p in r.ranked if p is not r.base and keeps_stalls(p.strategy)} if gpu_s else {}
    return Adjustment("gpu_faults", seconds=gpu_s, now_s=gpu_s, ways=ways)


def gpu_fault_s(app: Application, base: Prediction, stall_s: float, one_pass: bool) -> float:
    """The GPU's time faulting managed pages back over the loop beyond what the model prices for the current way's
    kernels, as the program spends it untraced: a steady iteration's kernels as traced less the prediction's kernel
    step, over the iterations after the first (whose kernels fault the whole buffer in, which the model prices
    apart), times th.TRACED_GPU_FAULT_SHARE. 0 where the host's touches did not stall beyond their priced accesses
    (``stall_s``, :func:`fault_stall_s`: a host that rewrites runs of the buffer, whose kernels the calibration's
    loop prices as they run), where the run is read as one pass (``one_pass``: no iterations of the loop), where the
    current way does not migrate pages on faults (its kernels' time is then their own, or their reads across the
    link), where there is no loop, or where the kernels took no longer than priced.

    The calibration's loop prices the pages a kernel faults in as its host rewrote them, a run of the buffer that the
    driver moves in large pieces; a host that touches a word here and there across the buffer leaves the kernels to
    fault each page back alone. A host reading a float of every 4 KiB page of a 256 MiB field
    each step ran its kernel 59-64 ms a step in its traces on an H200, its GPU pulling 136-164 MiB back in about
    6,600 migrations, where the model priced the step's kernel at 4.3-4.7 ms; copies in place of its managed memory
    measured 2.1-2.4 s faster untraced, where 0.95-1.02 s had been predicted."""
    if stall_s <= 0 or one_pass or app.loop is None or app.strategy != base.strategy \
            or kind(base.strategy) != "on-demand":
        return 0.0
    beyond = float(app.loop.per_iteration.get("kernel_s", 0.0)) - base.steady.get("kernel", 0.0)
    return max(0.0, beyond) * max(0, app.loop.iterations - 1) * th.TRACED_GPU_FAULT_SHARE


def gpu_stall_limit(app: Application, base: Prediction, gpu_stall_s: float, keeping: list[str]) -> list[Limit]:
    """What the GPU's faults beyond the model's price of its kernels were priced at, from what, and which ways keep
    them."""
    if gpu_stall_s <= 0:
        return []
    traced = float(app.loop.per_iteration.get("kernel_s", 0.0))
    text = (f"its kernels took {format_time(traced)} an iteration as traced, where the model prices "
            f"{format_time(base.steady.get('kernel', 0.0))} for its way: the time beyond, faulting back pages the host "
            f"touched, priced at {format_time(gpu_stall_s)} over its {app.loop.iterations - 1} iterations after the "
            f"first untraced ({th.TRACED_GPU_FAULT_SHARE:.0%} of it, as a traced kernel faulting pages back measured "
            f"against an untraced one on an H200), kept by the ways that keep the host's stalls ({', '.join(keeping)})"
            " and saved by every other")
    return [Limit("gpu-fault-stalls", text)]
