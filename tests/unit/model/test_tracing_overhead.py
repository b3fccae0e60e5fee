"""The tracing's own overhead is taken out of the time now before any saving is priced: estimated from the trace's
fault records and calls, or measured against the program's untraced wall time (``wall_s``)."""

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
