"""Unified-memory logic that needs no GPU: counter attribution, touched pages, scenarios, the --um table."""

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from tests.unit.data import RESULTS
from umprof.cli import cli
from umprof.core.results import ResultSet
from umprof.measure.ops.lifecycle import initial_pattern
from umprof.measure.ops.um import fill_expected, page_sums, touched_pages
from umprof.measure.scenario import resolve
from umprof.measure.timing import PhaseTimer
from umprof.measure.um_counters import (
    COLUMNS,
    Record,
    attribute,
    summarize_records,
    under_profiler,
)


def test_summarize_records_like_nvprof():
    recs = [Record("htod", 10, 4096), Record("htod", 11, 65536), Record("htod", 12, 2 * 1024**2),
            Record("dtoh", 13, 4096), Record("gpu_fault", 14, 7), Record("gpu_fault", 15, 3),
            Record("cpu_fault", 16, 0x400000), Record("cpu_fault", 17, 0x400004), Record("thrashing", 18, 4096)]
    s = summarize_records(recs)
    assert set(s) == set(COLUMNS)
    assert s["um_htod_migrations"] == 3 and s["um_htod_bytes"] == 4096 + 65536 + 2 * 1024**2
    assert s["um_htod_min_bytes"] == 4096 and s["um_htod_max_bytes"] == 2 * 1024**2
    assert s["um_dtoh_migrations"] == 1
    assert s["um_gpu_fault_groups"] == 2 and s["um_gpu_faults"] == 10  # a group's value is its faults
    assert s["um_cpu_faults"] == 2  # one record per CPU fault, whatever its value
    assert s["um_thrashing"] == 1 and s["um_throttling"] == 0
    assert summarize_records([])["um_htod_bytes"] == 0


def test_attribute_by_phase_window():
    windows = [("h2d", 100, 200), ("kernel", 200, 300), ("d2h", 400, 500), ("kernel", 600, 700)]
    recs = [Record("htod", 150, 10), Record("gpu_fault", 250, 5), Record("htod", 260, 20),
            Record("dtoh", 450, 30), Record("gpu_fault", 650, 1),
            Record("htod", 50, 999), Record("dtoh", 550, 999)]  # outside every phase: a reset's
    got = attribute(recs, windows)
    assert got["h2d"]["um_htod_bytes"] == 10
    assert got["kernel"]["um_htod_bytes"] == 20 and got["kernel"]["um_gpu_fault_groups"] == 2  # both rounds
    assert got["d2h"]["um_dtoh_bytes"] == 30
    assert sum(g["um_htod_bytes"] + g["um_dtoh_bytes"] for g in got.values()) == 60


class _FakeUm:
    counting = True

    def __init__(self):
        self.t = 0
        self.pending = []

    def now(self):
        self.t += 10
        return self.t

    def drain(self):
        out, self.pending = self.pending, []
        return out


class _FakeSession:
    stream = None

    def __init__(self, um):
        self.um = um

    def event_pair_pool(self):
        return None  # host-only phases below never ask it for events


def test_phase_timer_attaches_counters_per_phase_and_total():
    um = _FakeUm()
    timer = PhaseTimer(_FakeSession(um))
    with timer.phase("host_init", gpu=False):
        um.pending.append(Record("cpu_fault", um.t + 1, 0))
    with timer.phase("host_read", gpu=False):
        um.pending.append(Record("dtoh", um.t + 1, 4096))
    um.pending.append(Record("htod", 10_000, 1))  # after every phase: counts nowhere
    s = timer.finish()
    assert s.extra["host_init"]["um_cpu_faults"] == 1
    assert s.extra["host_read"]["um_dtoh_bytes"] == 4096
    assert s.extra["total"]["um_dtoh_bytes"] == 4096 and s.extra["total"]["um_htod_bytes"] == 0
    um.counting = False  # between counted samples: no windows, nothing attributed
    quiet = PhaseTimer(_FakeSession(um))
    with quiet.phase("host_init", gpu=False):
        pass
    assert quiet.finish().extra == {} and quiet.sample.windows == []


def test_under_profiler(monkeypatch):
    for k in ("UMPROF_UNDER_NSYS", "NSYS_PROFILING_SESSION_ID", "CUDA_INJECTION64_PATH"):
        monkeypatch.delenv(k, raising=False)
    assert under_profiler() is None
    monkeypatch.setenv("CUDA_INJECTION64_PATH", "/opt/nvidia/nsight-compute/2025.3.1/target/linux-x64/libToolsInjection64.so")
    assert under_profiler() == "Nsight Compute"
    monkeypatch.setenv("CUDA_INJECTION64_PATH", "/opt/nvidia/nsight-systems/2025.3/target-linux-x64/libToolsInjection64.so")
    assert under_profiler() == "Nsight Systems"
    monkeypatch.delenv("CUDA_INJECTION64_PATH")
    monkeypatch.setenv("UMPROF_UNDER_NSYS", "1")
    assert under_profiler() == "Nsight Systems"


