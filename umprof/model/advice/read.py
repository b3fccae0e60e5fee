"""Reading the application as umprof's workload and ranking it with the calibration (the advice's first step).

A loop of copies whose host thread does not touch what it copies is also read as one pass over everything it copies,
and the reading whose prediction of the run as it is comes nearer its measured time is the one priced
(``choose_reading``); the kernels' launches are read as passes over the buffer where their time says so
(``kernel_passes``), and what they could move of it bounds the ways that read it across the link
(``kernel_bytes``)."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import NamedTuple

from umprof.core.units import format_size, format_time
from umprof.model import frameworks
from umprof.model.advice import thresholds as th
from umprof.model.advice.workload import workload_of
from umprof.model.application import Application
from umprof.model.calibration import HOST_STEPS
from umprof.model.predict import Calibration, Prediction
from umprof.model.workload import MAX_REUSE, Workload


class Reading(NamedTuple):
    """One reading of an application as umprof's workload (``workload_of``; ``one_pass``: as one pass over
    everything it copies), ranked by the calibration: its current way (None where the calibration has none of it)
    and the prediction savings count from (``base``), and its host accesses as it makes them (``host_now``)."""
    workload: Workload | None
    how: str
    ranked: list
    excluded: list
    current: str | None
    base: Prediction | None
    host_now: float
    one_pass: bool

    def as_made_s(self) -> float:
        """The current way's predicted time with its host accesses priced as the application makes them."""
        return self.base.whole_s - host_s(self.base) + self.host_now


def reading(app: Application, cal: Calibration, one_pass: bool, one_dataset: bool = False) -> Reading:
    """The application read as a workload (``workload_of``) and ranked by the calibration, its kernels' bytes and
    passes read from their launches, its current way's host accesses as it makes them (``host_now``)."""
    w, how = workload_of(app, one_pass, one_dataset)
    if w is None:
        return Reading(None, how, [], [], None, None, 0.0, one_pass)
    w = replace(w, fits=w.bytes <= (cal.device.get("memory_total_bytes") or app.memory_bytes or w.bytes))
    moved, basis = kernel_bytes(w, cal)
    if moved:
        w = replace(w, kernel_bytes=moved)
        how += (f"; its kernels' {format_time(w.kernel_s)} an iteration move at most {format_size(moved)} of device "
                f"memory ({basis}), all that a kernel reading the data in host memory would move")
    passes, launches = kernel_passes(app, w, cal, one_pass, one_dataset)
    if passes > 1:
        w = replace(w, reuse=min(passes, MAX_REUSE))
        how += (f"; its {launches:.0f} kernel launches an iteration make {passes} passes over the buffer (each "
                "launch's time at the DRAM's theoretical rate, at most one pass a launch): as many as the ways that "
                "read it in host memory would make across the link"
                + (f" (priced as {MAX_REUSE}, the most a workload takes)" if passes > MAX_REUSE else ""))
    ranked, excluded = cal.rank(w)
    current = app.strategy if app.strategy in {p.strategy for p in ranked} else None
    base = next((p for p in ranked if p.strategy == current), None) or ranked[-1]
    return Reading(w, how, ranked, excluded, current, base, host_now(base, ranked), one_pass)


def for_framework(r: Reading, framework: str) -> Reading:
    """The reading with the ways ``framework``'s own calls cannot make (``frameworks.cannot_make``) moved from its
    ranking to its excluded ways, with why: a program is advised only ways it can take (its way now stays)."""
    cannot = frameworks.cannot_make(framework)
    drop = {p.strategy for p in r.ranked if p.strategy in cannot and p.strategy != r.current}
    ranked = [p for p in r.ranked if p.strategy not in drop]
    if not drop or not ranked:
        return r
    base = ranked[-1] if r.base.strategy in drop else r.base
    return r._replace(ranked=ranked, excluded={**r.excluded, **{s: cannot[s] for s in sorted(drop)}}, base=base,
                      host_now=host_now(base, ranked))


