"""The loop op without a GPU: its closed-form expected values against a literal simulation of
the loop, its host regions, and its cases."""

import numpy as np
import pytest

from umprof.measure.ops.lifecycle import PAGE_WORDS, initial_pattern
from umprof.measure.ops.loop import MASK64, masks, reference, region_words, written_pages
from umprof.measure.scenario import resolve


def simulate(n, reuse, touched, pattern, stride, hw, gw, iterations):
    """The loop as the op runs it, pass by pass: (last result mod 2^64, final buffer)."""
    x = initial_pattern(n).copy()  # shared and read-only: this simulation writes it
    x0 = x.copy()
    _, sel, wr = masks(n, touched, pattern, stride, gw)
    h = region_words(n, hw)
    result = 0
    for it in range(iterations):
        x[:h] = x0[:h] + np.uint32(it + 1)
        result = 0
        for _ in range(reuse):
            result += int(x[sel].sum(dtype=np.uint64))
            x[wr] = x[wr] * np.uint32(3) + np.uint32(1)
    return result & MASK64, x


@pytest.mark.parametrize("reuse, touched, pattern, stride, hw, gw, iterations", [
    (1, 1.0, "streaming", 8, 0.0, 1.0, 1),
    (3, 1.0, "streaming", 8, 1.0, 1.0, 4),
    (2, 0.25, "random", 8, 0.01, 0.0, 5),        # read-only input, a 1% batch
    (4, 0.5, "strided", 32, 0.3, 0.5, 3),         # half the touched pages written
    (2, 1 / 3, "warp-pages", 8, 0.0, 0.25, 2),
])
def test_reference_matches_the_loop_simulated_pass_by_pass(reuse, touched, pattern, stride, hw, gw, iterations):
    n = 8 * PAGE_WORDS
    _, result, idx, spots = reference(n, reuse, touched, pattern, stride, hw, gw, iterations)
    want_result, want_final = simulate(n, reuse, touched, pattern, stride, hw, gw, iterations)
    assert result == want_result
    np.testing.assert_array_equal(spots, want_final[idx])


def test_host_regions_are_whole_lines_and_written_pages_lead_the_list():
    assert region_words(1000, 0.0) == 0
    assert region_words(1024, 0.01) == 16            # 10.24 words → one 64-byte line
    assert region_words(1024, 1.0) == 1024
    assert written_pages(10, 0.0) == 0 and written_pages(10, 0.25) == 3 and written_pages(10, 1.0) == 10


def test_read_only_kernel_leaves_the_buffer_and_reads_it_reuse_times():
    n = 4 * PAGE_WORDS
    _, result, idx, spots = reference(n, 3, 1.0, "streaming", 8, 0.0, 0.0, 2)
    x0 = initial_pattern(n)
    assert result == 3 * int(x0.sum(dtype=np.uint64)) & MASK64
    np.testing.assert_array_equal(spots, x0[idx])


def test_calibration_and_verification_scenarios_expand():
    (s,) = resolve(["calibration-loop-sizes"])
    cases = s.cases()
    assert cases and all(c.params["iterations"] >= 3 for c in cases)


def test_copies_in_parts_apply_to_the_strategies_that_make_an_application_s_copies():
    """The loop's ``copies`` splits the explicit copies of pageable, pinned, write-combined and registered
    memory; every other strategy (no copies, prefetches, or a plan that moves the buffer its own way) runs
    the same workload in one case without parts (the model prices them by the same flag)."""
    from umprof.measure import strategies
    from pathlib import Path

    from umprof.measure.scenario import scenario_from_data

    split = {"pageable", "pinned", "write-combined", "pageable-registered"}
    assert {s for s in strategies.EXPLICIT if strategies.get(s).copies_in_parts} == split
    assert not any(strategies.get(s).copies_in_parts for s in ("pageable-staged", "pinned-pipelined", "zero-copy",
                                                                "mapped", "managed", "managed-prefetch"))
    s = scenario_from_data({"scenario": {"name": "t", "op": "loop"},
                            "axes": {"strategy": ["pinned", "pageable-staged", "zero-copy"], "bytes": ["8MiB"],
                                     "copies": [1, 64]}}, Path("t.toml"))
    got = sorted((c.params["strategy"], c.params["copies"]) for c in s.cases())
    assert got == [("pageable-staged", 1), ("pinned", 1), ("pinned", 64), ("zero-copy", 1)]


@pytest.mark.parametrize("nbytes,touched,gw", [(8 * 1024**2, 1.0, 1.0), (8 * 1024**2, 0.3, 0.5),
                                               (3 * 1024**2 + 64 * 1024, 0.0625, 0.25), (64 * 1024, 1.0, 0.0)])
def test_pipelined_chunks_cover_the_buffer_and_its_pages_once(nbytes, touched, gw):
    """pinned-pipelined's chunks: consecutive word ranges over the whole buffer; each chunk's slice
    of the page list holds exactly the touched pages inside it; the written ones are the list's
    first, as a whole-buffer pass writes them."""
    from umprof.measure.ops.lifecycle import PAGE_BYTES, touched_pages
    from umprof.measure.ops.loop import chunk_plan
    from umprof.measure.strategies import get

    n = nbytes // 4
    pages = np.flatnonzero(touched_pages(nbytes // PAGE_BYTES, touched)).astype(np.uint32)
    wp = written_pages(len(pages), gw)
    chunk, count = get("pinned-pipelined").chunking(nbytes)
    plan = chunk_plan(pages, n, chunk, wp)
    assert len(plan) == count and chunk % PAGE_BYTES == 0
    assert plan[0][0] == 0 and plan[-1][1] == n and all(p[1] == q[0] for p, q in zip(plan, plan[1:]))
    assert plan[0][2] == 0 and plan[-1][3] == len(pages) and all(p[3] == q[2] for p, q in zip(plan, plan[1:]))
    for a, b, i0, i1, written in plan:
        inside = pages[i0:i1].astype(np.int64) * PAGE_WORDS
        assert ((inside >= a) & (inside < b)).all()
        assert written == len([i for i in range(i0, i1) if i < wp])
    assert sum(p[4] for p in plan) == wp


def test_pipelined_chunking_is_whole_pages_about_eight_chunks_of_1_to_16_mib():
    from umprof.measure.strategies import get

    st, MiB = get("pinned-pipelined"), 1024**2
    assert st.chunking(64 * 1024) == (64 * 1024, 1) and st.chunking(MiB) == (MiB, 1)
    assert st.chunking(16 * MiB) == (2 * MiB, 8) and st.chunking(256 * MiB) == (16 * MiB, 16)
    assert st.chunking(1024 * MiB) == (16 * MiB, 64) and st.chunking(3 * MiB + 64 * 1024) == (MiB, 4)
    assert st.describe_chunking(256 * MiB) == "16 chunks of 16MiB over 4 streams"
    assert "too small" in st.describe_chunking(64 * 1024)


def test_other_ops_refuse_the_pipelined_plan():
    from umprof.core.errors import CaseSkipped
    from umprof.measure.ops.base import CaseRun

    with pytest.raises(CaseSkipped, match="plan for the loop op"):
        CaseRun().use_strategy("pinned-pipelined", None)
    assert CaseRun().use_strategy("pinned-pipelined", None, pipelines=True).name == "pinned-pipelined"
    assert CaseRun().use_strategy("pinned", None).name == "pinned"
