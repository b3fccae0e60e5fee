"""Do no harm: a change is advised only where its predicted saving exceeds the prediction's own error on a saving, the
figure measured on the judged programs (benchmarks/apps/prediction_error.py) as a share of the time the ways price,
and every saving carries its band."""

import contextlib
import io

import pytest

from tests.unit.data import load_script
from tests.unit.model import traced
from umprof.model.advice import thresholds


def test_the_error_constant_is_the_figure_the_script_measures():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        load_script("benchmarks/apps/prediction_error.py").main(
            traced.ROOT / "results" / "advise" / "tie-policy.json.xz")
    assert f"SAVING_ERROR = {thresholds.SAVING_ERROR:.3f}" in out.getvalue()


@pytest.mark.parametrize("stem", traced.stems())
def test_a_change_is_advised_only_beyond_the_error_and_with_its_band(stem):
    for adv in traced.advised(stem):
        loop = adv.loop_advice
        if loop is None or not adv.ranking:
            continue
        err = thresholds.SAVING_ERROR * adv.priced_s  # a share of the time the ways price (result.priced_s)
        if loop.strategy != adv.app.strategy and not loop.idiom:  # an idiom's band is its own (test_packing)
            assert loop.saving_s > err and loop.saving_low_s == pytest.approx(loop.saving_s - err), (stem, loop)
            assert loop.saving_s <= loop.saving_high_s <= loop.saving_s + err + 1e-12, (stem, loop)
            assert not any(x.code == "cannot-see-program" for x in adv.limits), stem
        for r in adv.ranking:
            if r["saving_s"]:
                assert r["saving_low_s"] == pytest.approx(r["saving_s"] - err), (stem, r)


def test_a_tie_closer_than_a_percent_is_said_so_never_within_0_percent():
    from umprof.model import ties

    assert ties.describe(["pinned", "pageable-registered"], 0.002) == "pinned or pageable-registered: less than 1% apart, predicted"
    assert ties.describe(["pinned", "mapped"], 0.03) == "pinned or mapped: within 3%, predicted"


def test_a_tie_said_of_each_other_keeps_less_than_a_percent_apart():
    from umprof.model import ties

    assert ties.within(0.03, " of each other") == "within 3% of each other"
    assert ties.within(0.002, " of each other") == "less than 1% apart"
