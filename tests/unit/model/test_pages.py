"""The page simulation's kinds of page counted from ranges (a buffer of millions of pages) against the same kinds
counted from a mask per page."""

import itertools

import numpy as np
import pytest

from umprof.measure.ops.lifecycle import PAGE_BYTES
from umprof.model.pages import PageSimulation, page_kinds
from umprof.model.workload import Workload

KINDS = ("on-demand", "prefetch", "read-mostly", "link")


@pytest.mark.parametrize("n", [1, 2, 7, 64, 1000, 4097])
@pytest.mark.parametrize("touched", [1.0, 0.5, 0.3, 0.02, 1 / 3, 0.999])
def test_kinds_from_ranges_are_the_kinds_from_masks(n, touched):
    for n_write, read in itertools.product({0, 1, n // 3, n}, [(0, 0), (0, n // 2), (n - n // 4, n), (0, n)]):
        by_mask = page_kinds(n, n_write, read, touched, masked=True)
        by_range = page_kinds(n, n_write, read, touched, masked=False)
        for a, b in zip(by_mask, by_range):
            assert np.array_equal(a, b), (n, n_write, read, touched)
        assert by_range[3].sum() == n


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("split", [False, True])
def test_every_step_is_the_same_either_way(kind, split):
    for hw, hr, touched in [(0.5, 0.5, 1.0), (0.02, 0.5, 0.25), (0.5, 0.02, 0.3), (0.0, 1.0, 0.1)]:
        w = Workload(bytes=3001 * PAGE_BYTES, host_writes=hw, host_reads=hr, touched=touched, split=split,
                     iterations=5)
        by_mask = list(PageSimulation(w, kind, masked=True).iterations(4))
        assert by_mask == list(PageSimulation(w, kind, masked=False).iterations(4))


def test_a_terabyte_pass_is_simulated_without_a_mask_per_page():
    w = Workload(bytes=1_200 << 30, host_writes=0.1, host_reads=0.05, touched=1.0, split=True, iterations=3)
    sim = PageSimulation(w, "prefetch")
    assert len(sim.count) <= 8 and sim.count.sum() == sim.n
    first = sim.first()
    assert first.prefetch_in_bytes == pytest.approx(w.bytes)
