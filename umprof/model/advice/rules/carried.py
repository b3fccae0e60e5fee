"""A loop that carries one dataset out and back unchanged (``round_trip``): the ways whose pages stay where the
kernels used them move it once, the loop before it (its first pass, cut apart) included."""

from __future__ import annotations

from umprof.model.advice import thresholds as th
from umprof.model.advice.read import Reading, reading, untouched
from umprof.model.advice.rules import Adjustment
from umprof.model.advice.rules.host_faults import ACCESS_COUNTED
from umprof.model.advice.rules.pageable_copies import pageable_copies_s
from umprof.model.application import Application
from umprof.model.calibration import kind
from umprof.model.predict import Calibration


def adjust(app: Application, cal: Calibration, r: Reading, idle, now_s: float,
           priced: dict) -> tuple[Adjustment, bool]:
    """Each way that keeps its pages on the GPU priced as one pass over the carried dataset (``carried_s``), in place
    of its price as the loop's iterations (``priced``: strategy -> the seconds it had so far), and whether the loop was
    read so; none elsewhere."""
    carried = carried_s(app, cal, r, idle, now_s)
    ways = {s: t - priced[s] for s, t in carried.items() if s != r.base.strategy and s in priced}
    return Adjustment("carried", ways=ways), bool(carried)


def round_trip(app: Application, idle: tuple[float, float] | None) -> bool:
    """Whether the loop reads as carrying one dataset out and back unchanged: its host thread does not touch what it
    moves (``untouched``), and each steady iteration copies out as much as it copies in (within th.ROUND_TRIP), so that
    what goes out comes back in the next. An out-of-core filter (four passes over a
    512 MiB image, 16 MiB tiles in and out) was priced with its host rewriting the image every pass, managed memory
    1.27 s against 0.46-0.85 s for the others; on two H200 runs every managed way measured fastest, 0.72-0.86 s
    against 0.95-1.20 s for pinned and registered memory, as the image moves once each way under them."""
    if not untouched(idle) or app.loop is None or app.loop.iterations < 2:
        return False
    per = app.loop.per_iteration
    sent, back = float(per.get("h2d_bytes", 0.0)), float(per.get("d2h_bytes", 0.0))
    return sent > 0 and back > 0 and abs(sent - back) <= th.ROUND_TRIP * max(sent, back)


def stays_on_gpu(strategy: str) -> bool:
    """Whether the way's pages stay on the GPU between iterations that the host does not touch: on-demand managed
    memory and the prefetched one (migrated once), and accessed-by (ACCESS_COUNTED: the access counters move them)."""
    return kind(strategy) in ("on-demand", "prefetch") or strategy == ACCESS_COUNTED


def carried_s(app: Application, cal: Calibration, r0: Reading, idle: tuple[float, float] | None,
               measured_base: float) -> dict:
    """Where the loop carries one dataset out and back (``round_trip``) and is read as its iterations: each way that
    keeps its pages on the GPU (``stays_on_gpu``) → its whole run priced as one pass over that dataset, every launch's
    passes over it (``workload_of(one_dataset=True)``). The copy ways keep the program's copies, as its iterations price
    them; the others read host memory every pass as they do. Empty elsewhere."""
    if r0.one_pass or not round_trip(app, idle):
        return {}
    r = reading(app, cal, one_pass=True, one_dataset=True)
    if r.workload is None or r.current is None:
        return {}
    # the program as it runs, read so: the current way as one pass over the dataset, its host accesses as made, with
    # every copy of the run as traced (pageable copies, at the host's pace) or with the copies of the passes after
    # the first as traced; each kept way saves its difference from that (the iterations would price host accesses
    # every pass that its host does not make), and is priced in their frame as the current way less that saving
    traced, priced = pageable_copies_s(app, r.base, one_pass=True, fresh_bytes=r.workload.output_first_bytes)
    as_runs = r.as_made_s() - priced + traced if traced else r.as_made_s() + round_trips_s(app)
    return {p.strategy: measured_base - (as_runs - p.whole_s) for p in r.ranked if stays_on_gpu(p.strategy)}


def round_trips_s(app: Application) -> float:
    """What a loop that carries one dataset out and back (``round_trip``) would save at most copying it in once and
    out once, as the trace measured it: its steady iteration's copies both ways, times the iterations after the
    first, and the copies of the loop before it (its first pass, cut apart)."""
    loop = app.loop
    each = float(loop.per_iteration.get("h2d_s", 0.0) + loop.per_iteration.get("d2h_s", 0.0))
    lead = loop.lead
    before = 0.0 if lead is None else lead.iterations * float(lead.per_iteration.get("h2d_s", 0.0)
                                                              + lead.per_iteration.get("d2h_s", 0.0))
    return each * (loop.iterations - 1) + before
