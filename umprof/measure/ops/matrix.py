"""Two-dimensional access patterns (seeds 000, 001, 004).

* ``traversal``: seed 000's sum of a square float matrix, by rows or by columns, reading
  float or float4, with the threads per block and the number of blocks as axes (seed 000's
  two sweeps). Each sample also times an empty kernel with the same launch configuration,
  the overhead seed 000 subtracts (``net_bytes_per_s``); registers per thread and the
  theoretical occupancy (the driver's occupancy calculator) sit beside the bandwidth.
* ``matrix_add``: seed 001's C = A + B on int matrices: 2D grid of 2D blocks indexed
  row-major or column-major, a 1D grid of 1D blocks, a 2D grid of 1D blocks; timed as seed
  001 reports it, H2D / kernel / D2H.
* ``transpose``: seed 004's naive transposes (read rows / write columns and the reverse),
  the diagonal block mapping, and shared-memory tiles with and without padding.

Every output is checked: sums exactly against numpy, matrices element by element.
"""

from __future__ import annotations

import functools

import numpy as np

from umprof.core.axes import AxisSet, AxisSpec
from umprof.core.errors import CaseSkipped
from umprof.measure import sectors, strategies
from umprof.measure.ops.base import CaseRun, Op, register
from umprof.measure.ops.checks import check_equal, check_sum, read_f64
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

# -- traversal ---------------------------------------------------------------------------------

TRAVERSAL_WIDTHS = {"f32": 4, "f32x4": 16}


def traversal_prediction(order: str, width: int, side: int, threads: int) -> dict:
    """Sector model of the first iterations of one block: by rows, a warp reads ``32`` neighbouring
    elements of a row (misaligned when ``threads`` is not a multiple of the sector's elements);
    by columns, 32 elements a whole row apart."""
    cols = side * 4 // width  # elements per row
    tx, _ = sectors.block_warps(threads)
    reqs = []
    for k in range(4):  # the first trips of the loop: where a block size that is not a multiple of 32 shows
        step = tx + k * threads
        if order == "rows":
            idx = np.where((tx >= 0) & (step < cols), step, -1)  # row 0, column `step`
        else:
            idx = np.where((tx >= 0) & (step < side), step * cols, -1)  # column 0, row `step`
        reqs.append(sectors.to_bytes(idx, width))
    p = sectors.predict(np.concatenate(reqs), width)
    return sectors.columns(p, None)


@functools.lru_cache(maxsize=2)
def _matrix_sum(floats: int) -> float:
    return float(small_ints(floats).sum(dtype=np.float64))


class TraversalRun(DeviceRun):
    def __init__(self, ctx, case):
        super().__init__(ctx.session)
        p = case.params
        self.order, self.width_name, self.side = p["order"], p["width"], p["n"]
        width = TRAVERSAL_WIDTHS[self.width_name]
        if (self.side * 4) % width:
            raise CaseSkipped(f"n={self.side}: a float4 row needs a multiple of 4 floats")
        self.rows, self.cols = self.side, self.side * 4 // width
        self.threads = p["threads"]
        opts = options(ctx.scenario)
        self.kernel = ctx.kernels.get(f"traversal.cu:sum_{self.order}_{self.width_name}", "PiiP", opts)
        self.empty = ctx.kernels.get("launch.cu:empty", "Pi", opts)
        if p["blocks"] == 0:
            self.blocks, occ = wave_grid(ctx, self.kernel, self.threads)
        else:
            self.blocks, occ = p["blocks"], ctx.kernels.occupancy(self.kernel, self.threads)
        floats = self.side * self.side
        self.inb = self.mem.upload(small_ints(floats), "matrix")
        self.sum = self.mem.zeros(8, "sum")
        self.expected = _matrix_sum(floats)
        self.bytes = floats * 4
        resident = ctx.info.sms * occ["blocks_per_sm"]
        self.extra.update(registers=self.kernel.registers, grid=self.blocks, block=self.threads, **occ,
                          waves=self.blocks / resident if resident else float("nan"),
                          **traversal_prediction(self.order, width, self.side, self.threads),
                          useful_ld_bytes=self.bytes, useful_st_bytes=0)

    def reset(self):
        self.session.cuda.memset_d32(self.sum, 0, 2)

    def sample(self, timer):
        s = self.session
        with timer.phase("empty"):
            self.empty.launch(self.blocks, self.threads, self.sum, 0, stream=s.stream)
        with timer.phase("kernel", bytes=self.bytes, ceiling="dram"):
            self.kernel.launch(self.blocks, self.threads, self.inb, self.rows, self.cols, self.sum, stream=s.stream)

    def verify(self):
        self.session.synchronize()
        check_sum(f"sum by {self.order}", read_f64(self.session, self.sum), self.expected)

    def finish_rows(self, rows):
        """Seed 000's figure: bandwidth with the empty kernel's time taken off."""
        by = {r["phase"]: r for r in rows}
        k, e = by.get("kernel"), by.get("empty")
        if k is None or e is None:
            return
        net = k["time_median_s"] - e["time_median_s"]
        for r in rows:
            r["launch_overhead_s"] = e["time_median_s"]
        k["net_bytes_per_s"] = k["bytes"] / net if net > 0 else float("nan")