def kernel_bytes(w: Workload, cal: Calibration) -> tuple[int, str]:
    """The most the application's kernels moved of the buffer per iteration, and what set it: their own time (on
    device-resident data) at the device memory's theoretical rate, and no less than the GPU's L2 holds (data a copy
    left there is read faster than the DRAM's rate), where that is less than the buffer; 0 where it is not (or the
    rate or the kernels' time is not known)."""
    rate = float(cal.device.get("dram_bytes_per_s") or 0.0)
    if not rate or not w.kernel_s:
        return 0, ""
    by_rate, l2 = w.kernel_s * rate, float(cal.device.get("l2_bytes") or 0)
    moved = int(max(by_rate, l2))
    basis = "the DRAM's theoretical rate" if by_rate >= l2 else \
        f"the GPU's L2 size; the DRAM's theoretical rate moves {format_size(by_rate)} in that time"
    return (moved, basis) if moved < w.bytes else (0, "")


def kernel_passes(app: Application, w: Workload, cal: Calibration, one_pass: bool,
                   one_dataset: bool = False) -> tuple[int, float]:
    """How many passes over the buffer an iteration's kernels make (``Workload.reuse``), and how many kernels it
    launches: each launch moves at most what its time moves of device memory at the DRAM's theoretical rate, and
    reads the buffer at most once (where an iteration copies in in parts, at most one part), summed over the loop's
    launches per iteration and rounded; 1 where that is less (or the rate or the kernels' own time is not known).

    At most once a launch: a kernel's own repeated reads of its data are served by the GPU's caches (a 5 x 5
    filter reads each pixel 25 times, and mapped memory measured 14-39% behind the fastest way, not 25 passes
    across the link), while each launch of an iterative loop reads its data again from wherever it lives: in
    host memory, across the link every time. Priced as one pass, a loop of 40 launches over a 32 MiB frame was
    advised mapped memory. Only launches over device-resident data count (``Workload.kernel_s``), and only where
    an iteration copies in (or, managed, migrates in) most of what it works on (the frame it refines): where it
    copies little or nothing in, its launches step state kept on the GPU (a field stepped 20 times between copies
    back; a stencil's grid), which a way that reads host memory in place would keep there too, copying out what it
    copies out now: one pass. ``one_dataset``: the run's launches over one dataset that each iteration carries out and
    back (``rules.carried``), a launch at most one of the parts an iteration copies in (an out-of-core filter's 128
    launches over its image's 32 tiles, four passes)."""
    rate = float(cal.device.get("dram_bytes_per_s") or 0.0)
    loop, k = (None if one_pass else app.loop), app.kernels
    if not rate or not w.kernel_s or not len(k):
        return 1, 0.0
    # the run as one pass (or one iteration): each launch reads at most one of the parts the run copies in (a
    # dataset sent batch by batch, a kernel a batch: 32 launches of 12 µs over
    # its 32 batches of 32 MiB, read as two passes over its 1 GiB without this)
    launches, parts = float(len(k)), max(1.0, float((app.copies["direction"] == "h2d").sum()))
    if one_dataset:  # one dataset carried out and back (``rules.carried``): in the parts its steady iteration copies
        parts = max(1.0, float(app.loop.per_iteration.get("h2d_copies", 0.0)))
    if loop is not None:  # as many launches as its steady iteration makes, their times those issued in its span
        per = loop.per_iteration
        launches, parts = float(per.get("kernels", 0.0)), max(1.0, float(per.get("h2d_copies", 0.0)))
        sent, largest = per.get("h2d_bytes", 0.0), loop.largest.get("h2d_largest", 0.0)
        if sent <= 0 and largest <= 0:  # no copies in: managed memory's pages, what migrates in against them all
            sent, largest = per.get("um_h2d_bytes", 0.0), float(w.bytes)
        if sent <= 0 or sent < th.STATE_SENT * largest:
            return 1, launches
        start = k["call_start"].to_numpy()
        k = k[(start >= loop.span[0]) & (start <= loop.span[1])]
    if not len(k) or not launches:
        return 1, launches
    # a launch reads no more than one part of what an iteration copies in, where it copies it in parts (a pipeline's
    # kernel works on its chunk: overlapped's eight launches an iteration are one pass, not four)
    each = (k["dur_s"].to_numpy(float) * rate).clip(max=float(w.bytes) / parts).mean()
    return max(1, int(launches * each / w.bytes + 0.5)), launches


def host_s(p: Prediction) -> float:
    """The host's writes and reads of the buffer over the whole run, as predicted."""
    return sum(p.phases.get(k, 0.0) for k in HOST_STEPS)


