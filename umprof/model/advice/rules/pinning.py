"""Memory page-locked and released every iteration (a helper that registers the buffer around each copy) is priced
pinned once under every way, the current one too: one iteration's calls."""

from __future__ import annotations

from umprof.core.units import format_time
from umprof.model.advice.read import Reading
from umprof.model.advice.result import Limit
from umprof.model.advice.rules import Adjustment
from umprof.model.application import Application


def adjust(app: Application, r: Reading) -> Adjustment:
    """The loop's page-locking calls (``seconds``); the current way predicted with its memory pinned once (all but
    one iteration's calls taken off its time)."""
    pinning_s = 0.0 if r.one_pass else app.pinning_in_loop_s
    if not pinning_s:
        return Adjustment("pinning")
    once = pinning_s * (1 - 1 / app.loop.iterations)
    limit = Limit("pinned-in-loop", f"its loop page-locks and releases host memory every iteration "
                                    f"({_pinning_words(app)}): every way is priced with its memory pinned once, before "
                                    "the loop (one iteration's calls for its current way), and the ways that pin "
                                    "nothing without them")
    return Adjustment("pinning", seconds=pinning_s, ways={r.base.strategy: -once}, limits=[limit])


def pin_once_change(app: Application) -> str:
    """The change for a loop that page-locks its memory every iteration and should keep its way: do it once."""
    return (f"page-lock the host buffers once, before the loop, and release them after it (its loop now makes "
            f"{_pinning_words(app)}); keep the copies")


def _pinning_words(app: Application) -> str:
    return (f"{app.pinning_in_loop_calls} calls to {' and '.join(app.loop_pinning.names)}, "
            f"{format_time(app.pinning_in_loop_s)} in all, {app.pinning_in_loop_calls / app.loop.iterations:.0f} an "
            "iteration")
