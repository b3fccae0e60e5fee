"""Unified memory in depth: seed 004's per-warp pages, advice on real access patterns, and
partial access.

* ``um_pages``: seed 004's copy kernel on managed memory, one thread per element
  (``stream_thread``), one warp per page (``stream_warp``, the page size an axis), or
  ``stream_thread`` after prefetching to the GPU (and back to the host before the host reads).
  Every sample starts with the input on the host and a fresh, never-touched output, so every
  sample pays the migration, as the seed's single run did.
* ``um_advice``: a strategy (managed with each advice, prefetch, and pinned / zero-copy for
  reference) on the access pattern where advice matters: the GPU only reads, the GPU only
  writes, or host and GPU take turns (``ping-pong``) for some rounds.
* ``um_sparse``: a kernel that reads a fraction of the pages (spread evenly), for managed,
  zero-copy and explicit copies: where on-demand migration or zero-copy wins because most of
  the data is never touched.

Every kernel's output is checked exactly (copies bit for bit, sums against numpy in 64 bits).
"""

from __future__ import annotations

import functools

import numpy as np

from umprof.core.axes import AxisSet, AxisSpec
from umprof.core.errors import CaseFailed, CaseSkipped
from umprof.measure import strategies
from umprof.measure.ops.base import CaseRun, Op, register
from umprof.measure.ops.checks import check_readback, read_u64, spot_indices
from umprof.measure.ops.lifecycle import (
    initial_pattern,
    lifecycle_expected,
    touched_pages,
)
from umprof.measure.ops.patterns import ceil_div

BLOCK = 256
KERNELS = "um.cu"
# pycuda prepared-call signatures of um.cu's kernels
SIG = {"stream_thread": "PPQ", "stream_warp": "PPQI", "sum_pages": "PQIdP", "fill_words": "PQI"}


@functools.lru_cache(maxsize=4)
def page_sums(n_words: int, page_words: int) -> np.ndarray:
    """Sum of each page's 32-bit words of :func:`initial_pattern` (uint64), computed once."""
    starts = np.arange(0, n_words, page_words)
    return np.add.reduceat(initial_pattern(n_words), starts, dtype=np.uint64)


def _require_managed(ctx, strategy_name="managed"):
    why = strategies.get(strategy_name).unsupported(ctx.info)
    if why:
        raise CaseSkipped(why)


def _words(nbytes: int, what: str) -> int:
    if nbytes % 16:
        raise CaseSkipped(f"{what} needs a multiple of 16 bytes, got {nbytes}")
    return nbytes // 4


# -- um_pages -------------------------------------------------------------------------------

class PagesRun(CaseRun):
    def __init__(self, ctx, case):
        super().__init__()
        p = case.params
        s = self.session = ctx.session
        self.access, self.nbytes = p["access"], p["bytes"]
        _require_managed(ctx, "managed-prefetch" if self.access == "prefetch" else "managed")
        self.n = _words(self.nbytes, "um_pages")
        s.check_managed_alloc(2 * self.nbytes)
        opts = tuple(ctx.scenario.compile_options)
        if self.access == "stream_warp":
            page = p["page"]
            if page % 128 or page < 128:
                raise CaseSkipped(f"page must be a multiple of 128 bytes, got {page}")
            self.page_elems = page // 4
            pages = ceil_div(self.n, self.page_elems)
            self.kernel = ctx.kernels.get(f"{KERNELS}:stream_warp", SIG["stream_warp"], opts)
            self.grid = ceil_div(pages * 32, BLOCK)
        else:
            self.kernel = ctx.kernels.get(f"{KERNELS}:stream_thread", SIG["stream_thread"], opts)
            self.grid = ceil_div(self.n, BLOCK)
        managed = strategies.get("managed")
        self._managed = managed
        self.inb = managed.allocate(s, self.nbytes)
        self.inb.view(np.uint32)[:] = initial_pattern(self.n)
        self.outb = None
        self.extra.update(registers=self.kernel.registers, grid=self.grid, block=BLOCK)
        self._ok = None

    def reset(self):
        s = self.session
        s.prefetch(self.inb.device_ptr, self.nbytes, "host")
        if self.outb is not None:  # a fresh output: the first touch is the kernel's, as in seed 004
            self._managed.free(s, self.outb)
        self.outb = self._managed.allocate(s, self.nbytes)
        s.synchronize()

    def sample(self, timer):
        s, n = self.session, self.nbytes
        prefetch = self.access == "prefetch"
        if prefetch:
            with timer.phase("h2d", bytes=2 * n, ceiling="pcie"):
                s.prefetch(self.inb.device_ptr, n, "device")
                s.prefetch(self.outb.device_ptr, n, "device")
        with timer.phase("kernel", bytes=2 * n, ceiling="dram" if prefetch else "pcie"):
            args = [self.inb.device_ptr, self.outb.device_ptr, self.n]
            if self.access == "stream_warp":
                args.append(self.page_elems)
            self.kernel.launch(self.grid, BLOCK, *args, stream=s.stream)
        if prefetch:
            with timer.phase("d2h", bytes=2 * n, ceiling="pcie"):
                s.prefetch(self.inb.device_ptr, n, "host")
                s.prefetch(self.outb.device_ptr, n, "host")
        with timer.phase("host_read", gpu=False):  # seed 004's verifyResult(out, in): the host reads both
            self._ok = np.array_equal(self.outb.view(np.uint32), self.inb.view(np.uint32))

    def verify(self):
        if not self._ok:
            out, inp = self.outb.view(np.uint32), self.inb.view(np.uint32)
            i = int(np.flatnonzero(out != inp)[0])
            raise CaseFailed(f"{self.access}: output differs from input at element {i}: {int(out[i]):#x} != {int(inp[i]):#x}")

    def check_rows(self, rows):
        """On demand, the kernel must migrate at least the whole input: fewer bytes counted means
        CUPTI lost records (seen on the H200 beyond about 64 MiB per kernel), so say so."""
        if self.access == "prefetch":
            return
        kernel = next((r for r in rows if r.get("phase") == "kernel"), None)
        got = kernel.get("um_htod_bytes") if kernel else None
        if got is not None and got < 0.99 * self.nbytes:
            for r in rows:
                r["um_incomplete"] = True
                r["reason"] = (f"CUPTI delivered {got / self.nbytes:.0%} of the input's migrations: "
                               "UM counts here are lower bounds")

    def close(self):
        for b in (self.inb, self.outb):
            if b is not None:
                self._managed.free(self.session, b)


