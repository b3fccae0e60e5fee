"""``lifecycle``: a buffer's whole life under one host-memory strategy.

alloc → host_init → h2d → kernel × reuse → d2h → host_read → free, each phase timed and
NVTX-ranged. h2d/d2h are explicit copies for pageable / pinned / write-combined,
cuMemPrefetchAsync for managed-prefetch, and absent where kernels reach the data in place
(zero-copy, mapped, managed on demand, system). The kernel reads and writes every element
``reuse`` times; the host's read-back is checked against the exact expected values.
"""

from __future__ import annotations

import functools

import numpy as np

from umprof import strategies
from umprof.axes import AxisSet, AxisSpec
from umprof.errors import CaseSkipped
from umprof.ops import CaseRun, Op, register
from umprof.ops.checks import check_readback, spot_indices

BLOCK = 256


def lifecycle_expected(x0: np.ndarray, reuse: int) -> np.ndarray:
    """x → 3x + 1 (mod 2**32) applied ``reuse`` times, in closed form: A·x + B."""
    a = pow(3, reuse, 2**32)
    b = (pow(3, reuse, 2**33) - 1) // 2 % 2**32  # (3^r - 1) / 2 mod 2^32
    return x0 * np.uint32(a) + np.uint32(b)


def initial_pattern(n: int) -> np.ndarray:
    """Distinct, non-zero-ish uint32 values (a Knuth multiplicative hash of the index)."""
    return (np.arange(n, dtype=np.uint32) * np.uint32(2654435761)) + np.uint32(12345)


@functools.lru_cache(maxsize=4)
def _reference(n: int, reuse: int):
    """(initial values, expected checksum, spot indices, expected spot values), shared by
    every strategy's case of the same size and reuse: computed once, outside timing."""
    x0 = initial_pattern(n)
    expected = lifecycle_expected(x0, reuse)
    idx = spot_indices(n)
    return x0, int(expected.sum(dtype=np.uint64)), idx, expected[idx]


def grid_for(n_elems: int, sms: int) -> int:
    """Blocks for the grid-stride kernel: enough to fill the GPU, no more than the work."""
    return max(1, min((n_elems // 4 + BLOCK - 1) // BLOCK, sms * 16))


class LifecycleRun(CaseRun):
    def __init__(self, ctx, case):
        super().__init__()
        p = case.params
        self.session = ctx.session
        self.strategy = strategies.get(p["strategy"])
        why = self.strategy.unsupported(ctx.info)
        if why:
            raise CaseSkipped(why)
        self.nbytes, self.reuse = p["bytes"], p["reuse"]
        if self.nbytes % 4:
            raise CaseSkipped("lifecycle needs a multiple of 4 bytes (uint32 elements)")
        self.n = self.nbytes // 4
        self.kernel = ctx.kernels.get(ctx.scenario.kernel, OP.kernel_signature, tuple(ctx.scenario.compile_options))
        self.grid = grid_for(self.n, ctx.info.sms)
        self.x0, self.expected_sum, self.spot_idx, self.spot_expected = _reference(self.n, self.reuse)
        self.extra.update(registers=self.kernel.registers, grid=self.grid, block=BLOCK)
        self._got = None

    def sample(self, timer):
        s, st, n = self.session, self.strategy, self.nbytes
        # an in-place pass over the link reads host→GPU and writes GPU→host: both directions at once
        kernel_ceiling = strategies.kernel_ceiling(st, in_place=True)
        with timer.phase("alloc", gpu=False):
            buf = st.allocate(s, n)
        try:
            view = buf.view(np.uint32)
            with timer.phase("host_init", gpu=False):
                view[:] = self.x0
            if st.moves_data:
                with timer.phase("h2d", bytes=n, ceiling="pcie"):
                    st.to_device(s, buf)
            with timer.phase("kernel", bytes=2 * n * self.reuse, ceiling=kernel_ceiling):
                for _ in range(self.reuse):
                    self.kernel.launch(self.grid, BLOCK, buf.device_ptr, self.n, stream=s.stream)
            if st.moves_data:
                with timer.phase("d2h", bytes=n, ceiling="pcie"):
                    st.to_host(s, buf)
            with timer.phase("host_read", gpu=False):
                total = int(view.sum(dtype=np.uint64))
                spots = view[self.spot_idx]
            self._got = (total, spots)
        finally:
            with timer.phase("free", gpu=False):
                st.free(s, buf)

    def verify(self):
        total, spots = self._got
        check_readback("kernel output", total, spots, self.spot_idx, self.spot_expected, self.expected_sum)


OP = register(Op(
    name="lifecycle",
    about="alloc → host init → to device → kernel × reuse → to host → host read → free, per strategy",
    axes=AxisSet([
        AxisSpec("strategy", "choice", default=("pageable", "pinned", "zero-copy", "managed", "managed-prefetch"),
                 choices=tuple(strategies.STRATEGIES)),
        AxisSpec("bytes", "size", default=(64 * 1024**2,), minimum=4),
        AxisSpec("reuse", "int", default=(1,), minimum=1, maximum=1024, about="kernel passes per transfer"),
    ]),
    default_kernel="lifecycle.cu:scale_inplace",
    kernel_signature="PQ",
    phases=("alloc", "host_init", "h2d", "kernel", "d2h", "host_read", "free"),
    counts_um=True,
    run=LifecycleRun,
))
