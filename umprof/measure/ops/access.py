"""Global-memory access patterns in one dimension (seeds 000, 002, 004).

* ``coalescing``: read, write or copy element ``i*stride + offset`` of a device buffer for
  i = 0 .. n-1, with float, float2 or float4 elements, UNROLL accesses in flight per thread,
  a grid that fills the GPU once (``wave``) or covers the work in one pass (``cover``), and
  the L1 policy as a compile option. Effective bandwidth counts the bytes the algorithm must
  move (n elements read and/or written), not the sectors the hardware fetched; the sector
  model's prediction of the latter sits beside it.
* ``layout``: seed 004's array of structures vs structure of arrays, and its copy with
  plain loads, ``const __restrict__`` and ``__ldg``.

Every output is checked against numpy: sums exactly (small integers), buffers element by element.
"""

from __future__ import annotations

import numpy as np

from umprof.core.axes import AxisSet, AxisSpec
from umprof.core.errors import CaseSkipped
from umprof.measure import sectors
from umprof.measure.ops.base import Op, register
from umprof.measure.ops.checks import check_sum
from umprof.measure.ops.patterns import (
    CACHE_AXIS,
    DeviceRun,
    ceil_div,
    kernel_refs,
    options,
    small_ints,
    variant_ref,
    wave_grid,
)

WIDTHS = {"f32": 4, "f32x2": 8, "f32x4": 16}
UNROLLS = {"f32": (1, 4), "f32x2": (1, 4), "f32x4": (1, 2, 4, 8)}  # instantiated in coalescing.cu
SWEEP_SIG = "PPqiiP"


def _sweep_ref(access, width, unroll):
    return f"coalescing.cu:{access}_{width}_u{unroll}"


def accessed(n_buf: int, stride: int, offset: int) -> int:
    """How many elements ``i*stride + offset`` fit in an n_buf-element buffer."""
    return 0 if offset >= n_buf else (n_buf - offset - 1) // stride + 1


def coalescing_prediction(access: str, width: int, stride: int, offset: int) -> dict:
    """The sector model's columns for one coalescing case."""
    p = sectors.predict(sectors.strided(width, stride, offset), width)
    return sectors.columns(p if access in ("read", "copy") else None, p if access in ("write", "copy") else None)