def _pages_merge(params):
    if params["access"] != "stream_warp":  # the page size shapes stream_warp's grid only
        return {**params, "page": None}
    return params


def _pages_kernels(scenario):
    opts = tuple(scenario.compile_options)
    return [(f"{KERNELS}:stream_thread", SIG["stream_thread"], opts), (f"{KERNELS}:stream_warp", SIG["stream_warp"], opts)]


register(Op(
    name="um_pages",
    about="seed 004: copy kernel on managed memory, a thread per element, a warp per page, or after a prefetch",
    axes=AxisSet([
        AxisSpec("access", "choice", default=("stream_thread", "stream_warp", "prefetch"),
                 choices=("stream_thread", "stream_warp", "prefetch")),
        AxisSpec("page", "size", default=(64 * 1024,), minimum=128, about="bytes one warp copies (stream_warp)"),
        AxisSpec("bytes", "size", default=(256 * 1024**2,), minimum=16),
    ]),
    phases=("h2d", "kernel", "d2h", "host_read"),
    counts_um=True,
    sample_rate=2.4e9,
    run=PagesRun,
    kernels=_pages_kernels,
    merge=_pages_merge,
))


# -- um_advice ------------------------------------------------------------------------------

ADVICE_STRATEGIES = ("managed", "managed-prefetch", "managed-advise-read-mostly", "managed-advise-prefer-gpu",
                     "managed-advise-prefer-host", "managed-advise-accessed-by-gpu", "pinned", "zero-copy")
FILL_SEED = 0x5EED


def fill_expected(n: int, seed: int = FILL_SEED) -> np.ndarray:
    """What ``fill_words`` writes: i * 2654435761 + seed (mod 2^32)."""
    return np.arange(n, dtype=np.uint32) * np.uint32(2654435761) + np.uint32(seed)


