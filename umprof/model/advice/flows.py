"""A line for each flow of copies whose memory costs time the calibration can price: pageable copies made from
page-locked memory (many small copies made one: ``packing``)."""

from __future__ import annotations

import math

from umprof.core.units import format_rate
from umprof.model.advice import thresholds as th
from umprof.model.advice.changes import flow_pinned
from umprof.model.advice.result import Advice, band
from umprof.model.application import Application, flow_size
from umprof.model.predict import Calibration


def flow_advice(app: Application, cal: Calibration, framework: str, priced: float) -> list[Advice]:
    """Per flow (the FLOWS_ADVISED largest): pageable copies made from pinned memory, where that saves at least NOISE
    of the time the ways price (``priced``, ``result.priced_s``): a flow that saves less is not worth a change of its
    own."""
    out = []
    for _, f in app.flows.head(th.FLOWS_ADVISED).iterrows():
        label = f"{f['direction']} {f['host_kind']} {flow_size(f)} stream {f['stream']}" \
            + (f" in '{f['range']}'" if f["range"] else "")
        out += [a for a in _pinned(f, label, cal, framework) if a.saving_s >= th.NOISE * priced]
    return out


def _pinned(f, label: str, cal: Calibration, framework: str) -> list[Advice]:
    """A flow of pageable copies made from page-locked memory, where that saves more than the prediction's error."""
    if f["host_kind"] != "pageable":
        return []
    pinned = f["count"] * cal.curve("pinned", f["direction"])(float(f["bytes"]))
    if f["time_s"] - pinned <= th.SAVING_ERROR * f["time_s"]:
        return []
    how = flow_pinned(framework)
    low, high = band(f["time_s"] - pinned, f["time_s"], f["time_s"])
    return [Advice(label, "pinned", how, f["time_s"], pinned, f["time_s"] - pinned, saving_low_s=low,
                   saving_high_s=high, note=f"{f['count']} copies at {format_rate(f['bytes_per_s'])} now; pinned: "
                                            f"{format_rate(f['total_bytes'] / pinned if pinned else math.nan)}")]
