"""The public Python API: the README's example runs as written, on the committed H200 results."""

import re
import subprocess
import sys

import pytest

import umprof
from tests.unit.data import CAL, RESULTS, ROOT, WORKLOADS
from umprof.core.errors import UsageError


def readme_example() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- api-example[^>]*-->\n```python\n(.*?)```", text, re.S)
    assert m, "README.md lost its api-example block"
    return m.group(1)


def test_readme_example_runs_from_the_checkout():
    out = subprocess.run([sys.executable, "-c", readme_example()], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "NVIDIA H200" in out.stdout and "vs_best" in out.stdout and "SAME" in out.stdout


def test_load_gives_frame_meta_devices():
    rs = umprof.load(RESULTS / "nvidia-h200-default.parquet")
    assert {"scenario", "case", "phase", "time_median_s"} <= set(rs.frame.columns)
    assert rs.meta["umprof"] and rs.devices[0]["name"] == "NVIDIA H200"


def test_recommend_one_workload_or_several():
    rec = umprof.recommend({"bytes": "64MiB", "reuse": 4}, calibration=CAL)
    frame = rec.to_frame()
    assert list(frame["rank"]) == list(range(1, len(frame) + 1)) and frame["vs_best"].iloc[0] == 1.0
    assert rec.reason and rec.top.strategy == frame["strategy"].iloc[0]
    recs = umprof.recommend(WORKLOADS / "verify.toml", calibration=[CAL])
    assert isinstance(recs, list) and len(recs) >= 14


def test_earlier_runs_judge_from_paths_or_from_their_frame_alike():
    """verify, runs_agree and phase_drift read earlier runs from paths or from the one frame
    measured_frame made of them (what `recommend --measured` builds once for every figure)."""
    from tests.unit.data import CAL7, holdout

    recs = umprof.recommend(WORKLOADS / "holdout-17.toml", calibration=CAL7["h200"])
    runs = holdout("h200", 17, "-b")
    frame, where = umprof.api.measured_frame(runs)
    assert "holdout-17-b" in where and sorted(frame["run"].unique()) == [0, 1]
    assert umprof.api.measured_frame(frame)[0] is frame
    agree = umprof.api.runs_agree(recs, runs)
    assert agree == umprof.api.runs_agree(recs, frame) and agree["runs"] == 2 and agree["of"] == 28
    assert umprof.api.phase_drift(recs, runs) == umprof.api.phase_drift(recs, frame)
    assert umprof.api.runs_agree(recs[0], runs[0]) is None  # one run: nothing to agree with
    by_path, _ = umprof.api.verify(recs, measured=runs)
    by_frame, _ = umprof.api.verify(recs, measured=frame)
    assert [v["ok"] for v in by_path] == [v["ok"] for v in by_frame]


def test_recommend_names_a_bad_key_before_calibrating():
    with pytest.raises(UsageError, match="reuse"):
        umprof.recommend({"bytes": "64MiB", "reuse": 0})  # no calibration given: it would need a GPU


def test_select_takes_mappings_of_axes():
    (s,) = umprof.select("transfers", axes={"bytes": [1 << 20, 1 << 22], "strategy": "pinned"})
    assert {c.params["bytes"] for c in s.cases()} == {1 << 20, 1 << 22}
    with pytest.raises(UsageError, match="strategy"):
        umprof.select("transfers", axes={"strategy": "nonsense"})


def test_report_writes_html_and_refuses_a_wrong_suffix(tmp_path):
    out = umprof.report([RESULTS / "nvidia-h200-default.parquet"], tmp_path / "r.html")
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    with pytest.raises(UsageError, match=".html"):
        umprof.report([RESULTS / "nvidia-h200-default.parquet"], tmp_path / "r.pdf")
