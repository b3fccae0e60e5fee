"""Pageable data moved through a ring of pinned slots: what an application does with data in
memory it cannot pin. One engine for everything that stages: the ``staging`` op measures it, the
``pageable-staged`` strategy moves a loop's copies with it (so the calibration that prices the
staged plan measured this same ring), and the host's parallel copy (the ring's host-side ceiling)
runs on the same threads.

The engine is native (``kernels/staging_ring.c``, built by :mod:`umprof.measure.hostlib`): its
threads copy and start DMAs without Python's lock, which a ring of Python threads waited for at
every hand-off (see the docs' staging guide). Each of ``threads`` lanes has its own stream and
``slots / threads`` pinned slots; the lanes take chunks in turn from a shared counter, so a slow
lane delays its own chunks alone. H2D: a lane waits for its slot's last DMA, copies the next chunk
in and starts its DMA. D2H: a lane's DMAs run ahead into its slots; it copies out the oldest once
it has landed and starts the next one there. The threads are pinned to the CPUs of the GPU's NUMA
node (:mod:`umprof.measure.host_cpus`).

The lanes' streams are blocking ones, so their copies wait for the work issued before them on the
legacy stream (a kernel that produced the data) and the legacy stream for them.

:func:`ring_shape` is the rule for threads, slot size and depth, from the sweep in
``scenarios/staging-sweep.toml`` (see the docs' staging guide for its figures).
"""

from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass

import numpy as np

MiB = 1024**2
GRANULE = 64 * 1024  # slots are whole 64 KiB pages
# The rule (ring_shape), from the sweep at 1 GiB each way on an H100 machine of 16 cores (2026-11-25,
# scenarios/staging-sweep.toml): H2D rose with threads, 30.9 GB/s on 4 and 43.8 on 12 at 8 MiB slots, and
# 4 MiB slots did as well as 8 (43.5 and 36.5 GB/s D2H against 43.8 and 34.3) while 2 MiB slots fell
# behind (28.2) and 16 MiB ones too (38.9). Smaller slots fill the pipe sooner (the first DMA waits for
# one slot's copy on one thread), so 4 MiB is the most a slot takes. 15 threads on 16 cores left the
# issuing thread without a core (D2H 21-36 GB/s): one core stays for the calling thread and the driver's,
# and 12 threads at most.
MAX_THREADS = 12
MIN_CHUNK, MAX_CHUNK = 1 * MiB, 4 * MiB
# Transfers up to INLINE_BYTES run on the calling thread (lane 0's slots and stream; one chunk always
# did). In the verification runs of 2026-11-26 a loop sending 2 MiB each step through two lanes
# measured 0.27-0.28 ms a copy where cudaMemcpy from the same pageable memory took 0.17-0.19, and the
# host's next write of the buffer 0.23-0.33 ms against 0.16-0.19 (H200, H100): the lanes' wake-up, and
# the buffer's lines left in their cores' caches. benchmarks/staging_context.py --small (2026-11-26): at 2 MiB
# the write and the copy took 0.39-0.45 ms on the calling thread and 0.48-0.64 on two threads (H100, two runs),
# 0.35 and 0.51 (H200); at 4 MiB the threads' copy was the faster (0.32 against 0.45 ms on the H100) and the
# write after it the slower, which a loop that writes less of its buffer does not pay: threads from there.
INLINE_BYTES = 2 * MiB
DEPTH = 2  # slots per thread: one being copied, one in its DMA
MAX_DEPTH = 64  # the engine's limit of slots a thread


