"""``staging``: data that lives in pageable memory the application cannot pin, moved through a
ring of small pinned buffers (method ``pageable-staged``), beside cudaMemcpy from the same
pageable memory (``pageable``), from pinned memory (``pinned``: the link's own rate), and a
plain host copy of the same bytes (``host-copy``: the host memory's rate, the ceiling a ring
can reach).

H2D through the ring: the host copies chunk i+1 into a free slot (``threads`` threads, each a
slice; numpy releases the GIL for the copy) while the DMA of chunk i runs; a slot is reused
once its copy's event has fired. D2H runs the other way: DMAs into the slots run ahead of the
host copies out of them. One phase per sample (``h2d`` or ``d2h``) by CUDA events around the
whole transfer, host copies included. The destination is checked in full.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from umprof.core.axes import AxisSet, AxisSpec
from umprof.core.errors import CaseFailed, CaseSkipped
from umprof.measure.ops.base import CaseRun, Op, register
from umprof.measure.ops.overlap import chunks
from umprof.measure.ops.transfer import byte_pattern
from umprof.measure.strategies import aligned_empty

METHODS = ("pageable", "pageable-staged", "pinned", "host-copy")


def parallel_copy(pool, dst: np.ndarray, src: np.ndarray, threads: int) -> None:
    """dst[:] = src in ``threads`` contiguous slices at once."""
    n = src.size
    if threads <= 1 or n < threads * 4096:
        np.copyto(dst, src)
        return
    step = -(-n // threads)
    list(pool.map(lambda a: np.copyto(dst[a:a + step], src[a:a + step]), range(0, n, step)))


class StagingRun(CaseRun):
    verify_every_sample = False  # every sample moves the same bytes to the same place

    def __init__(self, ctx, case):
        super().__init__()
        p = case.params
        s = self.session = ctx.session
        cuda = s.cuda
        self.method, self.direction, n = p["method"], p["direction"], p["bytes"]
        self.nbytes, self.slots, self.chunk, self.threads = n, p["slots"], p["chunk"], p["threads"]
        self.handles, self.pool = [], None
        s.check_host_alloc(2 * n)
        self.pattern = byte_pattern(n)
        try:
            if self.method == "pinned":
                self.host = cuda.pagelocked_empty(n, np.uint8)
                self.handles.append(self.host.base)
            else:
                self.host = aligned_empty(n)  # the application's pageable buffer
            if self.method == "host-copy":
                self.other = aligned_empty(n)
            else:
                s.check_device_alloc(n)
                self.dev = cuda.mem_alloc(n)
                self.handles.append(self.dev)
            if self.method in ("pageable-staged", "host-copy") and self.threads > 1:
                self.pool = ThreadPoolExecutor(self.threads, thread_name_prefix="umprof-staging")
            if self.method == "pageable-staged":
                if self.slots < 2:
                    raise CaseSkipped("a staging ring needs at least 2 slots")
                self.ring = [cuda.pagelocked_empty(self.chunk, np.uint8) for _ in range(self.slots)]
                self.handles += [r.base for r in self.ring]
                self.events = [cuda.Event() for _ in range(self.slots)]
                self.stream = cuda.Stream()
                self.parts = chunks(n, self.chunk)
            if self.direction == "h2d":
                self.host[:] = self.pattern
            elif self.method != "host-copy":
                cuda.memcpy_htod(self.dev, self.pattern)
            else:
                self.other[:] = self.pattern
        except BaseException:
            self.close()
            raise
        self.extra.update(ring_bytes=self.slots * self.chunk if self.method == "pageable-staged" else 0)

    def reset(self):
        if self.direction == "d2h":
            self.host.fill(0xFF)  # poison: the check proves the transfer wrote
        elif self.method == "host-copy":
            self.other.fill(0xFF)

    def _staged_h2d(self):
        cuda, dev = self.session.cuda, int(self.dev)
        in_flight = [False] * self.slots
        for i, (off, length) in enumerate(self.parts):
            k = i % self.slots
            if in_flight[k]:
                self.events[k].synchronize()  # the slot's last DMA has read it
            slot = self.ring[k][:length]
            parallel_copy(self.pool, slot, self.host[off:off + length], self.threads)
            cuda.memcpy_htod_async(dev + off, slot, self.stream)
            self.events[k].record(self.stream)
            in_flight[k] = True
        self.stream.synchronize()

    def _staged_d2h(self):
        cuda, dev, parts = self.session.cuda, int(self.dev), self.parts

        def issue(i):
            off, length = parts[i]
            k = i % self.slots
            cuda.memcpy_dtoh_async(self.ring[k][:length], dev + off, self.stream)
            self.events[k].record(self.stream)

        for i in range(min(self.slots, len(parts))):
            issue(i)
        for i, (off, length) in enumerate(parts):
            k = i % self.slots
            self.events[k].synchronize()  # chunk i has landed in its slot
            parallel_copy(self.pool, self.host[off:off + length], self.ring[k][:length], self.threads)
            if i + self.slots < len(parts):
                issue(i + self.slots)

    def sample(self, timer):
        cuda, s, n = self.session.cuda, self.session, self.nbytes
        if self.method == "host-copy":
            src, dst = (self.host, self.other) if self.direction == "h2d" else (self.other, self.host)
            with timer.phase(self.direction, bytes=n, gpu=False):
                parallel_copy(self.pool, dst, src, self.threads)
            return
        with timer.phase(self.direction, bytes=n, ceiling="pcie"):
            if self.method == "pageable-staged":
                self._staged_h2d() if self.direction == "h2d" else self._staged_d2h()
            elif self.direction == "h2d":
                cuda.memcpy_htod_async(self.dev, self.host, s.stream) if self.method == "pinned" \
                    else cuda.memcpy_htod(self.dev, self.host)
            else:
                cuda.memcpy_dtoh_async(self.host, self.dev, s.stream) if self.method == "pinned" \
                    else cuda.memcpy_dtoh(self.host, self.dev)

    def verify(self):
        if self.direction == "h2d" and self.method != "host-copy":
            got = np.empty(self.nbytes, np.uint8)
            self.session.cuda.memcpy_dtoh(got, self.dev)
        else:
            got = self.host if self.direction == "d2h" else self.other
        if not np.array_equal(got, self.pattern):
            bad = int(np.flatnonzero(got != self.pattern)[0])
            raise CaseFailed(f"{self.method} {self.direction}: byte {bad} is {got[bad]}, expected {self.pattern[bad]}")

    def close(self):
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None
        for h in self.handles:
            h.free()
        self.handles = []


def _merge(params):
    if params["method"] != "pageable-staged":  # the ring's axes shape the staged method alone
        params = {**params, "slots": None, "chunk": None}
        if params["method"] != "host-copy":
            params["threads"] = None
    return params


OP = register(Op(
    name="staging",
    about="pageable data through a ring of pinned buffers, beside cudaMemcpy from pageable and pinned memory",
    axes=AxisSet([
        AxisSpec("method", "choice", default=METHODS, choices=METHODS),
        AxisSpec("direction", "choice", default=("h2d", "d2h"), choices=("h2d", "d2h")),
        AxisSpec("bytes", "size", default=(256 * 1024**2,), minimum=4096),
        AxisSpec("slots", "int", default=(4,), minimum=1, maximum=64, about="pinned buffers in the ring"),
        AxisSpec("chunk", "size", default=(8 * 1024**2,), minimum=4096, about="bytes per ring slot"),
        AxisSpec("threads", "int", default=(4,), minimum=1, maximum=64, about="host threads copying into the ring"),
    ]),
    phases=("h2d", "d2h"),
    run=StagingRun,
    merge=_merge,
    sample_rate=8e9,
    min_sample_s=1e-3,
))