def _traversal_kernels(scenario):
    sums = [(f"traversal.cu:sum_{o}_{w}", "PiiP", options(scenario))
            for o in scenario.axes["order"] for w in scenario.axes["width"]]
    return sums + [("launch.cu:empty", "Pi", options(scenario))]


register(Op(
    name="traversal",
    sample_rate=1e11, min_sample_s=1e-3,  # device kernels, repeated to ~1 ms
    about="sum of a square matrix by rows or by columns, float or float4, over threads per block and blocks",
    axes=AxisSet([
        AxisSpec("order", "choice", default=("rows", "cols"), choices=("rows", "cols")),
        AxisSpec("width", "choice", default=("f32", "f32x4"), choices=tuple(TRAVERSAL_WIDTHS)),
        AxisSpec("n", "int", default=(12288,), minimum=4, maximum=65536, about="matrix side in floats"),
        AxisSpec("threads", "int", default=(256,), minimum=1, maximum=1024, about="threads per block"),
        AxisSpec("blocks", "int", default=(0,), minimum=0, maximum=2**31 - 1,
                 about="blocks in the grid (0: one full wave at the theoretical occupancy)"),
    ]),
    phases=("empty", "kernel"),
    run=TraversalRun,
    kernels=_traversal_kernels,
))


def _shape(grid, block) -> dict:
    """Blocks and threads per block as totals (the columns every op writes) and as shapes."""
    return {"grid": grid[0] * grid[1], "block": block[0] * block[1], "grid_shape": f"{grid[0]}x{grid[1]}",
            "block_shape": f"{block[0]}x{block[1]}"}


# -- matrix_add --------------------------------------------------------------------------------

ORGANISATIONS = ("2d-2d", "1d-1d", "2d-1d")
ADD_KERNELS = {("2d-2d", "row"): "add_2d_row", ("2d-2d", "col"): "add_2d_col", ("1d-1d", None): "add_1d",
               ("2d-1d", None): "add_2d_grid_1d_block"}


def matrix_add_prediction(org: str, order: str | None, bx: int, by: int | None, side: int) -> dict:
    """Seed 001's gld/gst efficiency from the warps of a few blocks."""
    if org == "1d-1d":
        p = sectors.predict(sectors.strided(4), 4)
    else:
        x, y = sectors.grid_2d(bx, by or 1, [(0, 0), (1, 0), (0, 1), (2, 3)])
        p = sectors.predict(sectors.to_bytes(sectors.matrix_index(x, y, side, order or "row"), 4), 4)
    return sectors.columns(p, p)


@functools.lru_cache(maxsize=1)
def _add_inputs(n: int):
    i = np.arange(n, dtype=np.uint32)
    a = ((i * np.uint32(2654435761)) >> np.uint32(16)).astype(np.int32)
    b = ((i * np.uint32(40503)) & np.uint32(0xFFFF)).astype(np.int32)
    return a, b, a + b