@dataclass(frozen=True)
class RingShape:
    """How a staging ring is built: ``threads`` copy threads, ``slots`` pinned slots of ``chunk`` bytes;
    transfers up to ``inline_bytes`` run on the calling thread."""

    threads: int
    slots: int
    chunk: int
    inline_bytes: int = INLINE_BYTES

    @property
    def pinned_bytes(self) -> int:
        return self.slots * self.chunk

    @property
    def depth(self) -> int:
        """Slots a thread (every thread has as many)."""
        return self.slots // self.threads

    def transfer(self, nbytes: int) -> tuple[int, bool]:
        """(chunk, on_caller) for one transfer of ``nbytes`` through this ring. Up to ``inline_bytes`` it
        runs on the calling thread, cut over lane 0's slots as a ring of its own size would cut it (a
        1.5 MiB part of a large buffer in two chunks, one copied beside the other's DMA); past it, on
        the threads in chunks of a slot, as a whole buffer goes: a 6 MiB part of a ring of 4 MiB slots
        in 4 + 2 MiB over two threads, not 1 MiB chunks over six, because every thread that reads the
        buffer leaves its lines in that thread's core, and the application's next write of them pays
        for it (benchmarks/staging_context.py --parts: on an H100, 2026-11-26, six 1 MiB chunks sent
        6 MiB in 0.37 ms against 0.52 but the host's next write of it took 0.93 ms against 0.63; two
        later runs found a ring of the part's size 8-20% faster at 6-8 MiB, and at 16 MiB all three
        found whole slots faster: see the docs' staging guide). One chunk runs on the calling thread too."""
        on_caller = nbytes <= self.inline_bytes
        c = min(self.chunk, _share(nbytes, self.depth)) if on_caller else self.chunk
        return c, on_caller or nbytes <= c