class CoalescingRun(DeviceRun):
    verify_every_sample = False  # the output is compared in full once, after the last sample

    def __init__(self, ctx, case):
        super().__init__(ctx.session)
        p = case.params
        self.access, self.width_name = p["access"], p["width"]
        self.width = WIDTHS[self.width_name]
        self.stride, self.offset, self.block = p["stride"], p["offset"], p["block"]
        self.n_buf = p["bytes"] // self.width
        self.n = accessed(self.n_buf, self.stride, self.offset)
        if self.n < 1:
            raise CaseSkipped(f"offset {self.offset} leaves no element of a {p['bytes']}-byte buffer to access")
        if self.block % 32:
            raise CaseSkipped(f"coalescing kernels need whole warps: block={self.block} is not a multiple of 32")
        self.kernel = ctx.kernels.get(_sweep_ref(self.access, self.width_name, p["unroll"]), SWEEP_SIG,
                                      options(ctx.scenario, p["cache"]))
        if p["grid"] == "wave":
            self.grid, occ = wave_grid(ctx, self.kernel, self.block)
        else:
            self.grid, occ = ceil_div(self.n, self.block * p["unroll"]), ctx.kernels.occupancy(self.kernel, self.block)
        floats = self.n_buf * self.width // 4
        comps = self.width // 4
        # the accessed elements as a strided slice (a view: no index array of n entries)
        self.rows = slice(self.offset, self.offset + (self.n - 1) * self.stride + 1, self.stride)
        pattern = small_ints(floats)
        self.inb = self.mem.upload(pattern, "input") if self.access != "write" else None
        self.outb = self.mem.zeros(floats * 4, "output") if self.access != "read" else None
        self.partials = self.mem.zeros(8 * self.grid, "partial sums") if self.access == "read" else None
        if self.access == "read":
            self.expected_sum = float(pattern.reshape(-1, comps)[self.rows].sum(dtype=np.float64))
        self.bytes = self.n * self.width * (2 if self.access == "copy" else 1)  # what the algorithm moves
        self.extra.update(registers=self.kernel.registers, grid=self.grid, block=self.block,
                          elements=self.n, **occ, **coalescing_prediction(self.access, self.width, self.stride,
                                                                          self.offset))
        self.extra["useful_ld_bytes"] = self.n * self.width if self.access != "write" else 0
        self.extra["useful_st_bytes"] = self.n * self.width if self.access != "read" else 0

    def reset(self):
        if self.access == "read":  # a block that wrote nothing leaves a zero, and the sum is wrong
            self.session.cuda.memset_d32(self.partials, 0, 2 * self.grid)

    def sample(self, timer):
        with timer.phase("kernel", bytes=self.bytes, ceiling="dram"):
            self.kernel.launch(self.grid, self.block, self.inb or 0, self.outb or 0, self.n, self.stride,
                               self.offset, self.partials or 0, stream=self.session.stream)

    def verify(self):
        if self.access == "read":
            self.session.synchronize()
            partials = self.mem.download(self.partials, self.grid, np.float64)
            check_sum(f"read of {self.n} elements", float(partials.sum()), self.expected_sum)
            return
        comps = self.width // 4  # written elements hold the pattern, the others stay zero
        pattern = small_ints(self.n_buf * comps).reshape(-1, comps)
        expected = np.zeros_like(pattern)
        expected[self.rows] = pattern[self.rows]
        self.check_output(f"{self.access} output", self.outb, expected)


def _coalescing_merge(params):
    if params["unroll"] not in UNROLLS[params["width"]]:
        return None  # not instantiated in coalescing.cu
    return params


def _coalescing_kernels(scenario):
    refs = []
    for access in scenario.axes["access"]:
        for width in scenario.axes["width"]:
            for u in scenario.axes["unroll"]:
                if u in UNROLLS[width]:
                    refs.append((_sweep_ref(access, width, u), SWEEP_SIG))
    return kernel_refs(scenario, refs)


register(Op(
    name="coalescing",
    sample_rate=1e11, min_sample_s=1e-3,  # device kernels, repeated to ~1 ms
    about="read / write / copy element i*stride+offset: strides, offsets, element widths, unrolling, L1 policy",
    axes=AxisSet([
        AxisSpec("access", "choice", default=("read", "write", "copy"), choices=("read", "write", "copy")),
        AxisSpec("width", "choice", default=("f32",), choices=tuple(WIDTHS), about="element: float, float2, float4"),
        AxisSpec("stride", "int", default=(1,), minimum=1, maximum=4096, about="elements between neighbouring threads"),
        AxisSpec("offset", "int", default=(0,), minimum=0, maximum=4096, about="elements before the first one accessed"),
        AxisSpec("bytes", "size", default=(256 * 1024**2,), minimum=16, about="buffer size (each buffer)"),
        AxisSpec("unroll", "int", default=(4,), minimum=1, maximum=8, about="accesses in flight per thread (1, 2, 4, 8)"),
        AxisSpec("block", "int", default=(256,), minimum=32, maximum=1024, about="threads per block"),
        AxisSpec("grid", "choice", default=("wave",), choices=("wave", "cover"),
                 about="one full wave of blocks (grid-stride) or enough blocks to cover the work in one pass"),
        CACHE_AXIS,
    ]),
    phases=("kernel",),
    run=CoalescingRun,
    kernels=_coalescing_kernels,
    merge=_coalescing_merge,
))


# -- layout ------------------------------------------------------------------------------------