def host_now(base: Prediction, ranked: list[Prediction]) -> float:
    """The host's accesses over the run as the application makes them now: as predicted for its way, but
    where that is pageable memory, as pinned memory's. umprof's loop measures pageable memory's host
    accesses slower than pinned memory's (the driver's copies into it leave nothing in the host's caches),
    but the applications timed in every mode did not show it: pinning the buffers of a C loop and a
    pycuda loop (64 and 32 MiB each way an iteration) saved a median 0.38 and 0.29 s over eight H100 runs of
    2026-11-25 and 0.46 and 0.25 s over two H200 runs, where the prediction less the host's accesses said
    0.44, 0.22, 0.47 and 0.25 s, and the host's accesses added 0.11, 0.12, 0.21 and 0.21 s more."""
    pinned = next((p for p in ranked if p.strategy == "pinned"), None)
    return host_s(pinned if base.strategy == "pageable" and pinned is not None else base)


def misses(r: Reading, now_s: float) -> float:
    """How far a reading's prediction of the run as it is lies from its measured time (a ratio either way)."""
    model = r.base.whole_s
    return abs(math.log(model / now_s)) if model > 0 and now_s > 0 else math.inf


def host_idle(app: Application, host_now: float, threads: int) -> tuple[float, float] | None:
    """The loop's one host thread's time outside its CUDA calls an iteration, and what writing and reading the
    bytes it moves would take (``host_now``, the run's priced host accesses, an iteration's share); None where
    they say nothing (no loop, no priced accesses, or several threads, whose calls overlap one another's
    host work)."""
    loop = app.loop
    if loop is None or threads > 1 or host_now <= 0 or "calls_s" not in loop.per_iteration:
        return None
    return max(0.0, loop.per_iteration["wall_s"] - loop.per_iteration["calls_s"]), host_now / loop.iterations


def untouched(idle: tuple[float, float] | None) -> bool:
    """Whether the loop's host thread spends far less time outside its CUDA calls than touching the bytes it moves
    would take (``idle``: ``host_idle``; th.HOST_TIME_SHARE)."""
    return idle is not None and idle[0] < th.HOST_TIME_SHARE * idle[1]


def reads_as_one_pass(app: Application, idle: tuple[float, float] | None) -> bool:
    """Whether the loop may be read as one pass over everything it copies (``advise`` keeps the reading whose
    prediction of the run as it is comes nearer its measured time): a loop of copies whose host thread spends far
    less time outside its CUDA calls than touching the bytes would take (th.HOST_TIME_SHARE), so that it wrote them
    before the loop and reads them after it, or copies them again unchanged. A program that
    wrote 1 GiB, then sent it in 32 chunks over 4 streams, read as 32 iterations that each write their chunk
    was told to page-lock its buffers, measured 22% behind the fastest way on an H100 and an H200; read as
    one pass, it is told to prefetch managed memory, measured the fastest on the H100 and 9.7% behind mapped
    memory on the H200, with pinned, pageable and zero-copy memory among the slowest, as predicted."""
    explicit = app.totals["h2d_bytes"] + app.totals["d2h_bytes"] > 0
    return untouched(idle) and explicit and app.loop.iterations > 1


def choose_reading(app: Application, cal: Calibration, now_s: float,
                   threads: int) -> tuple[Reading, tuple[float, float] | None]:
    """The reading priced, and the loop's host time outside its CUDA calls against its priced accesses (``host_idle``):
    the loop as its iterations, or, where its host does not touch what it copies (``reads_as_one_pass``), as one pass
    over everything it copies where that reading's prediction of the run as it is comes nearer its measured time
    (1 GiB sent in 32 chunks: 0.42 s as its 32 iterations, 1.06 s as one pass, 1.65 s measured on an H100; NVIDIA's
    simpleStreams: 0.90 s as its loop, 8.2 s as one pass over the 4 GiB it copies, 0.44 s measured)."""
    r = reading(app, cal, one_pass=False)
    if r.workload is None:
        return r, None
    idle = host_idle(app, r.host_now, threads)
    if reads_as_one_pass(app, idle):
        once = reading(app, cal, one_pass=True)
        if once.workload is not None and misses(once, now_s) < misses(r, now_s):
            r = once
    return r, idle
