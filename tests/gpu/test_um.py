"""Unified memory on the GPU: seed 004's page experiment, advice, partial access, CUPTI counters."""

import pytest

from tests.gpu.helpers import assert_faster, by, run_cases

MiB = 1024**2


@pytest.fixture(scope="module")
def pages(ctx_factory, session):
    if session.um is None:
        pytest.skip(f"UM counters unavailable: {session.um_note}")
    return run_cases(ctx_factory, "um-pages", page="64KiB,2MiB", bytes="64MiB")


def _row(rows, case_start, phase):
    got = [r for r in rows if r["case"].startswith(case_start) and r["phase"] == phase]
    assert len(got) == 1, (case_start, phase, [r["case"] for r in rows])
    return got[0]


def test_pages_all_ok_and_checked(pages):
    bad = [(r["case"], r["reason"]) for r in pages if r["status"] != "ok"]
    assert not bad


def test_stream_warp_fewer_fault_groups_and_faster_than_stream_thread(pages):
    thread = _row(pages, "access=stream_thread", "kernel")
    warp = _row(pages, "access=stream_warp page=64KiB", "kernel")
    assert thread["um_gpu_fault_groups"] > 0
    assert warp["um_gpu_fault_groups"] < thread["um_gpu_fault_groups"]
    assert_faster("um-pages 64MiB kernel: stream_warp 64KiB vs stream_thread", warp["time_median_s"], thread["time_median_s"])
    # on demand, the whole input migrates during the kernel (the output is born on the GPU)
    assert thread["um_htod_bytes"] >= 0.99 * 64 * MiB


def test_prefetch_no_gpu_faults_and_fastest(pages):
    pre_kernel = _row(pages, "access=prefetch", "kernel")
    assert pre_kernel["um_gpu_faults"] <= 16  # (almost) none: the pages are already there
    pre_h2d = _row(pages, "access=prefetch", "h2d")
    # the input migrates; the fresh output has no pages yet, so prefetching it populates them on the GPU
    assert 0.99 * 64 * MiB <= pre_h2d["um_htod_bytes"] <= 1.01 * 64 * MiB
    pre_read = _row(pages, "access=prefetch", "host_read")
    assert pre_read["um_cpu_faults"] == 0  # seed 004: prefetch back to the host and CPU faults vanish
    thread_read = _row(pages, "access=stream_thread", "host_read")
    assert thread_read["um_cpu_faults"] > 0 and thread_read["um_dtoh_bytes"] > 0
    # the host read after the kernel costs about the same whichever way the pages came back, and is
    # noisier than the difference: the GPU side carries it (prefetch in, then a kernel without faults)
    gpu_side = pre_h2d["time_median_s"] + pre_kernel["time_median_s"]
    warp = _row(pages, "access=stream_warp page=64KiB", "kernel")["time_median_s"]
    assert_faster("um-pages 64MiB: prefetch+kernel vs stream_warp kernel", gpu_side, warp)


def test_pages_timing_order_at_256mib(ctx_factory):
    rows = run_cases(ctx_factory, "um-pages", page="64KiB", bytes="256MiB")
    assert all(r["status"] == "ok" for r in rows), [(r["case"], r["reason"]) for r in rows if r["status"] != "ok"]
    k = {a: _row(rows, f"access={a}", "kernel")["time_median_s"] for a in ("stream_thread", "stream_warp", "prefetch")}
    gpu_side = _row(rows, "access=prefetch", "h2d")["time_median_s"] + k["prefetch"]
    assert_faster("um-pages 256MiB: prefetch+kernel vs stream_warp kernel", gpu_side, k["stream_warp"])
    # stream_warp against stream_thread is judged at 64 MiB (margins 1.37-2.35 on both GPUs); at 256 MiB
    # it ranged 0.97-1.83 over six runs on the H100 (2.17-1.51 on the H200): not a guarantee there


def test_advice_every_strategy_and_pattern(ctx_factory):
    rows = run_cases(ctx_factory, "um-advice", bytes="16MiB", rounds="2")
    bad = [(r["case"], r["reason"]) for r in rows if r["status"] != "ok"]
    assert not bad
    assert len(by(rows, phase="total")) == 24
    zc = _row(rows, "strategy=zero-copy pattern=gpu-read", "total")
    # zero-copy has no managed memory: its case is not counted (the counted sample is for managed cases)
    assert zc.get("um_samples") is None or zc["um_samples"] != zc["um_samples"]
    pp = _row(rows, "strategy=managed pattern=ping-pong", "total")
    assert pp["um_cpu_faults"] > 0 and pp["um_gpu_faults"] > 0  # both sides fault every round
    demand = _row(rows, "strategy=managed pattern=gpu-read", "kernel")
    prefetched = _row(rows, "strategy=managed-prefetch pattern=gpu-read", "kernel")
    assert_faster("um-advice 16MiB kernel: prefetched vs on demand", prefetched["time_median_s"], demand["time_median_s"])


def test_sparse_access_moves_only_what_is_read(ctx_factory):
    rows = run_cases(ctx_factory, "um-sparse", strategy="managed,pinned,zero-copy", fraction="0.01,1.0")
    bad = [(r["case"], r["reason"]) for r in rows if r["status"] != "ok"]
    assert not bad
    m1 = _row(rows, "strategy=managed fraction=0.01", "total")
    m100 = _row(rows, "strategy=managed fraction=1.0", "total")
    assert m1["um_htod_bytes"] < 0.2 * m100["um_htod_bytes"]
    p1 = _row(rows, "strategy=pinned fraction=0.01", "total")
    assert_faster("um-sparse 1%: managed vs pinned", m1["time_median_s"], p1["time_median_s"])  # on demand beats copying all
    zc1 = _row(rows, "strategy=zero-copy fraction=0.01", "total")
    assert_faster("um-sparse 1%: zero-copy vs pinned", zc1["time_median_s"], p1["time_median_s"])
    p100 = _row(rows, "strategy=pinned fraction=1.0", "total")
    assert_faster("um-sparse 100%: pinned vs managed", p100["time_median_s"], m100["time_median_s"])  # bulk copy beats faulting
