"""Pageable data moved through a ring of pinned slots: what an application does with data in
memory it cannot pin. One engine for everything that stages: the ``staging`` op measures it, the
``pageable-staged`` strategy moves a loop's copies with it (so the calibration that prices the
staged plan measured this same ring).

H2D: the transfer is cut into slot-sized chunks; a pool of host threads copies chunks into free
slots, each thread a whole chunk (no barrier between threads: a slow thread delays its own chunk
alone), and the issuing thread starts each chunk's DMA, in order, as soon as its copy is done. A
slot is free again once the event recorded after its DMA has fired. D2H runs the other way: DMAs
into free slots run ahead, and each landed chunk is handed to a thread that copies it out. The
threads are pinned to the CPUs of the GPU's NUMA node (:mod:`umprof.measure.host_cpus`).

The ring's stream is a blocking one, so its copies wait for the work issued before them on the
legacy stream (a kernel that produced the data) and the legacy stream for them.

:func:`ring_shape` is the rule for threads, slot size and depth, from the sweep in
``scenarios/staging-sweep.toml`` (see the docs' staging guide for its figures).
"""

from __future__ import annotations

import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

MiB = 1024**2
GRANULE = 64 * 1024  # slots are whole 64 KiB pages
# The rule (ring_shape), from the sweep at 1 GiB each way on an H100 machine of 16 cores (2026-11-25,
# scenarios/staging-sweep.toml): H2D rose with threads, 30.9 GB/s on 4 and 43.8 on 12 at 8 MiB slots, and
# 4 MiB slots did as well as 8 (43.5 and 36.5 GB/s D2H against 43.8 and 34.3) while 2 MiB slots fell
# behind (28.2) and 16 MiB ones too (38.9). Smaller slots fill the pipe sooner (the first DMA waits for
# one slot's copy on one thread), so 4 MiB is the most a slot takes. 15 threads on 16 cores left the
# issuing thread without a core (D2H 21-36 GB/s): one core stays for it, and 12 threads at most.
MAX_THREADS = 12
MIN_CHUNK, MAX_CHUNK = 1 * MiB, 4 * MiB
DEPTH = 2  # slots per thread: one being copied, one in its DMA
INLINE_BYTES = 1 * MiB  # a transfer this small is copied on the calling thread: a handoff costs more


@dataclass(frozen=True)
class RingShape:
    """How a staging ring is built: ``threads`` copy threads, ``slots`` pinned slots of ``chunk`` bytes."""

    threads: int
    slots: int
    chunk: int

    @property
    def pinned_bytes(self) -> int:
        return self.slots * self.chunk


