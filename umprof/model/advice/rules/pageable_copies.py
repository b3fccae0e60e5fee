"""The current way's copies from and to pageable memory, as the trace measured them, stand for the model's price of
them (several threads' copies ran at once: scaled by their overlap, ``rules.threads``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from umprof.core.units import format_time
from umprof.model.advice import thresholds as th
from umprof.model.advice.read import Reading
from umprof.model.advice.result import Limit
from umprof.model.advice.rules import Adjustment
from umprof.model.application import Application, flow_ids
from umprof.model.predict import Prediction


def adjust(app: Application, r: Reading, overlap: float, now_s: float) -> Adjustment:
    """The traced copies' time beyond the model's price of them (``seconds``: the traced time), added to the time
    now, which every other way's saving gains."""
    traced_s, priced_s = pageable_copies_s(app, r.base, r.one_pass, r.workload.output_first_bytes)
    beyond_s = overlap * (traced_s - priced_s)
    return Adjustment("pageable_copies", seconds=traced_s, now_s=beyond_s,
                      limits=_limit(traced_s, priced_s, beyond_s, now_s))


def pageable_copies_s(app: Application, base: Prediction, one_pass: bool,
                       fresh_bytes: float = 0.0) -> tuple[float, float]:
    """The current way's copies from and to pageable memory over its loop (or its run, read as one pass): as the trace
    measured them (``waits_at_steady_pace_s``: the host's wait on each, less kernels running then, a flow's first
    copy at its later ones' pace) and as the model prices them; (0, 0) unless it copies from pageable memory now,
    where it has no such copies, and where its copies of SMALL_COPY or less take more than SMALL_SHARE of their time.
    The first stands for the second in the current way's time. ``fresh_bytes``: the output whose malloc'd pages the
    model prices as first touched by the copies back (``Workload.output_first_bytes``); the copies back that carry
    that much count at their flow's later pace (``waits_at_steady_pace_s``).

    A pageable copy runs at the host's pace: the driver copies through small pinned buffers of its own, and a
    destination never touched before faults its pages in as the copy lands. The trace measures that pace; the
    calibration, from another run of another host's memory, only estimates it. A page-locked copy runs at the link's,
    which the calibration prices within a few percent. A pycuda loop whose
    ``.get()`` copies back into a new numpy array every step copied back at 3.5 GB/s in its trace on an H200, 746 ms
    of copies where the model priced 400 ms, and pinned arrays measured 0.72 s faster where 0.33 s had been
    predicted; a loop of 16 MiB in every step and 32 MiB out every 8th copied 463 ms where the model priced 655 ms, and
    registered memory measured 0.34 s faster where 0.56 s had been predicted (2026-12-02). A small copy's time is
    its call's latency, which the trace lengthens by its own work on every call (61,440 copies of
    16 KiB: 15 µs a copy as traced, where the saving measured says about 12): the calibration, which measured such
    copies untraced as a loop makes them, prices those."""
    if app.strategy != "pageable" or base.strategy != "pageable":
        return 0.0, 0.0
    loop = None if one_pass else app.loop
    span, lead = (None, None) if loop is None else (loop.span, loop.lead and loop.lead.span)
    copies = app.explicit_copies_within(span, lead).sort_values("start", kind="stable")
    if copies.empty:
        return 0.0, 0.0
    waits = waits_at_steady_pace_s(app, copies, fresh_bytes)
    if waits[(copies["bytes"] <= th.SMALL_COPY).to_numpy()].sum() > th.SMALL_SHARE * waits.sum():
        return 0.0, 0.0
    return float(waits.sum()), base.phases.get("h2d", 0.0) + base.phases.get("d2h", 0.0)


def waits_at_steady_pace_s(app: Application, copies: pd.DataFrame, fresh_bytes: float = 0.0) -> np.ndarray:
    """The host's wait on each of the given copies, in time order (``Application.copies_waits_s``), each flow's first
    copy at no more than its later ones' median pace (seconds a byte, times its bytes), where the flow
    (``application.flow_ids``) has at least th.STEADY_COPIES copies. A
    first copy back into malloc'd pages never touched faults them in as it lands, and a first copy of all pays the
    driver's own first use: the model prices those as the buffer's first write and the first iteration's extra
    (``host_init``, ``first_extra``) under every way, the current one too, so the trace's figure must not hold them
    again: a loop of 16 MiB in and 512 MiB out, 3 iterations, copied its first 512 MiB back in 341 ms
    and the next two in 36 ms each in its trace on an H200; counted whole, every way's saving came out 0.28 s above
    the 0.51 s measured (2026-12-02). Copies into new arrays every step fault every time, first or not: their
    first copy is like the others, and all of it counts.

    An output copied back in many parts faults in over as many copies: the copies back that carry its first
    ``fresh_bytes`` (the output the model prices as first touched so) count at their flow's pace after them. An
    out-of-core filter (4 passes, 32 tiles of 16 MiB back each into a second malloc'd image) took 315 ms for its
    first pass's copies back in its trace on an H200, 39-40 ms for each later pass's; counted whole, beside the
    model's 329 ms for the image's first touch, its run as it is came out 0.35 s above the one measured."""
    waits = app.copies_waits_s(copies)
    flow, nbytes = flow_ids(copies), copies["bytes"].to_numpy(float)
    _, first = np.unique(flow, return_index=True)
    is_first = np.zeros(len(flow), bool)
    is_first[first] = True
    capped = is_first & (np.bincount(flow)[flow] >= th.STEADY_COPIES)
    if fresh_bytes > 0:
        back = (copies["direction"] == "d2h").to_numpy()
        before = np.cumsum(np.where(back, nbytes, 0.0)) - np.where(back, nbytes, 0.0)  # bytes back before each
        capped |= back & (before < fresh_bytes)

    def pace(chosen):  # seconds a byte, so that a flow of several sizes (a size class) caps each at its own size
        return pd.Series(waits[chosen] / np.maximum(nbytes[chosen], 1.0)).groupby(flow[chosen]).median()

    # each flow's pace after the capped copies; where every later copy of it is capped, its later copies'
    limit = pace(~capped).combine_first(pace(~is_first)).reindex(flow[capped]).to_numpy() * nbytes[capped]
    waits[capped] = np.where(np.isnan(limit), waits[capped], np.minimum(waits[capped], limit))
    return waits


def _limit(traced_s: float, priced_s: float, beyond_s: float, now_s: float) -> list[Limit]:
    """What the trace measured of the current way's pageable copies against the model's price (``pageable_copies_s``),
    where that moved the savings (``beyond_s``) by more than the loop's noise."""
    if abs(beyond_s) < th.NOISE * now_s:
        return []
    text = (f"its copies from and to pageable memory took {format_time(traced_s)} as traced, where the "
            f"calibration prices {format_time(priced_s)}: the trace's figure is the current way's (a pageable copy "
            "runs at the host's pace, which a calibration's run only estimates), so every other way's saving is "
            f"{format_time(abs(beyond_s))} {'more' if beyond_s > 0 else 'less'} than the calibration alone says")
    return [Limit("pageable-copies-traced", text)]
