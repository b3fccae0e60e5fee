"""``loop``: an application's loop over one buffer under one host-memory strategy, as it runs.

    alloc → host_init (the host's first write of the whole buffer)
    → iterations × [host_write (the first ``host_writes`` of the buffer: a new batch)
                    → h2d (copies or prefetches what the kernel needs there)
                    → kernel (``reuse`` passes over the ``touched`` pages in ``pattern``; each pass
                      adds every word it reads into a 64-bit result, which the host reads back each
                      iteration, and writes x = 3x + 1 on ``gpu_writes`` of what it touches)
                    → d2h (what the host is about to read, where the GPU changed it)
                    → host_read (the first ``host_reads`` of the buffer)]
    → free

With ``copies`` > 1 an explicit copy each way is made as an application copies records: in that many
equal parts, each a synchronous cudaMemcpy (the first iteration's whole-buffer copy too). With
``host_pages`` = malloc the strategies whose buffer is pageable memory back it as a C program's malloc
does (a fresh mapping, no huge-page advice) instead of as a numpy array, and the timed free gives its pages
back to the kernel as an application's free() of it does (strategies.release_pages). With ``first_write``
= stores the host's first write stores each word as a program computes its data, instead of copying the
data in (FIRST_WRITES says why the two differ). With ``host_reader`` = words the host reads the buffer back
as a compiled program does, each word added in turn into a double (HOST_READERS says why it differs from
numpy's sum).

The first iteration is one phase, ``first`` (it moves the whole buffer); the later ones are
timed phase by phase (summed over them, so a sample's total is the whole run) and, by the
host's clock, each as a whole: the sample's ``wall_steady_s`` is the mean of those
iterations (what an application pays per iteration, its stalls included: the mean of managed
memory's verified loops under 2 MiB was a median 1.6x their median iteration on the H200s and
H100s of 2026-11), ``wall_steady_median_s`` their median, ``wall_first_s`` the first,
``wall_setup_s`` = alloc + host_init + (first − steady) + free and ``wall_s`` the whole run, so
that whole = setup + iterations × steady.

What each strategy moves: explicit copies (pageable, pinned, write-combined) copy the whole
buffer in the first iteration, then the host-written part to the device and, when the
kernel writes, the part the host reads back. managed-prefetch prefetches to the device what
the host touched since the last kernel and to the host what it is about to read. The others
move nothing: zero-copy and mapped memory are read across the link, managed memory migrates
on the faults of whoever touches it.

pinned-pipelined (a plan, not a memory kind) runs each iteration chunk by chunk over its
streams: for each chunk in order the host writes its part of the new batch, then the chunk's
copy in, kernel passes (over the chunk's touched pages, its own 8-byte result) and copy out are
queued on stream i mod streams; the host then reads each chunk back once its stream is past it.
Its steady iterations are one phase, ``pipelined`` (the steps overlap, so they have no times of
their own); its first iteration moves the whole buffer the same way.

The last iteration's result and spots of the final buffer are checked exactly (outside any
timed phase or wall).
"""

from __future__ import annotations

import functools
import math
import statistics
import time

import numpy as np

from umprof.core.axes import AxisSet, AxisSpec
from umprof.core.errors import CaseFailed, CaseSkipped
from umprof.measure import strategies
from umprof.measure.ops.base import CaseRun, Op, register
from umprof.measure.ops.checks import spot_indices
from umprof.measure.ops.lifecycle import (
    PAGE_BYTES,
    PAGE_WORDS,
    PATTERN_CODE,
    PATTERNS,
    grid_for,
    initial_pattern,
    lifecycle_expected,
    random_multiplier,
    touched_pages,
)

KERNEL = "loop.cu:loop_pass"
SIGNATURE = "PPQIiIQQP"
BLOCK = 256
HOST_GRANULE_WORDS = 16  # host regions are prefixes of whole 64-byte lines (16-byte aligned copies)
MASK64 = (1 << 64) - 1


