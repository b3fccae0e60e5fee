"""Comparing two runs against their noise."""

import math

import pandas as pd
import pytest

from umprof.core.errors import UsageError
from umprof.core.results import ResultSet


def test_classify_against_noise():
    from umprof.model.compare import classify

    assert classify(1.02, 0.01, 0.01)[0] == "SAME"  # under the 3% floor
    assert classify(1.10, 0.01, 0.01)[0] == "SLOW"
    assert classify(0.90, 0.01, 0.01)[0] == "FAST"
    assert classify(1.10, 0.05, 0.05)[0] == "SAME"  # noisy runs: ±14% band
    assert classify(1.10, math.nan, math.nan)[0] == "SLOW"


def _rs(times, device="GPU X", noise=0.01):
    rows = [{"scenario": "s", "op": "o", "case": c, "phase": "total", "status": "ok", "time_median_s": t,
             "noise_rel": noise} for c, t in times.items()]
    return ResultSet(pd.DataFrame(rows), {}, [{"name": device}])


def test_compare_matches_classifies_and_lists_one_sided_cases():
    from umprof.model.compare import compare

    c = compare(_rs({"a": 1.0, "b": 1.0, "c": 1.0, "only-a": 1.0}), _rs({"a": 1.01, "b": 0.5, "c": 2.0, "only-b": 1.0}))
    assert dict(zip(c.matched["case"], c.matched["verdict"])) == {"a": "SAME", "b": "FAST", "c": "SLOW"}
    assert c.only_a == [("s", "only-a")] and c.only_b == [("s", "only-b")]
    with pytest.raises(UsageError, match="no case of A matches"):
        compare(_rs({"x": 1.0}), _rs({"y": 1.0}))
    with pytest.raises(UsageError, match="--across-devices"):
        compare(_rs({"a": 1.0}), _rs({"a": 1.0}, device="GPU Y"))
    assert len(compare(_rs({"a": 1.0}), _rs({"a": 1.0}, device="GPU Y"), across_devices=True).matched) == 1
