"""Copies through a bounce buffer that the host fills and drains: its host copies, which the calibration does not
price, are the current way's alone; every other way copies straight from the data's memory."""

from __future__ import annotations

from umprof.core.units import format_size, format_time
from umprof.model.advice.read import Reading
from umprof.model.advice.result import Limit
from umprof.model.advice.rules import Adjustment
from umprof.model.application import Application


def adjust(app: Application, r: Reading) -> Adjustment:
    """The host's copies through its bounce buffer over the loop, added to its time now."""
    staging_s = 0.0 if r.one_pass else app.host_staging.seconds
    if not staging_s:
        return Adjustment("staging")
    h = app.host_staging
    per_chunk = format_time(staging_s / h.chunks)
    if h.pooled:
        through = ("a pinned buffer of a memory pool that the host fills before each copy (a pool's transfer buffer, "
                   "watched by a new event after its copy, as CuPy's `cupy.asarray` of a numpy array makes it)")
        each = (f"each filled in {per_chunk}: the host's time before it, at most a host copy's rate, the rest its "
                "own work")
    else:
        through = "a pinned bounce buffer that the host fills and drains"
        each = f"each beside {per_chunk} of the host's time outside CUDA calls, a host copy's rate"
    limit = Limit("bounce-buffer", f"its copies go through {through} "
                                   f"({h.chunks} copies of {format_size(h.chunk_bytes)} in the loop, {each}): "
                                   f"{format_time(staging_s)} over the loop, priced as its own way's "
                                   "alone; every other way copies straight from the data's memory")
    return Adjustment("staging", seconds=staging_s, now_s=staging_s, limits=[limit])
