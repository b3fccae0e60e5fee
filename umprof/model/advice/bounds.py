"""Physical bounds on every way's prediction (between adjust and rank): no way is predicted faster than its copies,
kernels and host work need, and no change saves more than the time it removes from the program.

- floor: the bytes the host writes for the GPU and reads back (the workload's shares, every iteration; a carried
  dataset once) at the link's ceiling per direction (the two directions overlap at best), the kernels' own time as
  traced (on data resident on the GPU) and the host's own accesses at the cheapest any way prices them, no more than
  its host spent outside CUDA calls; never above the time now, never below zero.
- removable: what the trace spent doing what a change of memory can drop: copies (as the program waits on them),
  migrations, its calls that allocate, pin and register memory, the loop's page-locking, the host's copies through a
  bounce buffer, and the host's and the kernels' fault stalls (as priced untraced) where the way does not keep them.

The ranking, the tie and the saving are all computed from the bounded figures."""

from __future__ import annotations

import math
from typing import NamedTuple

from umprof.core.units import format_time
from umprof.model.advice.read import Reading, host_s
from umprof.model.advice.result import Limit
from umprof.model.advice.rules.host_faults import keeps_stalls, untraced_stalls_s
from umprof.model.application import Application


class Bounds(NamedTuple):
    """Per way: the least time its work needs (``floor``) and the most a change to it can save (``removable``)."""
    floor: dict
    removable: dict


def _outside_calls_s(app: Application, r: Reading) -> float:
    """The loop's host time outside its CUDA calls as traced (inf where the trace does not say, or the run is read as
    one pass: its host writes its data before the loop)."""
    loop = None if r.one_pass else app.loop
    if loop is None or "calls_s" not in loop.per_iteration:
        return math.inf
    return max(0.0, (loop.per_iteration["wall_s"] - loop.per_iteration["calls_s"]) * loop.iterations)


def host_floor_s(r: Reading, outside_calls_s: float, stall_s: float) -> float:
    """The host's own accesses to its data that every way makes: the cheapest any way prices them, and no more than
    the loop's host thread spent outside its CUDA calls as traced (``outside_calls_s``, inf where the trace does not
    say) less its fault stalls."""
    host = min((host_s(p) for p in r.ranked), default=0.0)
    return min(host, max(0.0, outside_calls_s - stall_s))


def floor_s(r: Reading, link_bytes_per_s: float, now_s: float, host: float, carried: bool = False) -> float:
    """The least time a way needs for the workload's copies, kernels and host accesses (see the module's docstring),
    at most the time now; ``carried``: a way priced moving one carried dataset once (``rules.carried``), whose bytes
    cross the link once."""
    w = r.workload
    link = 0.0
    if link_bytes_per_s and not math.isnan(link_bytes_per_s):
        sent, back = (w.bytes * share * w.iterations for share in (w.host_writes, w.host_reads))
        link = (w.bytes if carried else max(sent, back)) / link_bytes_per_s
    kernels = w.kernel_s * w.iterations
    return min(max(0.0, link + kernels + host), now_s)


def removable_s(app: Application, host: float, rules: dict, strategies: list[str], now_s: float) -> dict:
    """What a change to each of ``strategies`` can remove from the program's time (see the module's docstring): what
    every way drops (its copies, migrations, allocation, page-locking and staging calls, its host accesses:
    ``host``), and the fault stalls of the ways that do not keep them."""
    moved = (app.waited_on_copies_s + app.um["migration_s"] + app.allocation_s + rules["pinning"].seconds
             + rules["staging"].seconds)
    stalls = untraced_stalls_s(app) + rules["gpu_faults"].seconds
    return {s: max(0.0, min(moved + (0.0 if keeps_stalls(s) else stalls) + host, now_s)) for s in strategies}


def bounds(app: Application, r: Reading, rules: dict, strategies: list[str], link_bytes_per_s: float,
           now_s: float, tracer_s: float) -> Bounds:
    """Each way's floor and removable time; the tracing's own time (``tracer_s``, ``rules.tracing``), which lies
    somewhere in what the trace measured, is never removable."""
    outside = _outside_calls_s(app, r)
    host = host_floor_s(r, outside, rules["host_faults"].seconds)
    floor = {s: floor_s(r, link_bytes_per_s, now_s, host, s in rules["carried"].ways) for s in strategies}
    removable = removable_s(app, min(r.host_now, outside), rules, strategies, now_s)
    return Bounds(floor, {s: max(0.0, removable[s] - tracer_s) for s in strategies})


def bounded_saving(saving: float, strategy: str, b: Bounds, now_s: float) -> float:
    """A way's saving held within its bounds: no more than it removes, and no more than takes it below its floor."""
    if saving <= 0:
        return saving
    return min(saving, b.removable[strategy], now_s - b.floor[strategy])


def bound_limit(pick: str, model_saving: float, saving: float, b: Bounds) -> list[Limit]:
    """Where the chosen way's predicted saving was held to its bounds: what the model said and what bounded it."""
    if saving >= model_saving - 1e-12 or saving <= 0:
        return []
    what = ("the time that change removes from the program (its copies, migrations, allocation and page-locking "
            f"calls, fault stalls and host accesses: {format_time(b.removable[pick])})"
            if saving >= b.removable[pick] - 1e-12 else
            f"the least time its copies, kernels and host work need ({format_time(b.floor[pick])})")
    return [Limit("saving-bounded", f"the calibration's prices say {pick} saves {format_time(model_saving)}: held to "
                                    f"{format_time(saving)}, {what}")]
