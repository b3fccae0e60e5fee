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
