"""``overlap`` (seed 003): a buffer processed in chunks, H2D → kernel → D2H, on several streams.

Each sample runs the buffer twice, untimed work between: first serially on one stream
(phases ``h2d``, ``kernel``, ``d2h``: the lifecycle without overlap), then pipelined, chunk
``i`` on stream ``i mod streams`` (phase ``pipelined``: from the first chunk's first operation
to an event on the legacy stream, which waits for every other stream; the host's time to issue
that first operation is not the pipeline's, and Nsight Systems leaves it out the same way).
Every chunk's copies and kernel are also
bracketed by events on their own stream; the union of a kind's intervals is that engine's
busy time in the pipelined run (``h2d_busy_s``, ``kernel_busy_s``, ``d2h_busy_s``). Reported:

* ``overlap_efficiency`` = max(busy) / pipelined wall (1: the slowest engine never waits);
* ``speedup`` = serial (h2d + kernel + d2h) / pipelined wall.

The kernel makes ``iters`` passes of x → 3x + 1 over its chunk; ``compute`` sets ``iters`` so
that a chunk's kernel takes ``compute`` times its H2D copy (calibrated on the case's own
buffers before timing): 0.1 is copy-bound, 1 balanced, 4 compute-bound. The output is checked
exactly against the closed form. Strategies: pinned and write-combined copy through a device
buffer; managed-prefetch prefetches each chunk there and back on its stream; zero-copy
kernels work on mapped host memory in place (no copies: only kernels overlap).
"""

from __future__ import annotations

import numpy as np

from umprof.core.axes import AxisSet, AxisSpec
from umprof.core.errors import CaseSkipped
from umprof.measure import strategies
from umprof.measure.ops.base import CaseRun, Op, register
from umprof.measure.ops.checks import check_equal, spot_indices
from umprof.measure.ops.lifecycle import initial_pattern, lifecycle_expected
from umprof.measure.staging_ring import chunks
from umprof.nsight import nvtx

KERNEL = "streams.cu:chunk_work"
SIGNATURE = "PQI"
BLOCK = 256
STRATEGIES = ("pinned", "write-combined", "managed-prefetch", "zero-copy")
ENGINES = ("h2d", "kernel", "d2h")


def busy_time(intervals) -> float:
    """Length of the union of ``(start, end)`` intervals: how long at least one ran."""
    total, end = 0.0, None
    for a, b in sorted(intervals):
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