def ring_shape(nbytes: int, cpus: int, *, threads: int = 0, slots: int = 0, chunk: int = 0) -> RingShape:
    """The ring for transfers of up to ``nbytes`` on a host with ``cpus`` usable CPUs near the GPU.

    Threads: one fewer than the CPUs (the issuing thread keeps one), at most MAX_THREADS. Slot size:
    the buffer shared out over the threads, in whole 64 KiB pages, between 1 and 4 MiB (never more
    than the buffer). Depth: DEPTH slots a thread, no more than the buffer has chunks. A non-zero
    ``threads``, ``slots`` or ``chunk`` overrides the rule's choice (a sweep measures them).
    """
    nbytes = max(int(nbytes), 1)
    t = threads or max(1, min(MAX_THREADS, cpus - 1))
    if chunk:
        c = int(chunk)
    else:
        share = -(-nbytes // t)
        c = min(MAX_CHUNK, max(MIN_CHUNK, -(-share // GRANULE) * GRANULE))
    c = min(c, -(-nbytes // GRANULE) * GRANULE)
    n_chunks = -(-nbytes // c)
    s = slots or max(1, min(DEPTH * t, n_chunks))
    return RingShape(threads=t, slots=s, chunk=c)


def chunks(nbytes: int, chunk: int) -> list[tuple[int, int]]:
    """(offset, length) of each chunk; the last one may be shorter."""
    return [(off, min(chunk, nbytes - off)) for off in range(0, nbytes, chunk)]


def copy_pool(threads: int, cpus: list[int] | None, name: str = "umprof-staging") -> ThreadPoolExecutor | None:
    """``threads`` copy threads, each pinned to ``cpus`` (None: not pinned); None for one thread."""
    if threads <= 1:
        return None

    def pin():
        if cpus:
            try:
                os.sched_setaffinity(0, cpus)  # 0: the calling thread
            except (AttributeError, OSError):
                pass

    return ThreadPoolExecutor(threads, thread_name_prefix=name, initializer=pin)


def parallel_copy(pool, dst: np.ndarray, src: np.ndarray, threads: int) -> None:
    """dst[:] = src in ``threads`` contiguous slices at once (the host's parallel copy rate)."""
    n = src.size
    if pool is None or threads <= 1 or n < threads * 4096:
        np.copyto(dst, src)
        return
    step = -(-n // threads)
    list(pool.map(lambda a: np.copyto(dst[a:a + step], src[a:a + step]), range(0, n, step)))


class StagingRing:
    """The ring: ``shape.slots`` pinned slots of ``shape.chunk`` bytes, ``shape.threads`` copy
    threads pinned near the GPU, one stream. ``nbytes``: the largest transfer it will move (the
    rule sizes the ring to it); ``threads``/``slots``/``chunk``: overrides of the rule."""

    def __init__(self, session, nbytes: int, *, threads: int = 0, slots: int = 0, chunk: int = 0):
        from umprof.measure.host_cpus import session_cpus

        cuda = self.cuda = session.cuda
        self.cpus = session_cpus(session)
        self.shape = ring_shape(nbytes, len(self.cpus), threads=threads, slots=slots, chunk=chunk)
        if self.shape.slots < 1:
            raise ValueError("a staging ring needs at least one slot")
        self.ring, self.pool, self.events = [], None, []
        try:
            session.check_host_alloc(self.shape.pinned_bytes, "the staging ring's pinned memory")
            self.ring = [cuda.pagelocked_empty(self.shape.chunk, np.uint8) for _ in range(self.shape.slots)]
            self.events = [cuda.Event() for _ in range(self.shape.slots)]
            self.stream = cuda.Stream()
            self.pool = copy_pool(self.shape.threads, self.cpus)
        except BaseException:
            self.close()
            raise

    @property
    def slots(self) -> int:
        return self.shape.slots

    @property
    def chunk(self) -> int:
        return self.shape.chunk

    @property
    def threads(self) -> int:
        return self.shape.threads

    def _submit(self, dst, src):
        if self.pool is None:
            np.copyto(dst, src)
            return None
        return self.pool.submit(np.copyto, dst, src)

    def _drain(self, futures) -> None:
        """After a failure: let every copy in flight finish before the slots can be freed."""
        for f in futures:
            if f is not None:
                f.cancel() or f.exception()
        self.stream.synchronize()

    def h2d(self, dev_ptr: int, host: np.ndarray) -> None:
        """Device memory at ``dev_ptr`` ← the uint8 array ``host``; returns when it has landed."""
        cuda, dev = self.cuda, int(dev_ptr)
        if host.size == 0:
            return
        if host.size <= INLINE_BYTES and host.size <= self.chunk:
            slot = self.ring[0][:host.size]
            np.copyto(slot, host)
            cuda.memcpy_htod_async(dev, slot, self.stream)
            self.stream.synchronize()
            return
        parts = chunks(host.size, self.chunk)
        free, copying, moving = deque(range(self.slots)), deque(), deque()
        nxt = 0
        try:
            while nxt < len(parts) or copying:
                while nxt < len(parts) and free:  # every free slot gets a chunk to fill
                    k, (off, length) = free.popleft(), parts[nxt]
                    copying.append((self._submit(self.ring[k][:length], host[off:off + length]), k, off, length))
                    nxt += 1
                fut, k, off, length = copying.popleft()  # the oldest copy: its DMA goes next
                if fut is not None:
                    fut.result()
                cuda.memcpy_htod_async(dev + off, self.ring[k][:length], self.stream)
                self.events[k].record(self.stream)
                moving.append(k)
                while moving and self.events[moving[0]].query():  # DMAs done: their slots are free
                    free.append(moving.popleft())
                if not free and not copying and nxt < len(parts):
                    k = moving.popleft()
                    self.events[k].synchronize()
                    free.append(k)
            self.stream.synchronize()
        except BaseException:
            self._drain([c[0] for c in copying])
            raise

    def d2h(self, host: np.ndarray, dev_ptr: int) -> None:
        """The uint8 array ``host`` ← device memory at ``dev_ptr``."""
        cuda, dev = self.cuda, int(dev_ptr)
        if host.size == 0:
            return
        if host.size <= INLINE_BYTES and host.size <= self.chunk:
            slot = self.ring[0][:host.size]
            cuda.memcpy_dtoh_async(slot, dev, self.stream)
            self.stream.synchronize()
            np.copyto(host, slot)
            return
        parts = chunks(host.size, self.chunk)
        free, moving, copying = deque(range(self.slots)), deque(), deque()
        nxt = done = 0
        try:
            while done < len(parts):
                while nxt < len(parts) and free:  # DMAs into every free slot run ahead
                    k, (off, length) = free.popleft(), parts[nxt]
                    cuda.memcpy_dtoh_async(self.ring[k][:length], dev + off, self.stream)
                    self.events[k].record(self.stream)
                    moving.append((k, off, length))
                    nxt += 1
                if moving:  # the oldest DMA: once landed, a thread copies it out
                    k, off, length = moving.popleft()
                    self.events[k].synchronize()
                    copying.append((self._submit(host[off:off + length], self.ring[k][:length]), k))
                while copying and (copying[0][0] is None or copying[0][0].done()):
                    fut, k = copying.popleft()
                    if fut is not None:
                        fut.result()
                    free.append(k)
                    done += 1
                if copying and not moving and (not free or nxt >= len(parts)):
                    fut, k = copying.popleft()
                    fut.result()
                    free.append(k)
                    done += 1
        except BaseException:
            self._drain([c[0] for c in copying])
            raise

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None
        for r in self.ring:
            r.base.free()
        self.ring = []
