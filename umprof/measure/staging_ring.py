"""Pageable data moved through a ring of small pinned buffers: what an application does with
data in memory it cannot pin (the ``staging`` op measures it; the ``pageable-staged``
strategy moves a loop's copies with it).

H2D: the host copies chunk i+1 into a free slot (``threads`` threads, each a slice; numpy
releases the GIL for the copy) while the DMA of chunk i runs; a slot is reused once its DMA's
event has fired. D2H runs the other way: DMAs into the slots run ahead of the host copies out
of them. The ring's stream is a blocking one, so its copies wait for the work issued before
them on the legacy stream (a kernel that produced the data) and the legacy stream for them.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

MiB = 1024**2


def chunks(nbytes: int, chunk: int) -> list[tuple[int, int]]:
    """(offset, length) of each chunk; the last one may be shorter."""
    return [(off, min(chunk, nbytes - off)) for off in range(0, nbytes, chunk)]


def parallel_copy(pool, dst: np.ndarray, src: np.ndarray, threads: int) -> None:
    """dst[:] = src in ``threads`` contiguous slices at once."""
    n = src.size
    if pool is None or threads <= 1 or n < threads * 4096:
        np.copyto(dst, src)
        return
    step = -(-n // threads)
    list(pool.map(lambda a: np.copyto(dst[a:a + step], src[a:a + step]), range(0, n, step)))


class StagingRing:
    """``slots`` pinned buffers of ``chunk`` bytes, ``threads`` host copy threads, one stream."""

    def __init__(self, session, slots: int = 2, chunk: int = 32 * MiB, threads: int = 8):
        if slots < 2:
            raise ValueError("a staging ring needs at least 2 slots")
        cuda = self.cuda = session.cuda
        self.slots, self.chunk, self.threads = slots, chunk, threads
        self.ring, self.pool = [], None
        try:
            session.check_host_alloc(slots * chunk, "the staging ring's pinned memory")
            self.ring = [cuda.pagelocked_empty(chunk, np.uint8) for _ in range(slots)]
            self.events = [cuda.Event() for _ in range(slots)]
            self.stream = cuda.Stream()
            if threads > 1:
                self.pool = ThreadPoolExecutor(threads, thread_name_prefix="umprof-staging")
        except BaseException:
            self.close()
            raise

    def h2d(self, dev_ptr: int, host: np.ndarray) -> None:
        """Device memory at ``dev_ptr`` ← the uint8 array ``host``; returns when it has landed."""
        cuda, in_flight = self.cuda, [False] * self.slots
        for i, (off, length) in enumerate(chunks(host.size, self.chunk)):
            k = i % self.slots
            if in_flight[k]:
                self.events[k].synchronize()  # the slot's last DMA has read it
            slot = self.ring[k][:length]
            parallel_copy(self.pool, slot, host[off:off + length], self.threads)
            cuda.memcpy_htod_async(int(dev_ptr) + off, slot, self.stream)
            self.events[k].record(self.stream)
            in_flight[k] = True
        self.stream.synchronize()

    def d2h(self, host: np.ndarray, dev_ptr: int) -> None:
        """The uint8 array ``host`` ← device memory at ``dev_ptr``."""
        cuda, parts = self.cuda, chunks(host.size, self.chunk)

        def issue(i):
            off, length = parts[i]
            k = i % self.slots
            cuda.memcpy_dtoh_async(self.ring[k][:length], int(dev_ptr) + off, self.stream)
            self.events[k].record(self.stream)

        for i in range(min(self.slots, len(parts))):
            issue(i)
        for i, (off, length) in enumerate(parts):
            k = i % self.slots
            self.events[k].synchronize()  # chunk i has landed in its slot
            parallel_copy(self.pool, host[off:off + length], self.ring[k][:length], self.threads)
            if i + self.slots < len(parts):
                issue(i + self.slots)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None
        for r in self.ring:
            r.base.free()
        self.ring = []
