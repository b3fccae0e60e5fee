"""The workload lifecycle on the GPU (every pattern, touched fraction, ping-pong; outputs
checked exactly), the orderings physics guarantees, and `recommend --verify` end to end."""

import subprocess
import sys

import pytest

from tests.gpu.helpers import assert_faster, by, run_cases

STRATEGIES = "pageable,pinned,write-combined,zero-copy,mapped,managed,managed-prefetch,managed-advise-prefer-gpu"


@pytest.mark.parametrize("pattern", ["streaming", "strided", "random", "warp-pages"])
def test_every_pattern_touched_and_pingpong_checked_under_every_strategy(ctx_factory, pattern):
    rows = run_cases(ctx_factory, "calibration-sizes", strategy=STRATEGIES, bytes="4MiB", reuse="2",
                     touched="0.25", pattern=pattern, iterations="3", pingpong="yes")
    totals = by(rows, phase="total")
    assert len(totals) == len(STRATEGIES.split(","))
    bad = [(r["case"], r["reason"]) for r in totals if r["status"] != "ok"]
    assert not bad
    # a ping-pong of 3 iterations: one host turn phase per case (two turns, summed), copies for explicit strategies
    pinned = by(rows, **{"axis.strategy": "pinned"})
    assert {r["phase"] for r in pinned} >= {"h2d", "kernel", "d2h", "host_turn", "host_read"}
    assert all(r["samples"] >= 3 for r in pinned)  # repeated phases count once per sample


def test_whole_buffer_and_touch_pass_agree_on_streaming(ctx_factory):
    """touched=1.0 runs the whole-buffer kernel; 0.999.. of the pages runs touch_pass: both checked."""
    rows = run_cases(ctx_factory, "calibration-sizes", strategy="pinned", bytes="16MiB", reuse="1",
                     touched="1.0,0.99")
    assert all(r["status"] == "ok" for r in by(rows, phase="total"))


def test_zero_copy_passes_cross_pcie_and_pinned_ones_do_not(ctx_factory):
    rows = run_cases(ctx_factory, "crossover-reuse", strategy="pinned,zero-copy", reuse="16", bytes="256MiB")
    k = {r["axis.strategy"]: r["time_median_s"] for r in by(rows, phase="kernel")}
    assert_faster("reuse 16: pinned vs zero-copy kernel", k["pinned"], k["zero-copy"], 5)  # PCIe against device memory


def test_on_demand_managed_moves_only_what_is_touched(ctx_factory):
    rows = run_cases(ctx_factory, "crossover-touched", strategy="managed", touched="0.00390625,1.0")
    k = {r["axis.touched"]: r for r in by(rows, phase="kernel")}
    assert_faster("managed kernel: 1/256 vs all pages touched", k[0.00390625]["time_median_s"], k[1.0]["time_median_s"], 10)
    if k[1.0].get("um_htod_bytes") == k[1.0].get("um_htod_bytes"):  # counted (CUPTI present)
        assert k[0.00390625]["um_htod_bytes"] < 0.05 * k[1.0]["um_htod_bytes"]


def test_recommend_verify_end_to_end(session, tmp_path):
    """A small calibration, then recommend --verify: ranks, measures the top three, prints the verdict.
    (``session`` skips without a GPU; the commands run as their own processes, with their own contexts.)"""
    def umprof(*args):
        return subprocess.run([sys.executable, "-m", "umprof", *args], capture_output=True, text=True, timeout=600)

    cal = tmp_path / "cal.parquet"
    r = umprof("run", "calibration-loop-sizes", "calibration-loop-resident", "-a", "strategy=pinned,zero-copy,managed",
               "-a", "bytes=1MiB,16MiB,64MiB", "-o", str(cal), "-q", "--min-samples", "3", "--timeout", "0.3")
    assert r.returncode == 0, r.stdout + r.stderr
    out = tmp_path / "verify.parquet"
    r = umprof("recommend", "--from", str(cal), "--bytes", "64MiB", "--reuse", "16", "--iterations", "5", "--verify",
               "-o", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "predicted vs measured by wall clock (whole run)" in r.stdout and "verified:" in r.stdout
    assert out.is_file()
    # reused 16 times, zero-copy crosses PCIe 16 times per iteration: it cannot be the pick
    assert "zero-copy is predicted fastest" not in r.stdout
    r = umprof("recommend", "--from", str(cal), "--bytes", "64MiB", "--reuse", "16", "--steady", "--measured", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "(steady iteration)" in r.stdout and "verified:" in r.stdout