LAYOUTS = ("aos", "aos-aligned", "soa", "copy-plain", "copy-restrict", "copy-ldg")
LAYOUT_SIG = {"aos": "PPi", "aos-aligned": "PPi", "soa": "PPi", "copy-plain": "PPi", "copy-restrict": "PPi",
              "copy-ldg": "PPi"}


def layout_prediction(variant: str) -> dict:
    """Seed 004's analysis: unaligned {x, y} pairs load and store each field with its own 4-byte
    request, every other word of each sector (50%); aligned pairs and separate arrays use all."""
    i = sectors.lanes()
    if variant == "aos":
        a = np.concatenate([8 * i, 8 * i + 4])  # one request for x, one for y
        p = sectors.predict(a, 4)
    elif variant == "aos-aligned":
        p = sectors.predict(8 * i, 8)
    else:
        p = sectors.predict(4 * i, 4)
    return sectors.columns(p, p)


class LayoutRun(DeviceRun):
    verify_every_sample = False

    def __init__(self, ctx, case):
        super().__init__(ctx.session)
        p = case.params
        self.variant, self.block = p["variant"], p["block"]
        self.kernel = ctx.kernels.get(variant_ref("layout.cu", self.variant), LAYOUT_SIG[self.variant],
                                      options(ctx.scenario, p["cache"]))
        nbytes = p["bytes"]
        if self.variant.startswith("copy"):
            self.n = nbytes // 4
            self.data = small_ints(self.n).view(np.int32)  # any bits will do for a copy
            self.expected = self.data
        else:
            self.n = nbytes // 8  # pairs
            floats = small_ints(2 * self.n)
            if self.variant == "soa":  # x[0..n) then y[0..n)
                self.data = floats
                self.expected = np.concatenate([floats[:self.n] + 10, floats[self.n:] + 20])
            else:  # x0 y0 x1 y1 ..
                self.data = floats
                pairs = floats.reshape(-1, 2)
                self.expected = (pairs + np.array([10, 20], np.float32)).ravel()
        if self.n < 1:
            raise CaseSkipped(f"bytes={nbytes} holds no element")
        self.inb = self.mem.upload(self.data, "input")
        self.outb = self.mem.zeros(self.data.nbytes, "output")
        self.grid = ceil_div(self.n, self.block)
        self.bytes = 2 * self.data.nbytes
        occ = ctx.kernels.occupancy(self.kernel, self.block)
        self.extra.update(registers=self.kernel.registers, grid=self.grid, block=self.block, **occ,
                          **layout_prediction(self.variant), useful_ld_bytes=self.data.nbytes,
                          useful_st_bytes=self.data.nbytes)

    def sample(self, timer):
        args = (self.outb, self.inb) if self.variant.startswith("copy") else (self.inb, self.outb)
        with timer.phase("kernel", bytes=self.bytes, ceiling="dram"):
            self.kernel.launch(self.grid, self.block, *args, self.n, stream=self.session.stream)

    def verify(self):
        self.check_output(f"{self.variant} output", self.outb, self.expected)


register(Op(
    name="layout",
    sample_rate=1e11, min_sample_s=1e-3,  # device kernels, repeated to ~1 ms
    about="array of structures vs structure of arrays; plain vs const __restrict__ vs __ldg loads; L1 policy",
    axes=AxisSet([
        AxisSpec("variant", "choice", default=LAYOUTS, choices=LAYOUTS),
        AxisSpec("bytes", "size", default=(256 * 1024**2,), minimum=8, about="input size"),
        AxisSpec("block", "int", default=(256,), minimum=32, maximum=1024, about="threads per block"),
        CACHE_AXIS,
    ]),
    phases=("kernel",),
    run=LayoutRun,
    kernels=lambda scenario: kernel_refs(scenario, [(variant_ref("layout.cu", v), LAYOUT_SIG[v])
                                                    for v in scenario.axes["variant"]]),
))
