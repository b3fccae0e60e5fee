"""`umprof calibrate` on the GPU: a calibration cut short by Ctrl-C keeps its cases and a second call
resumes it; a quick one is completed by the shipped calibration of its GPU model and predicts."""

import pytest

from umprof import api
from umprof.core import calibrations as store
from umprof.measure import calibration as profiles
from umprof.measure.gpu import identify
from umprof.model.workload import Workload


@pytest.fixture
def tiny(monkeypatch, session):
    """The quick profile cut to a few cases (the whole one takes about a minute)."""
    small = profiles.Profile("quick", "tiny", scenarios=("calibration-loop-sizes", "calibration-loop-setup"),
                             axes={"calibration-loop-sizes": {"bytes": "16MiB", "strategy": "pinned,pageable,managed"},
                                   "calibration-loop-setup": {"bytes": "64KiB,16MiB", "strategy": "pinned,pageable"}},
                             timing={"timeout": 0.05}, needs_base=True)
    monkeypatch.setitem(profiles.PROFILES, "quick", small)
    return small


def test_an_interrupted_calibration_keeps_its_cases_and_resumes(tiny, monkeypatch, tmp_path):
    from umprof.measure import runner

    out = tmp_path / "quick.parquet"
    real, calls = runner.measure_case, {"n": 0}

    def interrupted(*a, **k):
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(runner, "measure_case", interrupted)
    if not any(c.matches(identify(0)["name"]) for c in store.shipped()):
        pytest.skip("no shipped calibration of this GPU to complete a quick one")
    with pytest.raises(KeyboardInterrupt):
        api.calibrate(out, quick=True)
    kept = store.describe(out)
    assert not kept.complete and kept.profile == "quick"
    assert len(api.load(out).frame.query("phase == 'total'")) == 3  # the cases measured before Ctrl-C
    monkeypatch.setattr(runner, "measure_case", real)
    cf = api.calibrate(out, quick=True)
    assert cf.complete and cf.cases == 7 and cf.base and cf.profile == "quick"
    again = api.calibrate(out, quick=True)  # complete: returned as it is, not measured again
    assert again.measured == cf.measured
    cal = api.load_calibration(out)  # completed by the shipped calibration of its GPU model
    rec = api.recommend(Workload(bytes=64 * 2**20, iterations=10, host_writes=1.0), cal)
    assert rec.ranked and rec.top.whole_s > 0