class OverlapRun(CaseRun):
    verify_every_sample = False  # a whole-buffer compare: once, after the last sample

    def __init__(self, ctx, case):
        super().__init__()
        p = case.params
        s = self.session = ctx.session
        self.st = self.use_strategy(p["strategy"], ctx.info)
        self.nbytes, self.chunk, self.nstreams = p["bytes"], p["chunk"], p["streams"]
        if self.nbytes % 16 or self.chunk % 16:
            raise CaseSkipped("bytes and chunk must be multiples of 16")
        self.kernel = ctx.kernels.get(ctx.scenario.kernel or KERNEL, SIGNATURE, tuple(ctx.scenario.compile_options))
        self.sms = ctx.info.sms
        self.parts = chunks(self.nbytes, self.chunk)
        self.copies = self.st.copies
        self.buf = self.st.allocate(s, self.nbytes)  # for copy strategies: host source + device buffer
        # the host destination of copies: pinned (write-combined memory is written fast and read
        # back slowly, and the check reads it all)
        self.out_st = strategies.get("pinned")
        self.out = self.out_st.allocate(s, self.nbytes) if self.copies else None
        self.streams = [s.cuda.Stream() for _ in range(self.nstreams)]
        self.events = [[(s.cuda.Event(), s.cuda.Event()) for _ in ENGINES] for _ in self.parts]
        self.t0, self.t_end = s.cuda.Event(), s.cuda.Event()
        self.x0 = initial_pattern(self.nbytes // 4)
        self.iters = self._calibrate(p["compute"])
        self.extra.update(kernel_iterations=self.iters, chunks=len(self.parts), registers=self.kernel.registers)
        # the serial pass then the pipelined one: copies write the destination afresh; in place, both passes count
        passes = 1 if self.copies else 2
        self.expected = lifecycle_expected(self.x0, passes * self.iters)
        self.spots = spot_indices(self.nbytes // 4)

    # -- set-up ---------------------------------------------------------------------------
    def _grid(self, nbytes):
        return max(1, min((nbytes // 16 + BLOCK - 1) // BLOCK, self.sms * 8))

    def _launch(self, off, length, iters, stream):
        self.kernel.launch(self._grid(length), BLOCK, self.buf.device_ptr + off, length // 4, iters, stream=stream)

    def _calibrate(self, compute: float) -> int:
        """Kernel passes that make one chunk's kernel take ``compute`` times its H2D copy (of
        pinned memory over the link: the copy the strategies are compared by)."""
        cuda = self.session.cuda
        n = self.chunk
        host = cuda.pagelocked_empty(n, np.uint8)
        dev = cuda.mem_alloc(n)
        a, b = cuda.Event(), cuda.Event()
        try:
            def timed(fn):
                best = float("inf")
                for _ in range(3):
                    a.record()
                    fn()
                    b.record()
                    b.synchronize()
                    best = min(best, b.time_since(a) / 1e3)
                return best

            copy_s = timed(lambda: cuda.memcpy_htod_async(dev, host))
            grid = self._grid(n)
            run = lambda iters: timed(lambda: self.kernel.launch(grid, BLOCK, int(dev), n // 4, iters))  # noqa: E731
            base = run(0)  # launch and one memory pass: the kernel's fixed cost
            probe, kernel_s = 64, run(64)
            # a short probe is mostly launch overhead: lengthen it until the passes dominate
            while kernel_s < 4 * max(base, copy_s) and probe < 2**24:
                probe *= 4
                kernel_s = run(probe)
        finally:
            dev.free()
            host.base.free()
        per_pass = max(kernel_s - base, 1e-9) / probe
        self.extra.update(chunk_copy_s=copy_s, kernel_base_s=base, kernel_pass_s=per_pass)
        return int(max(1, round(max(0.0, compute * copy_s - base) / per_pass)))

    # -- samples --------------------------------------------------------------------------
    def reset(self):
        host = self.buf.view(np.uint32)
        host[:] = self.x0
        if self.st.managed:
            self.session.prefetch(self.buf.device_ptr, self.nbytes, "host")
        if self.copies:
            self.out.host.fill(0xFF)  # poison: the check proves the copies wrote
        self.session.synchronize()

    def _to_device(self, off, length, stream):
        if self.copies:
            self.session.cuda.memcpy_htod_async(self.buf.device_ptr + off, self.buf.host[off:off + length], stream)
        elif self.st.managed:
            self.session.prefetch(self.buf.device_ptr + off, length, "device", stream)

    def _to_host(self, off, length, stream):
        if self.copies:
            self.session.cuda.memcpy_dtoh_async(self.out.host[off:off + length], self.buf.device_ptr + off, stream)
        elif self.st.managed:
            self.session.prefetch(self.buf.device_ptr + off, length, "host", stream)

    def sample(self, timer):
        s, n = self.session, self.nbytes
        moves = self.st.moves_data
        if moves:
            with timer.phase("h2d", bytes=n, ceiling="pcie"):
                self._to_device(0, n, s.stream)
        with timer.phase("kernel", bytes=2 * n, ceiling=strategies.kernel_ceiling(self.st, in_place=True)):
            self._launch(0, n, self.iters, s.stream)
        if moves:
            with timer.phase("d2h", bytes=n, ceiling="pcie"):
                self._to_host(0, n, s.stream)
        if self.copies:  # the serial pass wrote the destination: spot-check it before the pipelined one
            s.synchronize()
            got = self.out.view(np.uint32)[self.spots]
            check_equal("serial pass", got, self.expected[self.spots])
        with timer.phase("pipelined", bytes=2 * n if moves else 0, ceiling="pcie-duplex" if moves else ""):
            self.t0.record(s.stream)
            for i, (off, length) in enumerate(self.parts):  # (the events of chunk 0's first op open the span)
                stream = self.streams[i % self.nstreams]
                (h0, h1), (k0, k1), (d0, d1) = self.events[i]
                with nvtx.range(f"chunk {i} stream {i % self.nstreams}", category="chunk"):
                    if moves:
                        h0.record(stream)
                        self._to_device(off, length, stream)
                        h1.record(stream)
                    k0.record(stream)
                    self._launch(off, length, self.iters, stream)
                    k1.record(stream)
                    if moves:
                        d0.record(stream)
                        self._to_host(off, length, stream)
                        d1.record(stream)
            self.t_end.record(s.stream)  # the legacy stream waits for every stream: the pipeline's end
        first = self.events[0][0 if moves else 1][0]
        self.t_end.synchronize()
        timer.set_gpu_time("pipelined", self.t_end.time_since(first) / 1e3)
        busy = {}
        for j, engine in enumerate(ENGINES):
            if engine != "kernel" and not moves:
                continue
            spans = [(ev[j][0].time_since(self.t0), ev[j][1].time_since(self.t0)) for ev in self.events]
            busy[f"{engine}_busy_s"] = busy_time(spans) / 1e3
        timer.sample.extra.setdefault("pipelined", {}).update(busy)

    def verify(self):
        got = (self.out if self.copies else self.buf).view(np.uint32)
        check_equal("pipelined output", got, self.expected)

    def finish_rows(self, rows):
        by = {r["phase"]: r for r in rows}
        pipe = by.get("pipelined")
        if pipe is None:
            return
        wall = pipe["time_median_s"]
        busiest = max(pipe.get(f"{e}_busy_s", 0.0) for e in ENGINES)
        serial = sum(by[p]["time_median_s"] for p in ENGINES if p in by)
        facts = {"overlap_efficiency": busiest / wall if wall > 0 else float("nan"),
                 "speedup": serial / wall if wall > 0 else float("nan"), "serial_s": serial}
        for r in rows:
            r.update(facts)

    def close(self):
        if self.buf is not None:
            self.st.free(self.session, self.buf)
        if self.out is not None:
            self.out_st.free(self.session, self.out)
        self.buf = self.out = None


def _merge(params):
    """A chunk larger than the buffer is not a case."""
    return None if params["chunk"] > params["bytes"] else params


OP = register(Op(
    name="overlap",
    about="a buffer in chunks through H2D → kernel → D2H on several streams: busy times, overlap efficiency, speedup",
    axes=AxisSet([
        AxisSpec("strategy", "choice", default=("pinned",), choices=STRATEGIES),
        AxisSpec("bytes", "size", default=(256 * 1024**2,), minimum=16),
        AxisSpec("chunk", "size", default=(4 * 1024**2,), minimum=16, about="bytes per chunk"),
        AxisSpec("streams", "int", default=(1, 2, 4), minimum=1, maximum=32),
        AxisSpec("compute", "float", default=(1.0,), minimum=0.0, maximum=100.0,
                 about="a chunk's kernel time over its H2D copy time (0.1 copy-bound, 1 balanced, 4 compute-bound)"),
    ]),
    default_kernel=KERNEL,
    kernel_signature=SIGNATURE,
    phases=("h2d", "kernel", "d2h", "pipelined"),
    run=OverlapRun,
    merge=_merge,
    sample_rate=1.5e9,  # the serial and the pipelined pass, host resets between
    counts_um=True,
))
