"""Many small copies made one: a host thread that copies many small buffers in a row, waiting on each (a model's
parameters copied one by one, a batch of many small tensors), pays each copy's call, its wait and its latency; the
same bytes packed into one page-locked buffer cross in one copy.

The copies it packs: a run of at least MANY_COPIES copies of SMALL_COPY bytes or less, one direction, one host
thread, no kernel issued between them, each one the host waited on (a synchronous copy, or one its thread
synchronised on next). The time it removes is the host's, as traced: at least each copy's call start to the end of
the wait on it, at most the run's whole span, first call to last wait (between the copies the host does the
framework's own work for each, a tensor made and checked, a Python loop's step, which packing removes too, and may do
work of its own, which it does not: the trace cannot tell them apart). What it costs instead: one copy of the run's
bytes from pinned memory, as the calibration prices it. The band: its low end the copies' own time less what the
tracer added to each call (TRACED_CALL_S), its high end the runs' spans; the saving said is their middle. It is
advised only where the band's low end is above NOISE of the time the ways price (``result.priced_s``)."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np
import pandas as pd

from umprof.core.units import format_size, format_time
from umprof.model import frameworks
from umprof.model.advice import explain
from umprof.model.advice import thresholds as th
from umprof.model.advice.result import Advice, AppAdvice, Limit
from umprof.model.application import Application, wait_calls, waited_on
from umprof.model.predict import Calibration

IDIOM = "packed-copy"  # the change's code in the advice (``Advice.idiom``), as the framework choices' are


class Packing(NamedTuple):
    """The runs of small copies a change would pack, and what packing them saves (seconds over the time now)."""
    direction: str
    runs: int  # how many runs of copies
    copies: int  # copies in them
    largest_run: int  # copies in the longest run
    largest_bytes: int  # the largest copy among them
    run_bytes: int  # the bytes of the longest run: one packed copy's size
    removed_s: float  # the host's time in their calls and waits, as traced
    span_s: float  # the runs' spans, each its first call's start to its last wait's end
    packed_s: float  # one copy a run instead
    low_s: float
    high_s: float

    @property
    def saving_s(self) -> float:
        """The saving said: the band's middle."""
        return (self.low_s + self.high_s) / 2


def runs_of_small_copies(app: Application) -> pd.DataFrame:
    """The app's waited-on small copies (within its loop, where it has one) with a ``run`` number each: the runs
    this module packs (see the module's docstring), MANY_COPIES copies or more each."""
    c = app.copies_issued_in_loop()
    if c.empty or "waited_end" not in c:
        return c.assign(run=pd.Series(dtype=np.int64))
    c = c.sort_values(["tid", "call_start"], kind="stable")
    waited = waited_on(c)
    small = c["bytes"].to_numpy(np.int64) <= th.SMALL_COPY
    issued = np.sort(app.kernels["call_start"].to_numpy(np.int64)) if len(app.kernels) else np.zeros(0, np.int64)
    kernels_before = np.searchsorted(issued, c["call_start"].to_numpy(np.int64))
    keep = waited & small
    joined = (_as_before(c["tid"].to_numpy()) & _as_before(c["direction"].to_numpy()) & _as_before(kernels_before)
              & _as_before(keep) & np.concatenate([[False], keep[:-1]]))
    run = np.cumsum(~joined)
    c = c.assign(run=run)[keep]
    sizes = c["run"].map(c["run"].value_counts())
    return c[sizes >= th.MANY_COPIES]


def _as_before(a: np.ndarray) -> np.ndarray:
    """Whether each element equals the one before it (the first: False)."""
    return np.concatenate([[False], a[1:] == a[:-1]])


def packing(app: Application, cal: Calibration) -> list[Packing]:
    """What packing each direction's runs of small copies saves (see the module's docstring), the most first."""
    c = runs_of_small_copies(app)
    out = []
    for direction, d in c.groupby("direction", sort=False):
        host_s = (d["waited_end"] - d["call_start"]).to_numpy(np.float64) / 1e9
        runs = d.groupby("run")
        per_run = runs["bytes"].sum()
        packed = float(sum(cal.curve("pinned", direction)(float(b)) for b in per_run))
        removed = float(host_s.sum())
        span = float((runs["waited_end"].max() - runs["call_start"].min()).sum() / 1e9)
        high = span - packed
        low = removed - float(wait_calls(d).sum()) * th.TRACED_CALL_S - packed
        if high <= 0:
            continue
        counts = d["run"].value_counts()
        out.append(Packing(str(direction), int(len(counts)), int(len(d)), int(counts.max()), int(d["bytes"].max()),
                           int(per_run.loc[counts.idxmax()]), removed, span, packed, low, high))
    return sorted(out, key=lambda p: -p.saving_s)


def advisable(p: Packing, priced: float) -> bool:
    """Whether packing may be advised: the low end of its band above NOISE of the time the ways price."""
    return p.low_s > th.NOISE * priced


def add_packing(app: Application, cal: Calibration, out: AppAdvice) -> None:
    """A line for each direction's runs of small copies that save at least NOISE of the time the ways price
    (``out.priced_s``); the loop's advice becomes packing where its band's low end beats the loop's advice's (and is
    advisable)."""
    loop = out.loop_advice
    if loop is None:
        return
    found = [p for p in packing(app, cal) if p.saving_s >= th.NOISE * out.priced_s]  # less is not worth a change
    lines = [_advice(p, loop.now_s, out.framework) for p in found]
    out.advice += lines
    best = max((p for p in found if advisable(p, out.priced_s)), key=lambda p: p.low_s, default=None)
    if best is None or not explain.beats_way(loop, best.low_s):
        return
    line = lines[found.index(best)]
    chosen = dataclasses.replace(line, flow="loop", now_s=loop.now_s, predicted_s=loop.now_s - line.saving_s)
    explain.advise_instead(app, out, chosen, Limit(
        "packing-host-time", f"packing removes the host's time in the runs of copies it packs: their calls and its "
                             f"waits on them ({format_time(best.removed_s)}), which their transfers' own time does not "
                             f"count, and at most the host's work between them ({format_time(best.span_s)} from each "
                             "run's first call to its last wait, all told)"))


def _advice(p: Packing, now_s: float, framework: str) -> Advice:
    """The runs' line: their change in the framework's idiom, the host's time in them now and packed (its saving
    held within the loop's time now, ``now_s``)."""
    count = f"{p.largest_run}" if p.runs == 1 else f"up to {p.largest_run}"
    change = frameworks.change_for(framework, "packed", {"count": count, "d2h": p.direction == "d2h"})
    label = f"{p.direction} {p.copies} copies of {format_size(p.largest_bytes)} or less in {p.runs} " \
            f"run{'s' if p.runs > 1 else ''}"
    saving = min(p.saving_s, now_s, p.span_s)
    note = (f"each copy's call and the host's wait on it take {format_time(p.removed_s / p.copies)} as traced, "
            f"{format_time(p.span_s / p.copies)} with the host's work between them; one copy of a run's "
            f"{format_size(p.run_bytes)} from pinned memory: {format_time(p.packed_s / p.runs)}")
    return Advice(label, "pinned", change, p.span_s, p.span_s - saving, saving, note=note,
                  saving_low_s=max(0.0, min(p.low_s, saving)), saving_high_s=min(p.high_s, now_s), idiom=IDIOM,
                  weighed_s=p.low_s, must_clear=th.NOISE)