@pytest.mark.parametrize("f, pages, want", [(1.0, 10, 10), (0.5, 10, 5), (0.1, 100, 10), (0.01, 4096, 40), (0.0, 50, 0)])
def test_touched_pages_spread_evenly(f, pages, want):
    m = touched_pages(pages, f)
    assert m.sum() == want
    if 0 < want < pages:
        gaps = np.diff(np.flatnonzero(m))
        assert gaps.max() - gaps.min() <= 1  # even spacing


def test_page_sums_match_numpy():
    n, pw = 10_000, 1024  # a short last page
    sums = page_sums(n, pw)
    x = initial_pattern(n).astype(np.uint64)
    assert len(sums) == 10 and int(sums[-1]) == int(x[9 * pw:].sum())
    assert int(sums.sum()) == int(x.sum())


def test_fill_expected_matches_kernel_formula():
    v = fill_expected(8, seed=5)
    assert [int(a) for a in v[:3]] == [5, (2654435761 + 5) % 2**32, (2 * 2654435761 + 5) % 2**32]


def test_um_scenarios_expand():
    pages, advice, sparse = resolve(["um-pages", "um-advice", "um-sparse"])
    labels = [c.label for c in pages.cases()]
    assert len(labels) == 10 and sum(lb.endswith("64MiB") for lb in labels) == 5
    assert [lb for lb in labels if lb.endswith("256MiB")] == ["access=stream_thread bytes=256MiB", "access=stream_warp page=4KiB bytes=256MiB",
                      "access=stream_warp page=64KiB bytes=256MiB", "access=stream_warp page=2MiB bytes=256MiB",
                      "access=prefetch bytes=256MiB"]
    a = [c.label for c in advice.cases()]
    assert len(a) == 8 * 3 and "strategy=managed pattern=ping-pong rounds=4 bytes=64MiB" in a
    assert "strategy=managed pattern=gpu-read bytes=64MiB" in a
    assert len(sparse.cases()) == 5 * 4


def test_show_um_table(tmp_path):
    base = dict(scenario="um-pages", op="um_pages", status="ok", time_median_s=0.01)
    zero = {c: 0 for c in COLUMNS}
    counters = dict(zero, um_htod_bytes=2**28, um_htod_migrations=1000, um_htod_min_bytes=4096, um_htod_max_bytes=2**21,
                    um_gpu_fault_groups=900, um_gpu_faults=5000)
    rows = [dict(base, **counters, case="access=stream_thread bytes=256MiB", phase=p) for p in ("kernel", "total")]
    path = tmp_path / "um.parquet"
    ResultSet(pd.DataFrame(rows), {"um_counters": "on (CUPTI)"}, []).save(path)
    res = CliRunner().invoke(cli, ["show", str(path), "--um"])
    assert res.exit_code == 0, res.output
    assert "Host To Device" in res.output and "256MiB" in res.output and "900" in res.output
    plain = tmp_path / "plain.parquet"
    ResultSet(pd.DataFrame([dict(base, case="x", phase="total")]), {"um_counters": "off (--um-counters off)"}, []).save(plain)
    res = CliRunner().invoke(cli, ["show", str(plain), "--um"])
    assert res.exit_code == 0 and "no unified-memory counters" in res.output and "--um-counters off" in res.output


def test_plot_cli_on_committed_um_results(tmp_path):

    res = CliRunner().invoke(cli, ["plot", str(RESULTS / "nvidia-h200-um.parquet"),
                                   "-o", str(tmp_path)])
    assert res.exit_code == 0, res.output
    pngs = sorted(p.name for p in tmp_path.glob("*.png"))
    assert pngs == ["um-advice-um.png", "um-pages-um.png", "um-sparse-um.png"]
    assert all((tmp_path / p).stat().st_size > 10_000 for p in pngs)


def test_committed_um_results_show_the_seed_004_ordering():

    rs = ResultSet.load(str(RESULTS / "nvidia-h200-um.parquet"))
    f = rs.frame
    tot = f[(f["scenario"] == "um-pages") & (f["phase"] == "total")].set_index("case")
    assert tot.loc["access=stream_warp page=64KiB bytes=64MiB", "um_gpu_fault_groups"] < \
        tot.loc["access=stream_thread bytes=64MiB", "um_gpu_fault_groups"]
    assert tot.loc["access=prefetch bytes=64MiB", "um_gpu_fault_groups"] == 0
