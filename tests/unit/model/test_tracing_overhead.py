"""The tracing's own overhead is taken out of the time now before any saving is priced: estimated from the trace's
fault records and calls, or measured against the program's untraced wall time (``wall_s``)."""

import pandas as pd
import pytest

from tests.unit.model import traced
from umprof.model.advice import thresholds


@pytest.mark.parametrize("name, gpu", [("managed_loop", "h100"), ("particles", "h200")])
def test_a_trace_with_fault_records_says_its_estimated_overhead_and_prices_against_the_rest(name, gpu):
    (adv,) = traced.advice(name, gpu)
    d = adv.to_dict()["time_now"]
    assert d["overhead_from"] == "estimate" and d["tracing_overhead_s"] > 0.05 * d["traced_s"]
    assert adv.app.host_faults.seconds > 0  # host fault records: the tracer slowed each fault
    (limit,) = [x for x in adv.limits if x.code == "tracing-overhead-estimated"]
    assert "host page faults" in limit and "--wall" in limit
    loop = adv.loop_advice
    assert loop.now_s == pytest.approx(d["traced_s"] - d["tracing_overhead_s"])
    assert "traced" in adv.verdict and "untraced" in adv.verdict
    for r in adv.ranking:  # no saving above what the change removes, the tracing's own time left out
        assert r["saving_s"] <= r["removable_s"] + 1e-9 and r["predicted_s"] >= 0


def test_the_untraced_wall_time_measures_the_overhead_and_a_saving_it_explains_is_not_advised():
    """managed_loop (H100): its trace's 1.36 s loop, against an untraced run of 0.5 s (as a program whose fault tracing
    doubled its time): the overhead is measured, and no change is advised whose saving that time would hold."""
    (adv,) = traced.advice("managed_loop")
    again = traced.advise_again(adv, wall_s=0.5)
    d = again.to_dict()["time_now"]
    assert d["overhead_from"] == "wall" and d["untraced_wall_s"] == 0.5
    assert any(x.code == "tracing-overhead" for x in again.limits)
    loop = again.loop_advice
    assert loop.now_s < 0.5 + 1e-9
    assert loop.saving_s == 0 or loop.saving_s > thresholds.SAVING_ERROR * loop.now_s
    assert all(r["saving_s"] <= r["removable_s"] + 1e-9 for r in again.ranking)
    assert loop.saving_s < adv.loop_advice.saving_s


def test_the_python_api_takes_the_untraced_wall_time():
    from umprof import api

    (adv,) = api.advise(traced.path("managed_loop"), wall_s=0.71)
    assert adv.overhead_from == "wall" and adv.loop_advice.now_s <= 0.71 + 1e-9


def test_a_torch_profiler_trace_counts_the_operators_it_recorded_in_the_loop():
    """A program reading a result back each step, traced by torch.profiler on an H200: its loop's recorded operators,
    each priced TRACED_OP_S on top of its CUDA calls; none in another process, outside the loop, or in NVTX ranges
    other than torch's operators'."""
    from umprof.model.advice.rules import tracing

    from umprof.nsight.trace_db import open_trace

    (adv,) = traced.torch_advice(traced.TORCH / "h200-readback.json.gz")
    tables = open_trace(traced.TORCH / "h200-readback.json.gz")
    ops = tracing.recorded_ops(adv.app, tables.ranges)
    assert ops > 100
    assert ops <= int(tables.ranges["kind"].isin(("cpu_op", "user_annotation")).sum())
    assert "operators recorded" in tracing._estimate_s(adv.app, ops)[2]
    assert tracing.recorded_ops(adv.app, None) == 0
    lo, hi = adv.app.loop.span
    mine, other = adv.app.pid, adv.app.pid + 1
    made = pd.DataFrame({"start": [lo, lo, lo, lo, hi + 1], "end": [hi, hi, hi, hi, hi + 2],
                         "pid": [mine, mine, mine, other, mine], "tid": 1, "name": "x",
                         "kind": ["cpu_op", "user_annotation", "gpu_user_annotation", "cpu_op", "cpu_op"]})
    assert tracing.recorded_ops(adv.app, made) == 2  # its process's operators and annotations in its loop only
    assert tracing.recorded_ops(adv.app, made.drop(columns="kind")) == 0  # NVTX ranges of the program's own
    nvtx = made.drop(columns="kind").assign(name=["aten::add, seq = 3", "step", "aten::mm", "aten::mm", "aten::mm"])
    # torch's operators as nsys's NVTX ranges: its process's, in its loop
    assert tracing.recorded_ops(adv.app, nvtx) == 2


def test_an_estimated_overhead_is_never_more_than_the_loops_gpu_idle_time():
    from types import SimpleNamespace

    from umprof.model.advice.rules import tracing

    loop = SimpleNamespace(first={"busy_s": 0.5}, per_iteration={"busy_s": 0.1}, iterations=10)
    app = SimpleNamespace(loop=loop)
    assert tracing._gpu_idle_s(app, 2.0) == pytest.approx(2.0 - 0.5 - 0.9)
    assert tracing._gpu_idle_s(app, 1.0) == 0.0  # a loop its GPU kept busy throughout: no tracer time to take out
    assert tracing._gpu_idle_s(SimpleNamespace(loop=None), 3.0) == 3.0