class MatrixAddRun(CaseRun):
    verify_every_sample = False

    def __init__(self, ctx, case):
        super().__init__()
        p = case.params
        s = self.session = ctx.session
        self.st = strategies.get(p["strategy"])
        self.side, org, order = p["n"], p["organisation"], p["order"]
        bx, by = p["block_x"], p["block_y"]
        self.kernel = ctx.kernels.get(f"traversal.cu:{ADD_KERNELS[(org, order)]}", "PPPii", options(ctx.scenario))
        n = self.side * self.side
        if org == "2d-2d":
            self.grid, self.block = (ceil_div(self.side, bx), ceil_div(self.side, by)), (bx, by, 1)
        elif org == "1d-1d":
            self.grid, self.block = (ceil_div(n, bx), 1), (bx, 1, 1)
        else:
            self.grid, self.block = (ceil_div(self.side, bx), self.side), (bx, 1, 1)
        if self.grid[1] > 65535:
            raise CaseSkipped(f"grid.y = {self.grid[1]} exceeds CUDA's 65535")
        self.nbytes = 4 * n
        s.check_host_alloc(3 * self.nbytes, "host matrices")
        s.check_device_alloc(3 * self.nbytes, "device matrices")
        self.a_host, self.b_host, self.c_expected = _add_inputs(n)
        self.bufs = [self.st.allocate(s, self.nbytes) for _ in range(3)]
        self.bufs[0].view(np.int32)[:] = self.a_host
        self.bufs[1].view(np.int32)[:] = self.b_host
        occ = ctx.kernels.occupancy(self.kernel, self.block[0] * self.block[1])
        self.extra.update(registers=self.kernel.registers, **_shape(self.grid, self.block), **occ,
                          **matrix_add_prediction(org, order, bx, by, self.side),
                          useful_ld_bytes=2 * self.nbytes, useful_st_bytes=self.nbytes)

    def reset(self):
        c = self.bufs[2]
        self.session.cuda.memset_d32(c.device_ptr, 0, self.nbytes // 4)  # a sample that writes nothing fails
        self.session.synchronize()

    def sample(self, timer):
        s, st = self.session, self.st
        a, b, c = self.bufs
        with timer.phase("h2d", bytes=2 * self.nbytes, ceiling="pcie"):
            st.to_device(s, a)
            st.to_device(s, b)
        with timer.phase("kernel", bytes=3 * self.nbytes, ceiling="dram"):
            self.kernel.launch(self.grid, self.block, a.device_ptr, b.device_ptr, c.device_ptr, self.side, self.side,
                               stream=s.stream)
        with timer.phase("d2h", bytes=self.nbytes, ceiling="pcie"):
            st.to_host(s, c)

    def verify(self):
        check_equal("C = A + B", self.bufs[2].view(np.int32), self.c_expected)

    def close(self):
        for b in self.bufs:
            self.st.free(self.session, b)


def _add_merge(params):
    if params["organisation"] != "2d-2d":
        return {**params, "order": None, "block_y": None}
    if params["block_x"] * params["block_y"] > 1024:
        return None  # not a valid block
    return params


register(Op(
    name="matrix_add",
    sample_rate=1e11, min_sample_s=1e-3,  # device kernels, repeated to ~1 ms
    about="C = A + B on int matrices: 2D/2D row- or column-major, 1D/1D, 2D grid of 1D blocks; H2D, kernel, D2H",
    axes=AxisSet([
        AxisSpec("organisation", "choice", default=ORGANISATIONS, choices=ORGANISATIONS,
                 about="grid/block dimensions"),
        AxisSpec("order", "choice", default=("row", "col"), choices=("row", "col"),
                 about="2d-2d indexing: row-major y*cols+x or column-major x*cols+y"),
        AxisSpec("block_x", "int", default=(32,), minimum=1, maximum=1024),
        AxisSpec("block_y", "int", default=(32,), minimum=1, maximum=1024),
        AxisSpec("n", "int", default=(16384,), minimum=1, maximum=65535, about="matrix side"),
        AxisSpec("strategy", "choice", default=("pinned",), choices=strategies.EXPLICIT, about="host memory"),
    ]),
    phases=("h2d", "kernel", "d2h"),
    run=MatrixAddRun,
    merge=_add_merge,
    kernels=lambda scenario: [(f"traversal.cu:{k}", "PPPii", options(scenario)) for k in sorted(set(ADD_KERNELS.values()))],
))


# -- transpose ---------------------------------------------------------------------------------

TRANSPOSES = ("naive-rowcol", "naive-colrow", "diag-rowcol", "diag-colrow", "smem", "smem-pad")
TILE, TILE_ROWS = 32, 8


def transpose_prediction(variant: str, bx: int | None, by: int | None, side: int) -> dict:
    """Loads and stores of a few blocks: the naive kernels read one matrix along rows and write
    the other along columns (or the reverse); the tiled ones do both along rows."""
    if variant.startswith("smem"):
        x, y = sectors.grid_2d(TILE, TILE_ROWS, [(0, 0), (1, 2)])
        p = sectors.predict(sectors.to_bytes(sectors.matrix_index(x, y, side, "row"), 4), 4)
        return sectors.columns(p, p)
    x, y = sectors.grid_2d(bx, by, [(0, 0), (1, 0), (0, 1), (2, 3)])
    rows = sectors.predict(sectors.to_bytes(sectors.matrix_index(x, y, side, "row"), 4), 4)
    cols = sectors.predict(sectors.to_bytes(sectors.matrix_index(x, y, side, "col"), 4), 4)
    return sectors.columns(rows, cols) if variant.endswith("rowcol") else sectors.columns(cols, rows)


class TransposeRun(DeviceRun):
    verify_every_sample = False

    def __init__(self, ctx, case):
        super().__init__(ctx.session)
        p = case.params
        self.variant, self.side = p["variant"], p["n"]
        self.kernel = ctx.kernels.get(variant_ref("transpose.cu", self.variant), "PPii",
                                      options(ctx.scenario, p["cache"]))
        if self.variant.startswith("smem"):
            self.grid, self.block = (ceil_div(self.side, TILE), ceil_div(self.side, TILE)), (TILE, TILE_ROWS, 1)
        else:
            bx, by = p["block_x"], p["block_y"]
            self.grid, self.block = (ceil_div(self.side, bx), ceil_div(self.side, by)), (bx, by, 1)
        if self.grid[1] > 65535:
            raise CaseSkipped(f"grid.y = {self.grid[1]} exceeds CUDA's 65535")
        n = self.side * self.side
        self.data = small_ints(n).reshape(self.side, self.side) + np.arange(self.side, dtype=np.float32)[:, None]
        self.inb = self.mem.upload(self.data, "input")
        self.outb = self.mem.zeros(self.data.nbytes, "output")
        self.bytes = 2 * self.data.nbytes
        occ = ctx.kernels.occupancy(self.kernel, self.block[0] * self.block[1])
        self.extra.update(registers=self.kernel.registers, **_shape(self.grid, self.block), **occ,
                          **transpose_prediction(self.variant, p["block_x"], p["block_y"], self.side),
                          useful_ld_bytes=self.data.nbytes, useful_st_bytes=self.data.nbytes)

    def sample(self, timer):
        with timer.phase("kernel", bytes=self.bytes, ceiling="dram"):
            self.kernel.launch(self.grid, self.block, self.outb, self.inb, self.side, self.side,
                               stream=self.session.stream)

    def verify(self):
        self.check_output(f"{self.variant} transpose", self.outb, np.ascontiguousarray(self.data.T))


def _transpose_merge(params):
    if params["variant"].startswith("smem"):  # fixed 32x8 blocks over 32x32 tiles
        return {**params, "block_x": None, "block_y": None}
    if params["block_x"] * params["block_y"] > 1024:
        return None
    if params["variant"].startswith("diag") and params["block_x"] != params["block_y"]:
        return None  # seed 004's diagonal mapping assumes a square grid of blocks
    return params


register(Op(
    name="transpose",
    sample_rate=1e11, min_sample_s=1e-3,  # device kernels, repeated to ~1 ms
    about="matrix transpose: naive both ways, diagonal block order, shared-memory tiles with and without padding",
    axes=AxisSet([
        AxisSpec("variant", "choice", default=TRANSPOSES, choices=TRANSPOSES),
        AxisSpec("n", "int", default=(8192,), minimum=1, maximum=65535, about="matrix side"),
        AxisSpec("block_x", "int", default=(16,), minimum=1, maximum=1024, about="naive and diagonal kernels"),
        AxisSpec("block_y", "int", default=(16,), minimum=1, maximum=1024, about="naive and diagonal kernels"),
        CACHE_AXIS,
    ]),
    phases=("kernel",),
    run=TransposeRun,
    merge=_transpose_merge,
    kernels=lambda scenario: kernel_refs(scenario, [(variant_ref("transpose.cu", v), "PPii")
                                                    for v in scenario.axes["variant"]]),
))
