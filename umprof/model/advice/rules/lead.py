"""A loop of copies before the loop (``Loop.lead``: a dataset loaded chunk by chunk) is read as a workload of its
own, and its time under each way joins the loop's."""

from __future__ import annotations

from dataclasses import replace

from umprof.model.advice.read import Reading, reading
from umprof.model.advice.rules import Adjustment
from umprof.model.application import Application
from umprof.model.predict import Calibration


def lead_reading(app: Application, cal: Calibration) -> Reading | None:
    """The loop of copies before the application's loop read as a workload of its own; None where there is none,
    or the calibration cannot price its current way."""
    if app.loop is None or app.loop.lead is None:
        return None
    r = reading(replace(app, loop=app.loop.lead), cal, one_pass=False)
    return r if r.workload is not None and r.current is not None else None


def adjust(app: Application, cal: Calibration, r: Reading) -> tuple[Adjustment, set | None, str]:
    """The loop before the loop's time under each way (its current way's with its host accesses as made), the ways
    it can price (None: all), and how it was read, a clause of the mapping; none where the run is read as one pass."""
    lead = None if r.one_pass else lead_reading(app, cal)
    if lead is None:
        return Adjustment("lead"), None, ""
    lead_s = {p.strategy: lead.as_made_s() if p is lead.base else p.whole_s for p in lead.ranked}
    current = r.base.strategy
    words = (f"; before the loop, a loop of {app.loop.lead.iterations} iterations read on its own as "
             f"{lead.workload.describe()} ({lead.how}), its time under each way added to the loop's")
    adj = Adjustment("lead", seconds=lead_s.get(current, 0.0), now_s=lead_s.get(current, 0.0),
                     ways={s: t for s, t in lead_s.items() if s != current})
    return adj, set(lead_s), words
