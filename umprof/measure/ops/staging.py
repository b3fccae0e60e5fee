"""``staging``: data that lives in pageable memory the application cannot pin, moved through a
ring of small pinned buffers (method ``pageable-staged``), beside cudaMemcpy from the same
pageable memory (``pageable``), from pinned memory (``pinned``: the link's own rate), and a
plain host copy of the same bytes (``host-copy``: the host memory's rate, the ceiling a ring
can reach).

The ring itself (:class:`~umprof.measure.staging_ring.StagingRing`) is what the ``pageable-staged``
strategy moves a loop's copies with; ``slots``, ``chunk`` and ``threads`` of 0 take its rule's
choice (:func:`~umprof.measure.staging_ring.ring_shape`), as the strategy does, and the host copy
runs on as many of the same engine's native threads (:class:`~umprof.measure.staging_ring.HostCopy`),
pinned to the CPUs near the GPU, unless ``threads`` says otherwise.
One phase per sample (``h2d`` or ``d2h``) by CUDA events around the whole transfer, host copies
included. The destination is checked in full; each case's extras say the ring it ran
(``ring_threads``, ``ring_slots``, ``ring_chunk``, ``ring_bytes``).
"""

from __future__ import annotations

import numpy as np

from umprof.core.axes import AxisSet, AxisSpec
from umprof.core.errors import CaseFailed
from umprof.measure.ops.base import CaseRun, Op, register
from umprof.measure.ops.transfer import byte_pattern
from umprof.measure.host_cpus import session_cpus
from umprof.measure.staging_ring import HostCopy, StagingRing, ring_shape
from umprof.measure.strategies import aligned_empty

METHODS = ("pageable", "pageable-staged", "pinned", "host-copy")


class StagingRun(CaseRun):
    verify_every_sample = False  # every sample moves the same bytes to the same place

    def __init__(self, ctx, case):
        super().__init__()
        p = case.params
        s = self.session = ctx.session
        cuda = s.cuda
        self.method, self.direction, n = p["method"], p["direction"], p["bytes"]
        self.nbytes, self.slots, self.chunk, self.threads = n, p["slots"], p["chunk"], p["threads"]
        self.handles, self.pool, self.ring = [], None, None
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
            if self.method == "host-copy":
                cpus = session_cpus(s)
                self.threads = self.threads or ring_shape(n, len(cpus)).threads
                self.pool = HostCopy(self.threads, cpus)
            if self.method == "pageable-staged":
                self.ring = StagingRing(s, n, threads=self.threads, slots=self.slots, chunk=self.chunk)
                self.threads = self.ring.threads
            if self.direction == "h2d":
                self.host[:] = self.pattern
            elif self.method != "host-copy":
                cuda.memcpy_htod(self.dev, self.pattern)
            else:
                self.other[:] = self.pattern
        except BaseException:
            self.close()
            raise
        ring = self.ring.shape if self.ring is not None else None
        self.extra.update(ring_bytes=ring.pinned_bytes if ring else 0, ring_slots=ring.slots if ring else 0,
                          ring_chunk=ring.chunk if ring else 0, ring_threads=self.threads or 0)

    def reset(self):
        if self.direction == "d2h":
            self.host.fill(0xFF)  # poison: the check proves the transfer wrote
        elif self.method == "host-copy":
            self.other.fill(0xFF)

    def sample(self, timer):
        cuda, s, n = self.session.cuda, self.session, self.nbytes
        if self.method == "host-copy":
            src, dst = (self.host, self.other) if self.direction == "h2d" else (self.other, self.host)
            with timer.phase(self.direction, bytes=n, gpu=False):
                self.pool.copy(dst, src)
            return
        with timer.phase(self.direction, bytes=n, ceiling="pcie"):
            if self.method == "pageable-staged":
                self.ring.h2d(int(self.dev), self.host) if self.direction == "h2d" else self.ring.d2h(self.host, int(self.dev))
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
            self.pool.close()
            self.pool = None
        if self.ring is not None:
            self.ring.close()
            self.ring = None
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
        AxisSpec("slots", "int", default=(0,), minimum=0, maximum=256, quiet_default=True,
                 about="pinned slots in the ring (0: the rule's)"),
        AxisSpec("chunk", "size", default=(0,), minimum=0, quiet_default=True, about="bytes per ring slot (0: the rule's)"),
        AxisSpec("threads", "int", default=(0,), minimum=0, maximum=256, quiet_default=True,
                 about="host threads copying into the ring, and in the host copy (0: the rule's)"),
    ]),
    phases=("h2d", "d2h"),
    run=StagingRun,
    merge=_merge,
    sample_rate=8e9,
    min_sample_s=1e-3,
))
