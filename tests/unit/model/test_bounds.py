"""Physical bounds on the advice, on every fixture trace: no predicted time below zero or below what the way's copies,
kernels and host work need, no saving above what the change removes, and the advice's saving the ranking's."""

import pytest

from tests.unit.model import traced

EPS = 1e-9


@pytest.mark.parametrize("stem", traced.stems())
def test_no_prediction_below_its_floor_and_no_saving_above_what_the_change_removes(stem):
    for adv in traced.advised(stem):
        loop = adv.loop_advice
        for r in adv.ranking:
            assert r["predicted_s"] >= 0 and r["predicted_s"] >= r["floor_s"] - EPS, (stem, r)
            assert r["saving_s"] <= max(0.0, r["removable_s"]) + EPS, (stem, r)
            # the floor holds at least the kernels' own time as traced; the removable time is no more than the run
            w = adv.workload
            assert r["floor_s"] >= min(w.kernel_s * w.iterations, loop.now_s) - EPS, (stem, r)
            assert r["removable_s"] <= loop.now_s + EPS, (stem, r)
        for a in adv.advice:
            assert a.predicted_s >= 0 and a.saving_s <= a.now_s + EPS, (stem, a)


@pytest.mark.parametrize("stem", traced.stems())
def test_the_advice_saves_what_its_way_s_ranking_row_says(stem):
    for adv in traced.advised(stem):
        loop = adv.loop_advice
        if loop is None or not adv.ranking or loop.saving_s == 0 or loop.idiom:  # an idiom is no way of the ranking
            continue
        (row,) = [r for r in adv.ranking if r["strategy"] == loop.strategy]
        assert loop.saving_s == pytest.approx(row["saving_s"]) and loop.predicted_s == pytest.approx(row["predicted_s"])


@pytest.mark.parametrize("trace", traced.torch_traces(), ids=traced.torch_stem)
def test_every_line_of_advice_on_a_pytorch_trace_is_bounded(trace):
    """On every PyTorch fixture trace (nsys and torch.profiler, this project's programs and others'), each line of
    advice, a way's, a PyTorch choice's or packing's: no negative time, no saving above the time it is said of, and
    its band around it."""
    for adv in traced.torch_advice(trace):
        for a in adv.advice:
            assert a.predicted_s >= -EPS and 0 <= a.saving_s <= a.now_s + EPS, (trace.name, a)
            if a.saving_s > 0:
                assert a.saving_low_s <= a.saving_s + EPS <= a.saving_high_s + 2 * EPS, (trace.name, a)
