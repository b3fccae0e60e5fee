"""Crossovers found in sweeps (synthetic and the committed H200 ones)."""


import pandas as pd
import pytest

from tests.unit.data import CROSS, MiB
from umprof.core.results import ResultSet


def _sweep(times_a, times_b, xs=(1, 2, 4, 8)):
    rows = []
    for s, ts in (("pinned", times_a), ("zero-copy", times_b)):
        for x, t in zip(xs, ts):
            rows.append({"scenario": "sw", "op": "lifecycle", "case": f"{s} {x}", "phase": "total", "status": "ok",
                         "axis.strategy": s, "axis.reuse": x, "axis.bytes": MiB, "time_median_s": t, "noise_rel": 0.01})
    return pd.DataFrame(rows)


def test_crossing_interpolated_in_log_space():
    from umprof.model.crossover import find

    # zero-copy doubles per doubling of reuse, pinned stays: equal at reuse 2 exactly
    c = find(_sweep([2.0, 2.0, 2.0, 2.0], [1.0, 2.0 * 1.0001, 4.0, 8.0]))
    assert len(c) == 1
    r = c.iloc[0]
    assert r["crossing"] == pytest.approx(2.0, rel=0.01)
    assert r["faster_below"] == "zero-copy" and r["faster_above"] == "pinned" and not r["within_noise"]
    assert find(_sweep([1, 1, 1, 1], [2, 2, 2, 2])).empty


def test_measured_crossovers_on_the_h200():
    from umprof.model.crossover import find

    c = find(ResultSet.load(CROSS).frame, ("pinned", "zero-copy"))
    by_axis = {r["axis"]: r for _, r in c.iterrows() if not r["within_noise"]}
    reuse = by_axis["reuse"]
    assert 1 < reuse["crossing"] < 8 and reuse["faster_below"] == "zero-copy" and reuse["faster_above"] == "pinned"
    assert by_axis["touched"]["faster_below"] == "zero-copy"
