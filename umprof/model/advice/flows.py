"""A line for each flow of copies whose memory or granularity costs time the calibration can price: pageable copies
made from page-locked memory, many small copies batched."""

from __future__ import annotations

import math

from umprof.core.units import format_rate, format_size
from umprof.model.advice import thresholds as th
from umprof.model.advice.changes import FLOW_PINNED
from umprof.model.advice.result import Advice, band
from umprof.model.application import Application, flow_size
from umprof.model.predict import Calibration


def flow_advice(app: Application, cal: Calibration, framework: str) -> list[Advice]:
    """Per flow (the FLOWS_ADVISED largest): pageable copies made from pinned memory; many small copies batched."""
    out = []
    its = app.loop.iterations if app.loop is not None else 1
    for _, f in app.flows.head(th.FLOWS_ADVISED).iterrows():
        label = f"{f['direction']} {f['host_kind']} {flow_size(f)} stream {f['stream']}" \
            + (f" in '{f['range']}'" if f["range"] else "")
        out += _pinned(f, label, cal, framework) + _batched(f, label, cal, its)
    return out


def _pinned(f, label: str, cal: Calibration, framework: str) -> list[Advice]:
    """A flow of pageable copies made from page-locked memory, where that saves more than the prediction's error."""
    if f["host_kind"] != "pageable":
        return []
    pinned = f["count"] * cal.curve("pinned", f["direction"])(float(f["bytes"]))
    if f["time_s"] - pinned <= th.SAVING_ERROR * f["time_s"]:
        return []
    how = FLOW_PINNED.get(framework, FLOW_PINNED["cuda"])
    low, high = band(f["time_s"] - pinned, f["time_s"], f["time_s"])
    return [Advice(label, "pinned", how, f["time_s"], pinned, f["time_s"] - pinned, saving_low_s=low,
                   saving_high_s=high, note=f"{f['count']} copies at {format_rate(f['bytes_per_s'])} now; pinned: "
                                            f"{format_rate(f['total_bytes'] / pinned if pinned else math.nan)}")]


def _batched(f, label: str, cal: Calibration, its: int) -> list[Advice]:
    """A flow of many small copies an iteration batched into one, where that saves more than the prediction's error."""
    per_iteration = f["count"] / its
    if f["bytes"] > th.SMALL_COPY or per_iteration < th.MANY_COPIES:
        return []
    memory = "pinned" if f["host_kind"] != "pageable" else "pageable"
    batched = its * cal.curve(memory, f["direction"])(float(f["bytes"]) * per_iteration)
    if f["time_s"] - batched <= th.SAVING_ERROR * f["time_s"]:
        return []
    low, high = band(f["time_s"] - batched, f["time_s"], f["time_s"])
    return [Advice(label, memory, f"batch its {per_iteration:.0f} copies of {format_size(int(f['bytes']))} per "
                   f"iteration into one of {format_size(int(f['bytes'] * per_iteration))} (a contiguous staging "
                   "buffer)", f["time_s"], batched, f["time_s"] - batched, saving_low_s=low, saving_high_s=high,
                   note="each copy pays a latency that one copy of all of them pays once")]