def region_words(n: int, fraction: float) -> int:
    """Words in the prefix a host fraction covers: rounded up to whole 64-byte lines, at most n."""
    if fraction <= 0:
        return 0
    return min(n, -(-math.ceil(fraction * n) // HOST_GRANULE_WORDS) * HOST_GRANULE_WORDS)


def written_pages(m: int, gpu_writes: float) -> int:
    """How many of the m touched pages (the first ones of the list) each pass writes."""
    return min(m, math.ceil(gpu_writes * m - 1e-9)) if gpu_writes > 0 else 0


def masks(n: int, touched: float, pattern: str, stride: int, gpu_writes: float):
    """(page list, selected-word mask, written-word mask) over the buffer's n words."""
    pages = np.flatnonzero(touched_pages(n // PAGE_WORDS, touched)).astype(np.uint32)
    sel_pages = np.zeros(n // PAGE_WORDS, dtype=bool)
    sel_pages[pages] = True
    wr_pages = np.zeros_like(sel_pages)
    wr_pages[pages[:written_pages(len(pages), gpu_writes)]] = True
    sel = np.repeat(sel_pages, PAGE_WORDS)
    if pattern == "strided":
        sel &= (np.arange(n) % stride) == 0
    return pages, sel, sel & np.repeat(wr_pages, PAGE_WORDS)


def chunk_plan(pages: np.ndarray, n: int, chunk_bytes: int, written: int) -> list[tuple[int, int, int, int, int]]:
    """A pipelined iteration's chunks over a buffer of n words whose kernel touches the sorted
    page list ``pages`` and writes its first ``written`` pages: per chunk, (first word, end word,
    start and end of its slice of the page list, how many of that slice's pages it writes)."""
    cw, cp = chunk_bytes // 4, chunk_bytes // PAGE_BYTES
    out = []
    for c in range(-(-n // cw)):
        i0, i1 = (int(np.searchsorted(pages, v)) for v in (c * cp, (c + 1) * cp))
        out.append((c * cw, min(n, (c + 1) * cw), i0, i1, max(0, min(i1, written) - i0)))
    return out


@functools.lru_cache(maxsize=256)  # small answers; a calibration interleaves many workloads
def reference(n: int, reuse: int, touched: float, pattern: str, stride: int, host_writes: float, gpu_writes: float,
              iterations: int):
    """(page list, last iteration's result mod 2^64, spot indices, final values there): the loop
    followed on the host in closed form, once per workload (every strategy shares it)."""
    x0 = initial_pattern(n)
    pages, sel, wr = masks(n, touched, pattern, stride, gpu_writes)
    hw = region_words(n, host_writes)
    start = np.where(wr, lifecycle_expected(x0, reuse * (iterations - 1)), x0)  # before the last kernel
    start[:hw] = x0[:hw] + np.uint32(iterations)  # the host's last batch: x0 + iteration number
    vs, ws = start[sel], wr[sel]
    total = reuse * int(vs[~ws].sum(dtype=np.uint64))
    written = vs[ws]
    for p in range(reuse):
        total += int(lifecycle_expected(written, p).sum(dtype=np.uint64))
    final = np.where(wr, lifecycle_expected(start, reuse), start)
    idx = spot_indices(n)
    return pages, total & MASK64, idx, final[idx]


@functools.lru_cache(maxsize=1)
def _initial(n: int) -> np.ndarray:
    """The buffer's first contents, shared by consecutive cases of one size (read-only use)."""
    return initial_pattern(n)


class LoopRun(CaseRun):
    def __init__(self, ctx, case):
        super().__init__()
        p = case.params
        self.session = s = ctx.session
        self.strategy = st = self.use_strategy(p["strategy"], ctx.info, pipelines=True)
        self.nbytes, self.reuse, self.iterations = p["bytes"], p["reuse"], p["iterations"]
        self.touched, self.pattern, self.stride = p["touched"], p["pattern"], p.get("stride") or 1
        self.host_writes, self.gpu_writes, self.host_reads = p["host_writes"], p["gpu_writes"], p["host_reads"]
        if st.advice == "read-mostly" and self.gpu_writes > 0:
            raise CaseSkipped("READ_MOSTLY is for data the GPU only reads: every kernel write collapses its "
                              "read-only copies (gpu_writes > 0)")
        if self.nbytes % PAGE_BYTES:
            raise CaseSkipped(f"loop needs a multiple of {PAGE_BYTES // 1024} KiB, got {self.nbytes} bytes")
        if self.pattern == "strided" and (self.stride & (self.stride - 1) or self.stride > PAGE_WORDS):
            raise CaseSkipped(f"stride must be a power of two up to {PAGE_WORDS} words, got {self.stride}")
        self.copies = p.get("copies") or 1
        self.host_pages = p.get("host_pages") or "numpy"
        self.first_write = p.get("first_write") or "copy"
        self.host_reader = p.get("host_reader") or "numpy"
        if self.host_reader == "words":
            from umprof.measure import host_read

            host_read.prepare()  # nvcc's build and the library's loading stay outside every timed phase
        if st.pipelined and self.pattern == "random":
            raise CaseSkipped(f"{st.name} runs the kernel chunk by chunk; a random pass reaches the whole buffer, "
                              "so its work cannot be split into chunks")
        self.n = self.nbytes // 4
        pages, self.expected_result, self.spot_idx, self.spot_expected = reference(
            self.n, self.reuse, self.touched, self.pattern, self.stride, self.host_writes, self.gpu_writes,
            self.iterations)
        m = int(pages.size)
        self.hw_words, self.hr_words = region_words(self.n, self.host_writes), region_words(self.n, self.host_reads)
        # what the kernel reaches next: for managed-prefetch, whatever the host touched since the last kernel
        self.prefetch_words = max(self.hw_words, self.hr_words)
        self.x0 = _initial(self.n)
        self.pages = s.cuda.to_device(pages)
        self.result = s.cuda.mem_alloc(8)
        self.result_host = s.cuda.pagelocked_empty(1, np.uint64)
        self.kernel = ctx.kernels.get(KERNEL, SIGNATURE, tuple(ctx.scenario.compile_options))
        per_pass_words = m * PAGE_WORDS // (self.stride if self.pattern == "strided" else 1)
        wp = written_pages(m, self.gpu_writes)
        self.args = (self.pages, m, PAGE_WORDS, PATTERN_CODE[self.pattern], self.stride, random_multiplier(m), wp,
                     self.result)
        self.grid = grid_for(per_pass_words, ctx.info.sms)
        self.kernel_bytes = 4 * per_pass_words * self.reuse + 4 * per_pass_words * self.reuse * wp // max(m, 1)
        self.kernel_ceiling = strategies.kernel_ceiling(st, in_place=self.gpu_writes > 0)
        self.extra.update(registers=self.kernel.registers, grid=self.grid, block=BLOCK,
                          touched_bytes=4 * per_pass_words, written_pages=wp, host_write_bytes=4 * self.hw_words,
                          host_read_bytes=4 * self.hr_words)
        self._got = None
        if st.pipelined:
            self._plan_chunks(ctx, pages, wp)

    def _plan_chunks(self, ctx, pages, wp):
        """Per chunk: its words, and the kernel's slice of the page list (the pages it touches
        there, the first of them written as the whole list's first ``wp`` are)."""
        s, st = self.session, self.strategy
        chunk_bytes, count = st.chunking(self.nbytes)
        self.chunks = []
        for a, b, i0, i1, written in chunk_plan(pages, self.n, chunk_bytes, wp):
            m = i1 - i0
            per_pass = m * PAGE_WORDS // (self.stride if self.pattern == "strided" else 1)
            args = (int(self.pages) + 4 * i0, m, PAGE_WORDS, PATTERN_CODE[self.pattern], self.stride,
                    random_multiplier(max(m, 1)), written)
            self.chunks.append((a, b, m, args, grid_for(per_pass, ctx.info.sms)))
        self.streams = [s.cuda.Stream() for _ in range(min(st.streams, count))]
        self.done = [s.cuda.Event() for _ in range(count)]
        self.results = s.cuda.mem_alloc(8 * count)
        self.results_host = s.cuda.pagelocked_zeros(count, np.uint64)
        self.extra.update(chunk_bytes=chunk_bytes, chunks=count, streams=len(self.streams))

    def _pipelined_iteration(self, timer, buf, view, it):
        """One iteration chunk by chunk: the host writes a chunk's new data and queues its copy in,
        kernel passes and copy out on the chunk's stream, then goes on to the next chunk while the
        GPU works; it reads each chunk back once that chunk's stream has passed it."""
        cuda = self.session.cuda
        first = it == 0
        back = self.hr_words if self.gpu_writes > 0 else 0  # a read-only input is not copied back
        clock, spent = time.perf_counter, dict.fromkeys(("host_write_s", "issue_s", "wait_s", "host_read_s"), 0.0)
        with self._phase(timer, "pipelined", not first, gpu=False):
            for c, (a, b, m, args, grid) in enumerate(self.chunks):
                stream = self.streams[c % len(self.streams)]
                w = min(b, self.hw_words)
                t0 = clock()
                if w > a:
                    np.add(self.x0[a:w], np.uint32(it + 1), out=view[a:w])
                t1 = clock()
                spent["host_write_s"] += t1 - t0
                up = b if first else w
                if up > a:
                    cuda.memcpy_htod_async(buf.device_ptr + 4 * a, buf.host[4 * a:4 * up], stream)
                slot = int(self.results) + 8 * c
                cuda.memset_d32_async(slot, 0, 2, stream)
                if m:
                    for _ in range(self.reuse):
                        self.kernel.launch(grid, BLOCK, buf.device_ptr, *args, slot, stream=stream)
                cuda.memcpy_dtoh_async(self.results_host[c:c + 1], slot, stream)
                down = min(b, back)
                if down > a:
                    cuda.memcpy_dtoh_async(buf.host[4 * a:4 * down], buf.device_ptr + 4 * a, stream)
                self.done[c].record(stream)
                spent["issue_s"] += clock() - t1
            total = 0
            for c, (a, b, *_rest) in enumerate(self.chunks):
                t0 = clock()
                self.done[c].synchronize()
                t1 = clock()
                total += int(self.results_host[c])
                r = min(b, self.hr_words)
                if r > a:
                    self._host_sum = self._read(view[a:r])
                spent["wait_s"] += t1 - t0
                spent["host_read_s"] += clock() - t1
        if not first:  # where the host's time went, summed over the steady iterations as the phase is
            acc = timer.sample.extra.setdefault("pipelined", {})
            for k, v in spent.items():
                acc[k] = acc.get(k, 0.0) + v
        return total & MASK64

    def _read(self, words: np.ndarray) -> int:
        """The host's read of ``words``: numpy's sum, or each word in turn as a compiled program adds them
        (``host_reader``); the sum kept, so that no reader can skip the read."""
        if self.host_reader == "words":
            from umprof.measure.host_read import sum_words

            return int(sum_words(words))
        return int(words.sum(dtype=np.uint64))

    def _phase(self, timer, name, steady, gpu=True, **kw):
        """A timed phase in the steady iterations; in the first (timed as a whole), the same step
        ordered the same way: a GPU step is waited for before the host goes on, as a timed one is."""
        return timer.phase(name, gpu=gpu, **kw) if steady else _Untimed(self.session if gpu else None)

    def _iteration(self, timer, buf, view, it):
        s, st = self.session, self.strategy
        if st.pipelined:
            return self._pipelined_iteration(timer, buf, view, it)
        steady, first = it > 0, it == 0
        if self.hw_words:
            with self._phase(timer, "host_write", steady, gpu=False):  # a new batch: x0 + iteration number
                np.add(self.x0[:self.hw_words], np.uint32(it + 1), out=view[:self.hw_words])
        to_gpu = self.n if first else (self.hw_words if st.copies else self.prefetch_words)
        if st.moves_data and to_gpu:
            with self._phase(timer, "h2d", steady, bytes=4 * to_gpu, ceiling="pcie"):
                if self.copies > 1:
                    st.copy_parts(s, buf, 4 * to_gpu, self.copies, to_device=True)
                else:
                    st.to_device(s, buf, 4 * to_gpu)
        with self._phase(timer, "kernel", steady, bytes=self.kernel_bytes, ceiling=self.kernel_ceiling):
            s.cuda.memset_d32_async(self.result, 0, 2, s.stream)
            for _ in range(self.reuse):
                self.kernel.launch(self.grid, BLOCK, buf.device_ptr, *self.args, stream=s.stream)
            s.cuda.memcpy_dtoh_async(self.result_host, self.result, s.stream)
        back = self.hr_words if (self.gpu_writes > 0 or not st.copies) else 0  # a read-only input is not copied back
        if st.moves_data and back:
            with self._phase(timer, "d2h", steady, bytes=4 * back, ceiling="pcie"):
                if self.copies > 1:
                    st.copy_parts(s, buf, 4 * back, self.copies, to_device=False)
                else:
                    st.to_host(s, buf, 4 * back)
        if self.hr_words:
            with self._phase(timer, "host_read", steady, gpu=False):
                self._host_sum = self._read(view[:self.hr_words])
        return int(self.result_host[0])

    def sample(self, timer):
        s, st = self.session, self.strategy
        clock = time.perf_counter
        t0 = clock()
        with timer.phase("alloc", gpu=False):
            buf = st.allocate(s, self.nbytes, self.host_pages)
        walls, result, spots = [], None, None
        try:
            view = buf.view(np.uint32)
            with timer.phase("host_init", gpu=False):
                if self.first_write == "stores":
                    # word by word, as a program computes its data: ordinary stores, each line read for
                    # ownership first where it is not in the host's caches
                    np.add(self.x0, np.uint32(0), out=view)
                else:  # a copy of the data in: memcpy, whose large copies store around the caches
                    view[:] = self.x0
            t_init = clock() - t0
            with timer.phase("first", gpu=False):
                t = clock()
                result = self._iteration(timer, buf, view, 0)
                t_first = clock() - t
            for it in range(1, self.iterations):
                t = clock()
                result = self._iteration(timer, buf, view, it)
                walls.append(clock() - t)
            spots = self._final_spots(buf, view)  # a few hundred words: outside every wall
        finally:
            t = clock()
            with timer.phase("free", gpu=False):
                st.free(s, buf)
            t_free = clock() - t
        steady = statistics.fmean(walls) if walls else math.nan
        setup = t_init + t_free + t_first - (steady if walls else 0.0)
        timer.sample.extra.setdefault("total", {}).update(
            wall_s=t_init + t_first + sum(walls) + t_free, wall_first_s=t_first, wall_steady_s=steady,
            wall_steady_median_s=statistics.median(walls) if walls else math.nan, wall_setup_s=setup)
        self._got = (result, spots)

    def _final_spots(self, buf, view) -> np.ndarray:
        """The buffer's final values at the spot indices, where the data lives: the device copy for
        explicit copies (the host holds only what it copied back), else the buffer itself."""
        if not self.strategy.copies:
            return view[self.spot_idx].copy()
        out = np.empty(len(self.spot_idx), dtype=np.uint32)
        for j, i in enumerate(self.spot_idx):
            self.session.cuda.memcpy_dtoh(out[j:j + 1], buf.device_ptr + 4 * int(i))
        return out

    def verify(self):
        result, spots = self._got
        bad = np.flatnonzero(spots != self.spot_expected)
        if bad.size:
            i = int(self.spot_idx[bad[0]])
            raise CaseFailed(f"final buffer: element {i} is {int(spots[bad[0]])}, expected {int(self.spot_expected[bad[0]])}")
        if result != self.expected_result:
            raise CaseFailed(f"last iteration's result {result} != expected {self.expected_result}")

    def close(self):
        for name in ("pages", "result", "results"):
            h = getattr(self, name, None)
            if h is not None:
                h.free()
                setattr(self, name, None)


class _Untimed:
    """A step of the first iteration: not timed on its own; a GPU step is synchronized at its end."""

    def __init__(self, session):
        self.session = session

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.session is not None and exc[0] is None:
            self.session.synchronize()
        return False


def _merge(params):
    """The stride applies to the strided pattern alone; copies in parts to the strategies that make an
    application's copies, and the host pages' backing to those whose buffer is the application's pageable
    memory (the others run the same workload without them)."""
    out = dict(params)
    if out.get("pattern") != "strided":
        out["stride"] = None
    st = strategies.get(out["strategy"])
    if "copies" in out and not st.copies_in_parts:
        out["copies"] = 1
    if "host_pages" in out and not st.malloc_backed:
        out["host_pages"] = "numpy"
    return out


FRACTION = dict(kind="float", minimum=0.0, maximum=1.0)
# how the host writes the buffer first (the host_init phase): "copy", memcpy from the data (the default,
# and what recommend's workloads verify), or "stores", each word stored as a program's
# producer stores what it computes. glibc's memcpy writes copies larger than its non-temporal threshold
# with streaming stores, which skip reading each line for ownership; ordinary stores into memory that is
# not in the caches read every line first. Memory whose pages fault in as they are written (pageable,
# managed) has each page zeroed by the kernel just before, so the stores after it find it cached.
FIRST_WRITES = ("copy", "stores")
# how the host reads the buffer back (the host_read phase): "numpy", a vectorized sum (a Python program's
# read, and umprof's loop's by default), or "words", each word added in turn into a double, as a compiled
# program's loop over a kernel's output does (kernels/host_read.c). On managed pages the GPU holds they
# fault back differently: on an H200 (2026-12-03, benchmarks/fault_read.cu) a 64 MiB buffer read so took
# 8-20 ms beyond the same read of pinned memory, numpy's 5-7 ms.
HOST_READERS = ("numpy", "words")

OP = register(Op(
    name="loop",
    about="alloc → host init → iterations × [host writes → to device → kernel × reuse (+ a small result) → "
          "to host → host reads] → free; first iteration and steady ones timed apart",
    axes=AxisSet([
        AxisSpec("strategy", "choice", default=("pageable", "pinned", "zero-copy", "managed", "managed-prefetch"),
                 choices=tuple(strategies.STRATEGIES)),
        AxisSpec("bytes", "size", default=(64 * 1024**2,), minimum=PAGE_BYTES),
        AxisSpec("reuse", "int", default=(1,), minimum=1, maximum=1024, about="kernel passes per iteration"),
        AxisSpec("touched", "float", default=(1.0,), minimum=0.0, maximum=1.0,
                 about="fraction of the buffer's 64 KiB pages each pass touches", quiet_default=True),
        AxisSpec("pattern", "choice", default=("streaming",), choices=PATTERNS,
                 about="how a pass walks the touched pages", quiet_default=True),
        AxisSpec("stride", "int", default=(8,), minimum=1, maximum=PAGE_WORDS,
                 about="words between the words the strided pattern touches", quiet_default=True),
        AxisSpec("host_writes", default=(0.0,), about="fraction of the buffer the host writes before each iteration",
                 **FRACTION),
        AxisSpec("gpu_writes", default=(1.0,), about="fraction of what a pass touches that it also writes", **FRACTION),
        AxisSpec("host_reads", default=(1.0,), about="fraction of the buffer the host reads after each iteration",
                 **FRACTION),
        AxisSpec("iterations", "int", default=(3,), minimum=1, maximum=100000, about="iterations of the loop"),
        AxisSpec("copies", "int", default=(1,), minimum=1, maximum=65536, quiet_default=True,
                 about="explicit copies each way per iteration, in equal parts, each a synchronous cudaMemcpy"),
        AxisSpec("host_pages", "choice", default=("numpy",), choices=strategies.HOST_PAGES, quiet_default=True,
                 about="how pageable memory is backed: numpy's arrays (huge pages advised) or a C program's "
                       "malloc (a fresh mapping, no advice: 4 KiB pages where huge pages need advice)"),
        AxisSpec("first_write", "choice", default=("copy",), choices=FIRST_WRITES, quiet_default=True,
                 about="how the host writes the buffer first: a copy of its data (memcpy, which stores large "
                       "copies around the caches) or stores word by word, as a program computes its data"),
        AxisSpec("host_reader", "choice", default=("numpy",), choices=HOST_READERS, quiet_default=True,
                 about="how the host reads the buffer back: numpy's vectorized sum, or each word added in turn "
                       "into a double, as a compiled program's loop does"),
    ]),
    default_kernel=KERNEL,
    kernel_signature=SIGNATURE,
    phases=("alloc", "host_init", "first", "host_write", "h2d", "kernel", "d2h", "host_read", "pipelined", "free"),
    sample_rate=1.5e9,  # per iteration: host writes and reads, copies both ways
    counts_um=False,  # the loop's samples are whole runs: a counted one costs as much again (--um-counters all counts)
    run=LoopRun,
    merge=_merge,
))
