"""The tracing's own overhead, taken out of the time now before any saving is priced, so that time the tracer spent is
never offered as a saving: measured where the program's untraced wall time is given (``wall_s``: the process's traced
duration less it, the loop's share of it), else estimated from what the trace recorded: its unified-memory fault
records (nsys slows every fault it traces: TRACED_FAULT_SHARE, TRACED_GPU_FAULT_SHARE), its CUDA calls (each
lengthened by the tracer's own work: TRACED_CALL_S) and torch's operators it recorded (TRACED_OP_S each: a
torch.profiler trace's, or an nsys trace's NVTX ranges of them). An estimate is at most TRACED_MOST of the loop's
traced time, and at most the time its GPU was idle in it: the tracer slows the host, and a loop is never shorter than
its GPU's work."""

from __future__ import annotations

from typing import NamedTuple

import pandas as pd

from umprof.core.units import format_time
from umprof.model.advice import thresholds as th
from umprof.model.advice.result import Limit
from umprof.model.application import Application
from umprof.model.calibration import kind
from umprof.model.frameworks import TORCH_OP


class Overhead(NamedTuple):
    """The tracing's overhead over the loop (``seconds``), what it is from, the limit that says it, and the part of it
    that lies in the traced figures a change is bounded by (``in_removable``: the copies' calls; the fault stalls are
    already priced untraced there)."""
    seconds: float
    basis: str  # "wall" (the untraced time given) or "estimate" (from the trace's records), "" for none
    limits: list
    in_removable: float = 0.0


def recorded_ops(app: Application, ranges: pd.DataFrame | None) -> int:
    """How many operators and annotations a torch.profiler trace recorded for the app's process in its loop (in the
    whole run where it has none); in an nsys trace, torch's operators its NVTX ranges record (``emit_nvtx``, or
    nsys's ``--pytorch=autograd-nvtx``)."""
    if ranges is None or ranges.empty:
        return 0
    if "kind" in ranges:
        r = ranges[ranges["kind"].isin(("cpu_op", "user_annotation"))]
    else:
        r = ranges[ranges["name"].astype(str).str.startswith(TORCH_OP)]
    if "pid" in r:
        r = r[r["pid"] == app.pid]
    if app.loop is not None:
        lo, hi = app.loop.span
        r = r[(r["start"] >= lo) & (r["start"] < hi)]
    return len(r)


def _gpu_idle_s(app: Application, traced_s: float) -> float:
    """The loop's traced time its GPU was not busy (all of it where the trace has no loop)."""
    loop = app.loop
    if loop is None:
        return traced_s
    busy = float(loop.first.get("busy_s", 0.0)) + float(loop.per_iteration.get("busy_s", 0.0)) * (loop.iterations - 1)
    return max(0.0, traced_s - busy)


def _estimate_s(app: Application, ops: int) -> tuple[float, float, str]:
    """The overhead the trace's own records say, over the loop (or the run), its CUDA calls' part, and its parts in
    words; ``ops``: the operators a torch.profiler trace recorded there."""
    loop = app.loop
    calls = loop.period * loop.iterations if loop is not None else sum(app.calls.values())
    parts = {"CUDA calls": calls * th.TRACED_CALL_S, "operators recorded": ops * th.TRACED_OP_S,
             "host page faults": app.host_faults.seconds * (1 - th.TRACED_FAULT_SHARE)}
    if loop is not None and kind(app.strategy) == "on-demand" and app.um.get("gpu_faults", 0):
        faulting = float(loop.per_iteration.get("kernel_s", 0.0)) * max(0, loop.iterations - 1)
        parts["kernels faulting pages"] = faulting * (1 - th.TRACED_GPU_FAULT_SHARE)
    words = ", ".join(f"{name} {format_time(s)}" for name, s in parts.items() if s > 0)
    return sum(parts.values()), parts["CUDA calls"], words


def overhead(app: Application, traced_s: float, wall_s: float | None, ops: int = 0) -> Overhead:
    """The tracing's overhead over the loop, measured from the untraced ``wall_s`` where given, else estimated (at
    most TRACED_MOST of the loop's traced time, and its GPU's idle time); ``ops``: the operators a torch.profiler
    trace recorded in the loop (:func:`recorded_ops`)."""
    if traced_s <= 0:
        return Overhead(0.0, "", [])
    if wall_s is not None:
        whole = max(0.0, app.wall_s - wall_s)
        seconds = min(whole * traced_s / app.wall_s if app.wall_s > 0 else 0.0, traced_s)
        text = (f"its run took {format_time(app.wall_s)} traced and {format_time(wall_s)} untraced: the tracing's "
                f"{format_time(whole)}, {format_time(seconds)} of it in the loop (its share of the run), is taken out "
                f"of its time now ({format_time(traced_s - seconds)} untraced) before any saving is priced")
        return Overhead(seconds, "wall", [Limit("tracing-overhead", text)], seconds)
    est, calls, words = _estimate_s(app, ops)
    seconds = min(est, th.TRACED_MOST * traced_s, _gpu_idle_s(app, traced_s))
    if seconds <= 0:
        return Overhead(0.0, "", [])
    if seconds < th.NOISE * traced_s:  # said in the JSON's time_now, not in a line of its own
        return Overhead(seconds, "estimate", [], min(calls, seconds))
    text = (f"the tracing's own overhead, estimated from what the trace recorded ({words}), "
            f"{format_time(seconds)} of its {format_time(traced_s)} traced, is taken out of its time now before any "
            "saving is priced; give its untraced wall time (--wall) to measure it instead")
    return Overhead(seconds, "estimate", [Limit("tracing-overhead-estimated", text)], min(calls, seconds))