def ring_shape(nbytes: int, cpus: int, *, threads: int = 0, slots: int = 0, chunk: int = 0,
               inline_bytes: int = INLINE_BYTES) -> RingShape:
    """The ring for transfers of up to ``nbytes`` on a host with ``cpus`` usable CPUs near the GPU.

    Threads: one fewer than the CPUs (the calling thread keeps one), at most MAX_THREADS; one where
    every transfer fits ``inline_bytes`` (the calling thread moves them with lane 0's slots, each
    slot's copy beside the other's DMA). Slot size: the buffer shared out over the threads (over
    DEPTH slots on the calling thread), in whole 64 KiB pages, between 1 and 4 MiB (never more than
    the buffer). Depth: DEPTH slots a thread, no more than the buffer has chunks. A non-zero
    ``threads``, ``slots`` or ``chunk`` overrides the rule's choice (a sweep measures them). Every
    thread has as many slots as the others: no more threads than slots, and slots a whole number a
    thread (at most MAX_DEPTH).
    """
    nbytes = max(int(nbytes), 1)
    on_caller = nbytes <= inline_bytes
    t = threads or (1 if on_caller else max(1, min(MAX_THREADS, cpus - 1)))
    c = int(chunk) or _share(nbytes, DEPTH if on_caller else t)  # on the caller: its copies beside its own DMAs
    c = min(c, -(-nbytes // GRANULE) * GRANULE)
    n_chunks = -(-nbytes // c)
    s = slots or max(1, min(DEPTH * t, n_chunks))
    t = min(t, s)  # each thread a lane with slots of its own, as many a lane
    return RingShape(threads=t, slots=min(s // t, MAX_DEPTH) * t, chunk=c, inline_bytes=inline_bytes)


def _share(nbytes: int, parts: int) -> int:
    """``nbytes`` shared out over ``parts``, in whole 64 KiB pages, between MIN_CHUNK and MAX_CHUNK."""
    share = -(-max(int(nbytes), 1) // max(parts, 1))
    return min(MAX_CHUNK, max(MIN_CHUNK, -(-share // GRANULE) * GRANULE))


def chunks(nbytes: int, chunk: int) -> list[tuple[int, int]]:
    """(offset, length) of each chunk; the last one may be shorter."""
    return [(off, min(chunk, nbytes - off)) for off in range(0, nbytes, chunk)]


# The driver's functions the engine calls, in the order of its table (kernels/staging_ring.c's driver_t).
DRIVER_FUNCTIONS = ("cuCtxGetCurrent", "cuCtxSetCurrent", "cuStreamCreate", "cuStreamDestroy_v2",
                    "cuStreamSynchronize", "cuEventCreate", "cuEventDestroy_v2", "cuEventRecord",
                    "cuEventSynchronize", "cuMemcpyHtoDAsync_v2", "cuMemcpyDtoHAsync_v2")
H2D, D2H, COPY = 0, 1, 2
LOG_FIELDS = ("copy_start", "copy_end", "dma_issued", "thread")  # per chunk, in a transfer's log
ERR_SETUP = 999  # the engine's own code: it could not build the ring


@functools.lru_cache(maxsize=1)
def _engine() -> ctypes.CDLL:
    """The native engine's library, its functions typed (once per process)."""
    from umprof.measure.hostlib import load

    lib = load("staging_ring")
    vp, sz = ctypes.c_void_p, ctypes.c_size_t
    lib.umprof_ring_open.argtypes = [vp, ctypes.c_int, ctypes.c_int, sz, vp, vp, ctypes.c_int, ctypes.POINTER(vp)]
    lib.umprof_ring_run.argtypes = [vp, ctypes.c_int, ctypes.c_uint64, vp, vp, sz, sz, ctypes.c_int, vp]
    lib.umprof_ring_close.argtypes = [vp]
    lib.umprof_ring_close.restype = None
    return lib


@functools.lru_cache(maxsize=1)
def _driver() -> ctypes.Array:
    """libcuda's functions in the engine's order (kept for the process: rings hold its pointers)."""
    from umprof.measure.hostlib import driver_table

    return driver_table(DRIVER_FUNCTIONS)


def prepare() -> None:
    """Build or load the engine and look up the driver's functions, once per process: what the first
    ring would otherwise pay inside the allocation a loop times (nvcc's version asked for the cache's
    key, the library opened: 0.05-0.4 s)."""
    _engine()
    _driver()


def _error(rc: int, what: str) -> RuntimeError:
    """The engine's failure, named as the driver names it where it can."""
    if rc == ERR_SETUP:
        return RuntimeError(f"the staging ring could not {what}: its threads or memory could not be set up")
    name = str(rc)
    try:
        from umprof.measure.hostlib import libcuda

        text = ctypes.c_char_p()
        if libcuda().cuGetErrorName(rc, ctypes.byref(text)) == 0 and text.value:
            name = text.value.decode()
    except Exception:  # no driver to name it (a stand-in's code): the number says it
        pass
    return RuntimeError(f"the staging ring could not {what}: CUDA error {name}")


class _Native:
    """One native ring: ``lanes`` threads pinned to ``cpus``, each with ``depth`` of the ``slots``
    (pointers to pinned memory of ``slot_bytes``; none: the host copy alone). ``table``: the
    driver's functions (None: libcuda's)."""

    def __init__(self, lanes: int, depth: int, slot_bytes: int, slots: list[int] | None, cpus: list[int] | None,
                 table=None):
        self.lib = _engine()
        self.handle = ctypes.c_void_p()
        if slots is not None and table is None:
            table = _driver()
        self._table = table  # kept alive: the engine holds its pointers
        slot_ptrs = (ctypes.c_void_p * len(slots))(*slots) if slots is not None else None
        cpu_list = (ctypes.c_int * len(cpus or []))(*(cpus or []))
        rc = self.lib.umprof_ring_open(table if slots is not None else None, lanes, depth, slot_bytes, slot_ptrs,
                                       cpu_list, len(cpus or []), ctypes.byref(self.handle))
        if rc:
            raise _error(rc, "start")

    def host_copy(self, dst: np.ndarray, src: np.ndarray) -> None:
        """dst[:] = src (uint8 arrays of one size) on the ring's threads, a contiguous slice each."""
        if dst.size != src.size:
            raise ValueError(f"a host copy needs arrays of one size, got {dst.size} and {src.size} bytes")
        src, dst = _bytes(src, "the source"), _bytes(dst, "the destination")
        # a host copy is cut into one slice a thread by the engine: no chunk, never on the caller
        self._call(COPY, 0, src, dst.ctypes.data, 0, False, None, "copy on the host")

    def transfer(self, kind: int, dev: int, host: np.ndarray, chunk: int, on_caller: bool, log: np.ndarray | None,
                 what: str) -> None:
        """One transfer (H2D, D2H) between ``host`` and device memory at ``dev``, in chunks of ``chunk``
        bytes, on the calling thread where ``on_caller`` (RingShape.transfer decides both)."""
        self._call(kind, dev, host, None, chunk, on_caller, log, what)

    def _call(self, kind: int, dev: int, host: np.ndarray, other: int | None, chunk: int, on_caller: bool,
              log: np.ndarray | None, what: str) -> None:
        rc = self.lib.umprof_ring_run(self.handle, kind, dev, host.ctypes.data, other, host.size, chunk,
                                      int(on_caller), None if log is None else log.ctypes.data)
        if rc:
            raise _error(rc, what)

    def close(self) -> None:
        if self.handle:
            self.lib.umprof_ring_close(self.handle)
            self.handle = None


def _log_for(nbytes: int, chunk: int, log: bool) -> np.ndarray | None:
    return np.full((-(-nbytes // chunk), len(LOG_FIELDS)), np.nan) if log and nbytes else None


def _bytes(a: np.ndarray, what: str) -> np.ndarray:
    if not (a.flags.c_contiguous and a.dtype == np.uint8):
        raise ValueError(f"the staging ring moves contiguous uint8 arrays; {what} is {a.dtype}, "
                         f"{'' if a.flags.c_contiguous else 'not '}contiguous")
    return a


class HostCopy:
    """The host's parallel copy on ``threads`` native threads pinned to ``cpus``: each copies one of
    ``threads`` contiguous slices (the rate a staging ring's host side can reach)."""

    def __init__(self, threads: int, cpus: list[int] | None):
        self.threads = max(1, int(threads))
        self.engine = _Native(self.threads, 1, 1, None, cpus)

    def copy(self, dst: np.ndarray, src: np.ndarray) -> None:
        """dst[:] = src (uint8 arrays of one size)."""
        self.engine.host_copy(dst, src)

    def close(self) -> None:
        self.engine.close()


class StagingRing:
    """The ring: ``shape.slots`` pinned slots of ``shape.chunk`` bytes, ``shape.threads`` native copy
    threads pinned near the GPU, a stream each. ``nbytes``: the largest transfer it will move (the
    rule sizes the ring to it); ``threads``/``slots``/``chunk``: overrides of the rule; ``inline_bytes``:
    transfers up to this size run on the calling thread (INLINE_BYTES); ``driver``: the driver's
    function table (None: libcuda's; the tests pass a stand-in)."""

    def __init__(self, session, nbytes: int, *, threads: int = 0, slots: int = 0, chunk: int = 0,
                 inline_bytes: int = INLINE_BYTES, driver=None):
        from umprof.measure.host_cpus import session_cpus

        cuda = session.cuda
        self.cpus = session_cpus(session)
        self.shape = ring_shape(nbytes, len(self.cpus), threads=threads, slots=slots, chunk=chunk,
                                inline_bytes=inline_bytes)
        self.ring, self.engine = [], None
        try:
            session.check_host_alloc(self.shape.pinned_bytes, "the staging ring's pinned memory")
            self.ring = [cuda.pagelocked_empty(self.shape.chunk, np.uint8) for _ in range(self.shape.slots)]
            self.engine = _Native(self.shape.threads, self.shape.depth, self.shape.chunk,
                                  [r.ctypes.data for r in self.ring], self.cpus, driver)
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

    def h2d(self, dev_ptr: int, host: np.ndarray, log: bool = False) -> np.ndarray | None:
        """Device memory at ``dev_ptr`` ← the uint8 array ``host``; returns when it has landed. ``log``:
        return, a row a chunk, when its copy began and ended and its DMA was issued (s from the call's
        start) and which thread copied it (-1: the calling thread), as in LOG_FIELDS."""
        return self._move(H2D, dev_ptr, _bytes(host, "the source"), log, "copy to the GPU")

    def d2h(self, host: np.ndarray, dev_ptr: int, log: bool = False) -> np.ndarray | None:
        """The uint8 array ``host`` ← device memory at ``dev_ptr``; ``log`` as in :meth:`h2d`."""
        return self._move(D2H, dev_ptr, _bytes(host, "the destination"), log, "copy from the GPU")

    def _move(self, kind: int, dev_ptr: int, host: np.ndarray, log: bool, what: str) -> np.ndarray | None:
        chunk, on_caller = self.shape.transfer(host.size)
        rows = _log_for(host.size, chunk, log)
        self.engine.transfer(kind, int(dev_ptr), host, chunk, on_caller, rows, what)
        return rows

    def host_copy(self, dst: np.ndarray, src: np.ndarray) -> None:
        """dst[:] = src on the ring's threads, in contiguous slices: the host side's ceiling."""
        self.engine.host_copy(dst, src)

    def close(self) -> None:
        if self.engine is not None:
            self.engine.close()  # its threads stopped, its streams idle: the slots can go
            self.engine = None
        for r in self.ring:
            r.base.free()
        self.ring = []