class AdviceRun(CaseRun):
    def __init__(self, ctx, case):
        super().__init__()
        p = case.params
        s = self.session = ctx.session
        self.pattern, self.nbytes, self.rounds = p["pattern"], p["bytes"], p["rounds"] or 1
        self.st = self.use_strategy(p["strategy"], ctx.info)
        self.n = _words(self.nbytes, "um_advice")
        opts = tuple(ctx.scenario.compile_options)
        self.sms = ctx.info.sms
        self.grid = max(1, min(ceil_div(self.n // 4, BLOCK), self.sms * 16))
        self.x0 = initial_pattern(self.n)
        if self.pattern == "gpu-read":
            self.kernel = ctx.kernels.get(f"{KERNELS}:sum_pages", SIG["sum_pages"], opts)
            self.page_words = 4096  # 16 KiB a warp: enough warps to keep the GPU's memory busy
            self.read_grid = max(1, min(ceil_div(ceil_div(self.n, self.page_words), BLOCK // 32), self.sms * 16))
            self.expected = int(page_sums(self.n, self.page_words).sum(dtype=np.uint64))
            self.result = s.cuda.mem_alloc(8)
        elif self.pattern == "gpu-write":
            self.kernel = ctx.kernels.get(f"{KERNELS}:fill_words", SIG["fill_words"], opts)
            want = fill_expected(self.n)
            self.expected = int(want.sum(dtype=np.uint64))
        else:
            self.kernel = ctx.kernels.get("lifecycle.cu:scale_inplace", "PQ", opts)
            want = lifecycle_expected(self.x0, 2 * self.rounds)
            self.expected = int(want.sum(dtype=np.uint64))
        if self.pattern != "gpu-read":
            self.spot_idx = spot_indices(self.n)
            self.spot_expected = want[self.spot_idx]
        self.buf = self.st.allocate(s, self.nbytes)
        self.extra.update(registers=self.kernel.registers, grid=self.grid, block=BLOCK)
        self._got = None

    def reset(self):
        s, st, buf = self.session, self.st, self.buf
        st.reset(s, buf)  # managed: pages back on the host
        if self.pattern == "gpu-write":
            buf.view(np.uint32).fill(0xFFFFFFFF)  # poison the host side; the GPU must overwrite it
            if st.copies:  # and the device side, so a missed d2h is caught too
                s.cuda.memset_d32(buf.device_ptr, 0xFFFFFFFF, self.n)
        else:
            buf.view(np.uint32)[:] = self.x0
        if self.pattern == "gpu-read":
            s.cuda.memset_d32(self.result, 0, 2)
        s.synchronize()

    def _kernel_phase(self, timer, nbytes):
        s, st = self.session, self.st
        ceiling = strategies.kernel_ceiling(st, in_place=nbytes > self.nbytes)
        with timer.phase("kernel", bytes=nbytes, ceiling=ceiling):
            if self.pattern == "gpu-read":
                self.kernel.launch(self.read_grid, BLOCK, self.buf.device_ptr, self.n, self.page_words, 1.0, self.result, stream=s.stream)
            elif self.pattern == "gpu-write":
                self.kernel.launch(self.grid, BLOCK, self.buf.device_ptr, self.n, FILL_SEED, stream=s.stream)
            else:
                self.kernel.launch(self.grid, BLOCK, self.buf.device_ptr, self.n, stream=s.stream)

    def sample(self, timer):
        s, st, buf, n = self.session, self.st, self.buf, self.nbytes
        if self.pattern == "gpu-read":
            if st.moves_data:
                with timer.phase("h2d", bytes=n, ceiling="pcie"):
                    st.to_device(s, buf)
            self._kernel_phase(timer, n)
            return
        if self.pattern == "gpu-write":
            self._kernel_phase(timer, n)
        else:
            view = buf.view(np.uint32)
            for _ in range(self.rounds):
                with timer.phase("host_init", gpu=False):  # the host's turn: x = 3x + 1 in place
                    np.multiply(view, np.uint32(3), out=view)
                    np.add(view, np.uint32(1), out=view)
                if st.moves_data:
                    with timer.phase("h2d", bytes=n, ceiling="pcie"):
                        st.to_device(s, buf)
                self._kernel_phase(timer, 2 * n)  # the GPU's turn: x = 3x + 1 in place
                if st.moves_data:
                    with timer.phase("d2h", bytes=n, ceiling="pcie"):
                        st.to_host(s, buf)
        if self.pattern == "gpu-write" and st.moves_data:
            with timer.phase("d2h", bytes=n, ceiling="pcie"):
                st.to_host(s, buf)
        with timer.phase("host_read", gpu=False):
            view = buf.view(np.uint32)
            self._got = (int(view.sum(dtype=np.uint64)), view[self.spot_idx])

    def verify(self):
        if self.pattern == "gpu-read":
            got = read_u64(self.session, self.result)
            if got != self.expected % 2**64:
                raise CaseFailed(f"gpu-read: the kernel's sum is {got}, numpy's is {self.expected}")
            return
        total, spots = self._got
        check_readback(self.pattern, total, spots, self.spot_idx, self.spot_expected, self.expected)

    def close(self):
        self.st.free(self.session, self.buf)
        if self.pattern == "gpu-read":
            self.result.free()


def _advice_merge(params):
    if params["pattern"] != "ping-pong":
        return {**params, "rounds": None}
    return params


def _advice_kernels(scenario):
    opts = tuple(scenario.compile_options)
    return [(f"{KERNELS}:sum_pages", SIG["sum_pages"], opts), (f"{KERNELS}:fill_words", SIG["fill_words"], opts),
            ("lifecycle.cu:scale_inplace", "PQ", opts)]


register(Op(
    name="um_advice",
    about="managed memory with each cuMemAdvise, prefetch, pinned and zero-copy on GPU-read, GPU-write and ping-pong access",
    axes=AxisSet([
        AxisSpec("strategy", "choice", default=ADVICE_STRATEGIES, choices=ADVICE_STRATEGIES),
        AxisSpec("pattern", "choice", default=("gpu-read", "gpu-write", "ping-pong"),
                 choices=("gpu-read", "gpu-write", "ping-pong")),
        AxisSpec("rounds", "int", default=(4,), minimum=1, maximum=1000, about="host/GPU turns (ping-pong)"),
        AxisSpec("bytes", "size", default=(64 * 1024**2,), minimum=16),
    ]),
    phases=("host_init", "h2d", "kernel", "d2h", "host_read"),
    counts_um=True,
    sample_rate=1.5e9,
    run=AdviceRun,
    kernels=_advice_kernels,
    merge=_advice_merge,
))


# -- um_sparse ------------------------------------------------------------------------------

SPARSE_STRATEGIES = ("managed", "managed-prefetch", "zero-copy", "pinned", "pageable")


class SparseRun(CaseRun):
    def __init__(self, ctx, case):
        super().__init__()
        p = case.params
        s = self.session = ctx.session
        self.st = self.use_strategy(p["strategy"], ctx.info)
        self.nbytes, self.fraction, page = p["bytes"], p["fraction"], p["page"]
        self.n = _words(self.nbytes, "um_sparse")
        if page % 16:
            raise CaseSkipped(f"page must be a multiple of 16 bytes, got {page}")
        self.page_words = page // 4
        pages = ceil_div(self.n, self.page_words)
        mask = touched_pages(pages, self.fraction)
        self.touched = int(mask.sum())
        sizes = np.full(pages, self.page_words, dtype=np.int64)
        sizes[-1] = self.n - (pages - 1) * self.page_words
        self.touched_bytes = int(sizes[mask].sum()) * 4
        self.expected = int(page_sums(self.n, self.page_words)[mask].sum(dtype=np.uint64))
        self.kernel = ctx.kernels.get(f"{KERNELS}:sum_pages", SIG["sum_pages"], tuple(ctx.scenario.compile_options))
        self.grid = max(1, min(ceil_div(pages, BLOCK // 32), ctx.info.sms * 16))
        self.buf = self.st.allocate(s, self.nbytes)
        self.buf.view(np.uint32)[:] = initial_pattern(self.n)
        self.result = s.cuda.mem_alloc(8)
        self.extra.update(registers=self.kernel.registers, grid=self.grid, block=BLOCK, pages=pages,
                          touched_pages=self.touched, touched_bytes=self.touched_bytes)

    def reset(self):
        self.st.reset(self.session, self.buf)  # managed: every page back on the host
        self.session.cuda.memset_d32(self.result, 0, 2)
        self.session.synchronize()

    def sample(self, timer):
        s, st = self.session, self.st
        if st.moves_data:  # explicit copies and prefetch move the whole buffer, touched or not
            with timer.phase("h2d", bytes=self.nbytes, ceiling="pcie"):
                st.to_device(s, self.buf)
        with timer.phase("kernel", bytes=self.touched_bytes, ceiling=strategies.kernel_ceiling(st)):
            self.kernel.launch(self.grid, BLOCK, self.buf.device_ptr, self.n, self.page_words, float(self.fraction),
                               self.result, stream=s.stream)

    def verify(self):
        got = read_u64(self.session, self.result)
        if got != self.expected % 2**64:
            raise CaseFailed(f"sum over {self.touched} touched pages is {got}, numpy's is {self.expected}")

    def close(self):
        self.st.free(self.session, self.buf)
        self.result.free()


register(Op(
    name="um_sparse",
    about="a kernel reads a fraction of the pages: on-demand managed and zero-copy move only those, copies move all",
    axes=AxisSet([
        AxisSpec("strategy", "choice", default=SPARSE_STRATEGIES, choices=SPARSE_STRATEGIES),
        AxisSpec("fraction", "float", default=(0.01, 0.1, 0.5, 1.0), minimum=0.0, maximum=1.0,
                 about="share of the pages the kernel reads, spread evenly"),
        AxisSpec("page", "size", default=(64 * 1024,), minimum=16, about="granularity of the touched pages"),
        AxisSpec("bytes", "size", default=(256 * 1024**2,), minimum=16),
    ]),
    phases=("h2d", "kernel"),
    counts_um=True,
    sample_rate=3e9,
    run=SparseRun,
    kernels=lambda scenario: [(f"{KERNELS}:sum_pages", SIG["sum_pages"], tuple(scenario.compile_options))],
))
