"""The program's own allocation and free, as its trace timed them, stand for the model's price of its current way's
(with the release of its malloc'd pages, which the trace does not see)."""

from __future__ import annotations

from umprof.measure import strategies
from umprof.model.advice.read import Reading
from umprof.model.advice.rules import Adjustment
from umprof.model.application import Application
from umprof.model.predict import Calibration, Prediction
from umprof.model.workload import Workload


def adjust(app: Application, cal: Calibration, r: Reading) -> Adjustment:
    """The current way's allocation and free as traced, in place of the prediction's."""
    traced = app.allocation_s + unseen_release_s(cal, r.base.strategy, r.workload)
    return Adjustment("allocation", seconds=traced, now_s=traced - priced_s(r.base))


def priced_s(p: Prediction) -> float:
    """The prediction's allocation and free of its one buffer."""
    return p.setup.get("alloc", 0.0) + p.setup.get("free", 0.0)


def unseen_release_s(cal: Calibration, strategy: str, w: Workload) -> float:
    """What the application's free() of its malloc'd buffer costs that its trace does not show: the pages
    given back to the kernel (0.04-0.06 s a GiB on the H100 and H200 measured), which umprof's loop times inside
    the free of every strategy whose buffer is the application's malloc'd memory (strategies.release_pages).
    The trace times CUDA's calls alone, so the measured allocation that stands for the current way's
    predicted allocation and free leaves it out: the calibration's free of malloc'd pages less its free of
    numpy's (whose pages the loop leaves alone) puts it back."""
    if w.host_pages != "malloc" or not strategies.get(strategy).malloc_backed:
        return 0.0
    free = lambda pages: cal.curve(strategy, "free", pages)(w.bytes)  # noqa: E731
    return max(0.0, free("malloc") - free("numpy"))
