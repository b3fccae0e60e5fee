"""A program that allocates and frees many buffers makes as many calls under any other way: what its allocation
calls take beyond the model's one buffer is priced the same under every way (MANY_ALLOCATION_CALLS)."""

from __future__ import annotations

from umprof.core.units import format_time
from umprof.model.advice import thresholds as th
from umprof.model.advice.read import Reading
from umprof.model.advice.result import Limit
from umprof.model.advice.rules import Adjustment
from umprof.model.advice.rules.allocation import priced_s
from umprof.model.application import Application
from umprof.model.predict import Prediction


def adjust(app: Application, r: Reading, pinning_s: float) -> Adjustment:
    """What the allocation calls take beyond one buffer's, added to every way but the current one (whose time holds
    them as traced)."""
    beyond = allocations_beyond_one_s(app, r.base, pinning_s)
    if beyond <= 0:
        return Adjustment("allocations_beyond", seconds=beyond)
    limit = Limit("many-allocations", f"its {app.allocation_calls} calls that allocate and free memory take "
                                      f"{format_time(app.allocation_s)}, {format_time(beyond)} more than one buffer's "
                                      "under the model: priced the same under every way (it would allocate as many "
                                      "buffers under any)")
    return Adjustment("allocations_beyond", seconds=beyond,
                      ways={p.strategy: beyond for p in r.ranked if p is not r.base}, limits=[limit])


def allocations_beyond_one_s(app: Application, base: Prediction, pinning_s: float = 0.0) -> float:
    """What the application's allocation calls take beyond the model's allocation and free of one buffer under its
    current way (``base``), where it makes many of them (th.MANY_ALLOCATION_CALLS); else 0. The calls that page-lock
    memory every iteration (``pinning_s``, ``Application.pinning_in_loop_s``) are left out: no way needs them."""
    calls = app.allocation_calls - (app.pinning_in_loop_calls if pinning_s else 0)
    if calls <= th.MANY_ALLOCATION_CALLS:
        return 0.0
    return max(0.0, app.allocation_s - pinning_s - priced_s(base))
