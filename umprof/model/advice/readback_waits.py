"""Small read-backs the host waits on, step after step: a loop that reads a value back each step (a loss's
`.item()`, a decoded token) and waits for it leaves the GPU idle while the host, released, issues the next step's
work; read back without waiting (kept on the GPU and read once, or copied asynchronously into pinned memory and read
some steps later), the host issues that work while the GPU still runs.

Priced in every framework's programs: a value logged (a loss's ``.item()``) and a value tested (a solver's residual,
read a step late) alike; a CUDA C solver reading its 4 KiB residual back every iteration (H200, 2026-12-07) ran 21%
faster reading it asynchronously, a step late, within the band priced on its trace (112-221 ms, measured 124 ms).
The read-backs: at least MANY_COPIES copies to the host of SMALL_COPY bytes or less in the loop, each one the host
waited on (a synchronous copy, or one its thread synchronised on next). A step runs from one read-back's end to the
next's: the host works (H), then waits on the read-back (W, the copy's call to the end of its wait). Of the step's
time the GPU works G and waits E on something else, as the host does (another stream's event, another process or
rank: the GPU's idle time within the wait). Not waiting, the host issues the next step while the GPU runs this one,
and a step takes max(H, G + E) instead of H + W: the saving is H + W - max(H, G + E), which is min(W, the GPU's idle
time while the host worked): the host's wait, but no more than the idle time the host's own work left the GPU. The
band: its high end that sum as traced, its low end with what the tracer added to each call taken off the wait's
calls and the step's (TRACED_CALL_S). It is conditional: the trace cannot show whether the host needs each value
before it issues the next step's work (a branch that chooses that work), where the wait is the program's own. It is
advised only where the band's low end is above NOISE of the time the ways price (``result.priced_s``)."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np

from umprof.core.units import format_size, format_time
from umprof.model import frameworks
from umprof.model.advice import explain
from umprof.model.advice import thresholds as th
from umprof.model.advice.result import Advice, AppAdvice
from umprof.model.application import Application, wait_calls, waited_on
from umprof.model.intervals import covered, union

IDIOM = "async-readback"  # the change's code in the advice (``Advice.idiom``)
CONDITION = ("the host does not need each value before it issues the next step's work (a stopping test can read it "
             "a step late, running a step more; a branch that chooses the next step's work keeps the wait)")


class ReadbackWaits(NamedTuple):
    """The small read-backs the host waits on, and what not waiting on them saves (seconds over the loop)."""
    count: int
    largest_bytes: int
    wait_s: float  # the host's time waiting on them, as traced
    idle_s: float  # the GPU's idle time while the host worked, in the steps they end, as traced
    low_s: float
    high_s: float

    @property
    def saving_s(self) -> float:
        """The saving said: the band's middle."""
        return (self.low_s + self.high_s) / 2


def waited_readbacks(app: Application):
    """The loop's copies to the host of SMALL_COPY bytes or less that the host waited on, by when they ended."""
    c = app.copies_issued_in_loop()
    if c.empty or "waited_end" not in c:
        return c
    waited = waited_on(c)
    small = (c["bytes"].to_numpy(np.int64) <= th.SMALL_COPY) & (c["direction"] == "d2h").to_numpy()
    return c[waited & small].sort_values("end")


def readback_waits(app: Application) -> ReadbackWaits | None:
    """What not waiting on the loop's small read-backs saves (see the module's docstring); None where it makes fewer
    than MANY_COPIES of them."""
    r = waited_readbacks(app)
    if len(r) < th.MANY_COPIES:
        return None
    work = _gpu_work(app)
    u = union(work[:, 0], work[:, 1])
    back = r["end"].to_numpy(np.int64)
    before = np.insert(back[:-1], 0, app.loop.span[0] if app.loop is not None else int(r["call_start"].min()))
    step = (back - before) / 1e9
    idle = np.maximum(step - (covered(u, back) - covered(u, before)) / 1e9, 0.0)  # the GPU's idle time in each step
    called, waited_end = r["call_start"].to_numpy(np.int64), r["waited_end"].to_numpy(np.int64)
    wait = (waited_end - called) / 1e9
    # the GPU's idle time while the host worked: the step's, less that within the host's wait (within the step)
    lo = np.maximum(called, before)
    hi = np.maximum(np.minimum(waited_end, back), lo)
    idle_in_wait = ((hi - lo) - (covered(u, hi) - covered(u, lo))) / 1e9
    host_idle = np.maximum(idle - idle_in_wait, 0.0)
    issued = np.sort(work[:, 2])
    step_calls = np.searchsorted(issued, back, side="right") - np.searchsorted(issued, before, side="right")
    high = float(np.minimum(wait, host_idle).sum())
    # the tracer lengthened the wait's calls, and the calls the host issued in the step, which the GPU waited for
    low = float(np.minimum(np.maximum(wait - wait_calls(r) * th.TRACED_CALL_S, 0.0),
                           np.maximum(host_idle - step_calls * th.TRACED_CALL_S, 0.0)).sum())
    if high <= 0:
        return None
    return ReadbackWaits(len(r), int(r["bytes"].max()), float(wait.sum()), float(host_idle.sum()), low, high)


def _gpu_work(app: Application) -> np.ndarray:
    """The app's kernels and copies as rows of (start, end, call_start) in ns, by start."""
    parts = [df[["start", "end", "call_start"]].to_numpy(np.int64) for df in (app.kernels, app.explicit_copies)
             if len(df) and "call_start" in df]
    work = np.concatenate(parts) if parts else np.zeros((0, 3), np.int64)
    return work[np.argsort(work[:, 0], kind="stable")]


def add_readback_waits(app: Application, out: AppAdvice) -> None:
    """A line for the loop's small read-backs where not waiting on them saves at least NOISE of the time the ways
    price; the loop's advice becomes it, conditional (``CONDITION``), where its band's low end beats the loop's
    advice's and clears NOISE too."""
    loop = out.loop_advice
    w = readback_waits(app) if loop is not None else None
    if w is None or w.saving_s < th.NOISE * out.priced_s:  # less is not worth a change
        return
    line = _advice(w, loop.now_s, out.framework)
    out.advice.append(line)
    if w.low_s <= th.NOISE * out.priced_s or not explain.beats_way(loop, w.low_s):
        return
    chosen = dataclasses.replace(line, flow="loop", now_s=loop.now_s, predicted_s=loop.now_s - line.saving_s)
    explain.advise_instead(app, out, chosen, condition=CONDITION)


def _advice(w: ReadbackWaits, now_s: float, framework: str) -> Advice:
    """The read-backs' line: the change in the framework's idiom and what it saves (held within the time now)."""
    change = frameworks.change_for(framework, IDIOM, {"count": w.count})
    saving = min(w.saving_s, now_s)
    note = (f"where {CONDITION}; the host waits {format_time(w.wait_s / w.count)} on each, and the GPU is idle "
            f"{format_time(w.idle_s / w.count)} a step while the host works, on average as traced")
    return Advice(f"d2h {w.count} waited read-backs of {format_size(w.largest_bytes)} or less", "pinned", change,
                  now_s, now_s - saving, saving, note=note, saving_low_s=max(0.0, min(w.low_s, saving)),
                  saving_high_s=min(w.high_s, now_s), idiom=IDIOM, conditional=True, weighed_s=w.low_s,
                  must_clear=th.NOISE)
