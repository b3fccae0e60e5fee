"""Several host threads run their iterations at once, where the model prices their work one after another: each
way's difference from the current one in its iterations is scaled by the overlap the loop measured (not where the
run is read as one pass, whose one iteration is no iteration of the loop)."""

from __future__ import annotations

from umprof.core.units import format_time
from umprof.model.advice.read import Reading
from umprof.model.advice.result import Limit
from umprof.model.advice.rules import Adjustment
from umprof.model.application import Application
from umprof.model.predict import Prediction


def adjust(app: Application, r: Reading, threads: int) -> tuple[Adjustment, float]:
    """Each way's difference from the current one in its steady iterations scaled by the threads' overlap, and the
    overlap (1: one thread, or a run read as one pass)."""
    overlap = 1.0 if r.one_pass else threads_overlap(app, r.base, threads)
    base = r.base
    ways = {p.strategy: -(1.0 - overlap) * p.iterations * (p.steady_s - base.steady_s)
            for p in r.ranked if p is not base}
    return Adjustment("threads", seconds=overlap, ways=ways), overlap


def iterations_overlap(app: Application, threads: int) -> bool:
    """Whether the loop's measured iterations can say how much its host threads overlap: several threads copy, and
    the loop has steady iterations."""
    return threads > 1 and app.loop is not None and app.loop.iterations > 1 and app.loop.steady_s > 0


def threads_overlap(app: Application, base: Prediction, threads: int) -> float:
    """How much of the model's iteration the loop's host threads, running at once, take: its measured steady
    iteration over the model's of the way it runs now, at most 1 and at least one thread's share (``1 / threads``);
    1 for one thread. The model prices every thread's copies and host work one after another: a loop of two
    host threads measured 15-22 ms an iteration where it said 30-32 ms, and the savings of pinning came out 0.13-0.21 s
    where their difference said 0.29-0.31 s (H100 and H200); scaled, 0.15-0.22 s."""
    if not iterations_overlap(app, threads) or base.steady_s <= 0:
        return 1.0
    return min(1.0, max(1.0 / threads, app.loop.steady_s / base.steady_s))


def threads_limit(app: Application, base: Prediction, threads: int, overlap: float, saving: float) -> list[Limit]:
    """What several host threads making the copies do to the saving: scaled by their ``overlap`` where the loop
    measured one, else (no steady iterations, or a model that prices the loop under its measurement) that the
    prediction prices them one after another."""
    if overlap < 1.0:
        return [Limit("threads-overlap", f"its copies are made by {threads} host threads at once: its loop measured "
                f"{format_time(app.loop.steady_s)} an iteration, where the calibration, pricing their work one after "
                f"another, says {format_time(base.steady_s)} as it runs now; every way's difference in the iterations "
                f"is scaled by that overlap ({overlap:.2f})")]
    if threads > 1 and saving > 0:
        text = (f"its copies are made by {threads} host threads at once, which hide some of one another's copies "
                "and host work; the prediction prices them one after another, so the saving may be smaller")
        return [Limit("threads-unscaled", text)]
    return []
