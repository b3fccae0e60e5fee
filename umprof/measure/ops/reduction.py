"""``reduction``: seed 002's sum of n doubles, four ways, checked against numpy in float64.

* ``chunked``: each thread sums m consecutive elements (seed 002's "don't copy this");
* ``grid-stride``: each thread sums every T-th element; one partial per thread;
* ``block-tree``: grid-stride, then a tree in shared memory; one partial per block;
* ``two-kernel``: block-tree over 1024 blocks, then one block of 1024 threads finishes: the
  whole sum on the GPU.

Where partials come back (the first three), the sample times the kernel, the copy of the
partials and the host's sum of them, as seed 002 did; GB/s is the kernel's (8n bytes read).
The data are doubles of magnitude 0.5 .. 1 with random signs, so a missed or doubled element
moves the sum by at least 0.5, far beyond the 1e-12 relative tolerance of the check.
"""

from __future__ import annotations

import functools

import numpy as np

from umprof.core.axes import AxisSet, AxisSpec
from umprof.core.errors import CaseFailed, CaseSkipped
from umprof.measure import sectors
from umprof.measure.ops.base import Op, register
from umprof.measure.ops.patterns import DeviceRun, ceil_div, options, wave_grid

VARIANTS = ("chunked", "grid-stride", "block-tree", "two-kernel")
STAGE1_BLOCKS = 1024  # = the finishing block's threads (seed 002's tip)
SIG = {"chunked": "PPqi", "grid_stride": "PPq", "block_tree": "PPq", "finish_tree": "PPi"}
TOLERANCE = 1e-12  # of the sum of magnitudes


@functools.lru_cache(maxsize=1)
def reduction_data(n: int) -> tuple[np.ndarray, float, float]:
    """(values, numpy's float64 sum, sum of magnitudes) for n elements."""
    rng = np.random.default_rng(n)
    x = rng.uniform(0.5, 1.0, n) * rng.choice([-1.0, 1.0], n)
    return x, float(x.sum()), float(np.abs(x).sum())


def reduction_prediction(variant: str, m: int | None) -> dict:
    stride = m if variant == "chunked" else 1
    return sectors.columns(sectors.predict(sectors.strided(8, stride), 8), None)


class ReductionRun(DeviceRun):
    def __init__(self, ctx, case):
        super().__init__(ctx.session)
        p = case.params
        self.variant, self.n, self.block = p["variant"], p["n"], p["block"]
        self.m = p["m"]
        if self.variant in ("block-tree", "two-kernel") and (self.block & (self.block - 1)):
            raise CaseSkipped(f"{self.variant} needs a power-of-two block, got {self.block}")
        opts = options(ctx.scenario)
        sym = {"chunked": "chunked", "grid-stride": "grid_stride"}.get(self.variant, "block_tree")
        self.kernel = ctx.kernels.get(f"reduction.cu:{sym}", SIG[sym], opts)
        self.finish = ctx.kernels.get("reduction.cu:finish_tree", SIG["finish_tree"], opts)
        self.shared = 8 * self.block if sym == "block_tree" else 0
        if self.variant == "chunked":
            threads = ceil_div(self.n, self.m)
            self.grid = ceil_div(threads, self.block)
            self.partials = threads
            occ = ctx.kernels.occupancy(self.kernel, self.block)
        elif self.variant == "two-kernel":
            self.grid, self.partials = STAGE1_BLOCKS, STAGE1_BLOCKS
            occ = ctx.kernels.occupancy(self.kernel, self.block, self.shared)
        else:
            self.grid, occ = wave_grid(ctx, self.kernel, self.block, self.shared)
            self.partials = self.grid * self.block if self.variant == "grid-stride" else self.grid
        self.x, self.expected, self.magnitude = reduction_data(self.n)
        self.xb = self.mem.upload(self.x, "values")
        self.res = self.mem.zeros(8 * self.partials, "partials")
        self.total = self.mem.zeros(8, "sum")
        self.host_partials = np.empty(self.partials if self.variant != "two-kernel" else 1, np.float64)
        self.extra.update(registers=self.kernel.registers, grid=self.grid, block=self.block, partials=self.partials,
                          **occ, **reduction_prediction(self.variant, self.m), useful_ld_bytes=8 * self.n,
                          useful_st_bytes=0)
        self._got = None

    def reset(self):
        s = self.session
        s.cuda.memset_d32(self.res, 0, 2 * self.partials)
        s.cuda.memset_d32(self.total, 0, 2)

    def sample(self, timer):
        s = self.session
        with timer.phase("kernel", bytes=8 * self.n, ceiling="dram"):
            if self.variant == "chunked":
                self.kernel.launch(self.grid, self.block, self.res, self.xb, self.n, self.m, stream=s.stream)
            else:
                self.kernel.launch(self.grid, self.block, self.res, self.xb, self.n, stream=s.stream,
                                   shared=self.shared)
            if self.variant == "two-kernel":
                self.finish.launch(1, STAGE1_BLOCKS, self.total, self.res, self.partials, stream=s.stream,
                                   shared=8 * STAGE1_BLOCKS)
        src = self.total if self.variant == "two-kernel" else self.res
        with timer.phase("d2h", bytes=self.host_partials.nbytes, ceiling="pcie"):
            s.cuda.memcpy_dtoh_async(self.host_partials, src, s.stream)
        with timer.phase("host_sum", gpu=False):
            self._got = float(self.host_partials.sum())

    def verify(self):
        err = abs(self._got - self.expected)
        if not err <= TOLERANCE * self.magnitude:
            raise CaseFailed(f"{self.variant} sum of {self.n} doubles is {self._got!r}, numpy's float64 sum is "
                             f"{self.expected!r} (difference {err:.3g}, allowed {TOLERANCE * self.magnitude:.3g})")
        self.extra["abs_error"] = err


def _merge(params):
    if params["variant"] != "chunked":
        return {**params, "m": None}
    return params


register(Op(
    name="reduction",
    sample_rate=1e11, min_sample_s=1e-3,  # device kernels, repeated to ~1 ms
    about="sum of n doubles: per-thread chunks, grid-stride, shared-memory tree per block, all on the GPU in two kernels",
    axes=AxisSet([
        AxisSpec("variant", "choice", default=VARIANTS, choices=VARIANTS),
        AxisSpec("n", "int", default=(43435342,), minimum=1, maximum=2**40, about="elements (seed 002: 43435342)"),
        AxisSpec("m", "int", default=(128,), minimum=1, maximum=1 << 20, about="chunked: elements per thread"),
        AxisSpec("block", "int", default=(256,), minimum=32, maximum=1024, about="threads per block"),
    ]),
    phases=("kernel", "d2h", "host_sum"),
    run=ReductionRun,
    merge=_merge,
    kernels=lambda scenario: [(f"reduction.cu:{k}", sig, options(scenario)) for k, sig in SIG.items()],
))
