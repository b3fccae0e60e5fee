"""A program whose kernels read host memory in place (IN_PLACE) makes no copies: its trace holds no bytes to price
another way by, but what any other way could save is bounded by its kernels' time and its allocation calls'."""

from __future__ import annotations

from umprof.core.units import format_time
from umprof.model.advice import thresholds as th
from umprof.model.advice.result import Advice, AppAdvice, Limit, loop_s, priced_s
from umprof.model.application import Application


def bound_in_place(app: Application, out: AppAdvice) -> None:
    """What bounds any other way's saving: its kernels' time (each other way reads the data on the GPU, after copies
    or migrations that take time of their own) and its calls that allocate and pin memory. Where that is within the
    prediction's own error on a saving (SAVING_ERROR of the time the ways price: ``priced_s``, its allocation calls
    in it), it is told to keep what it has; else what bounds a saving is said."""
    kernel_s, alloc_s, now_s = float(app.totals["kernel_s"]), float(app.allocation_s), float(loop_s(app))
    if now_s <= 0:
        return
    out.priced_s = priced_s(app.loop, now_s, alloc_s)
    bound = (f"its kernels, reading host memory in place, take {format_time(kernel_s)} and its calls that allocate "
             f"and pin memory {format_time(alloc_s)} of its {format_time(now_s)} ({(kernel_s + alloc_s) / now_s:.1%})")
    if kernel_s + alloc_s < th.SAVING_ERROR * out.priced_s:
        out.advice.append(Advice("loop", app.strategy, "keep it as it is", now_s, now_s, 0.0,
                                 note=f"{bound}: within the prediction's own error"))
        out.verdict += (f" But {bound}: no host-memory strategy can save more than that, within the prediction's "
                        "own error; keep it.")
    else:
        out.limits.append(Limit("in-place-bound", f"{bound}: no host-memory strategy can save much more than that"))
