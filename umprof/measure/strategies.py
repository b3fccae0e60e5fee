"""Host-memory strategies: how a buffer is allocated and how its data reaches the GPU.

Every strategy hands out a :class:`Buffer`: a numpy view the host reads and writes, and a
device pointer a kernel uses. ``to_device``/``to_host`` move the data where the strategy
moves it (explicit copies, prefetches) and do nothing where kernels reach the data in place
(zero-copy, mapped, managed on demand, system). Allocation and movement use the session's
guards, so an allocation that cannot fit is skipped with the reason instead of failing.
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass, field

import numpy as np

from umprof.core.units import format_size

PAGE = 4096


@dataclass
class Buffer:
    strategy: "Strategy"
    nbytes: int
    host: np.ndarray  # uint8 view of the host side (for managed: the managed range itself)
    device_ptr: int  # what a kernel dereferences
    handles: dict = field(default_factory=dict)  # what free() releases

    def view(self, dtype) -> np.ndarray:
        return self.host.view(dtype)


# How pageable memory's pages are backed, which decides what its first touch and its page-locking cost:
# "numpy": a numpy array, as a Python program's buffers are (numpy advises the kernel to back arrays of
# 4 MiB and more with huge pages); "malloc": a fresh anonymous mapping with no advice, as a C or C++
# program's malloc'd (or new'd) buffer of that size is (glibc maps allocations of 128 KiB and more on their
# own). On a host whose transparent huge pages are given only where advised (the H100 and H200 hosts of
# 2026-11, 16 cores), the malloc'd buffer faults in 4 KiB at a time: 1 GiB's first write took 0.46-0.60 s against
# numpy's 0.15-0.23 s, its registration 0.26-0.35 s against 0.14-0.23 s (results/first-touch/).
HOST_PAGES = ("numpy", "malloc")


def aligned_empty(nbytes: int, align: int = PAGE) -> np.ndarray:
    """Pageable host memory, page aligned (as malloc'd application buffers of this size are)."""
    raw = np.empty(nbytes + align, dtype=np.uint8)
    offset = (-raw.ctypes.data) % align
    return raw[offset:offset + nbytes]


def pageable_empty(nbytes: int, pages: str = "numpy") -> np.ndarray:
    """Pageable host memory backed as ``pages`` says (HOST_PAGES), untouched. A "malloc" buffer is its own
    mapping: the kernel unmaps it when the array and every view of it are gone."""
    if pages == "numpy":
        return aligned_empty(nbytes)
    if pages != "malloc":
        raise ValueError(f"pages: expected one of {', '.join(HOST_PAGES)}, got {pages!r}")
    mapping = mmap.mmap(-1, max(nbytes, 1), flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS,
                        prot=mmap.PROT_READ | mmap.PROT_WRITE)
    return np.frombuffer(mapping, dtype=np.uint8, count=nbytes)


def release_pages(host: np.ndarray) -> None:
    """Give a "malloc" buffer's pages back to the kernel now, as a C program's free() of it does (glibc
    munmaps an allocation of its own mapping): each touched page unmapped and freed, which the applications'
    traces measured at 0.04-0.05 s a GiB of 4 KiB pages on H100 and H200 hosts (2026-11). madvise(MADV_DONTNEED)
    does that work on the mapping in place, so the arrays that still view it stay valid (they would read
    zeros) and the munmap left to the garbage collector finds nothing to free. numpy's pages are left to
    numpy, as a Python program's are."""
    base = host
    while isinstance(base, np.ndarray):
        base = base.base
    mapping = base.obj if isinstance(base, memoryview) else None
    if isinstance(mapping, mmap.mmap) and not mapping.closed:
        mapping.madvise(mmap.MADV_DONTNEED)


class Strategy:
    """A host-memory kind. Subclasses set the flags and implement allocate/free."""

    name = ""
    about = ""
    moves_data = False  # has to_device / to_host steps (copies or prefetches)
    over_link = False  # kernels read the data across PCIe (zero-copy, mapped, system)
    managed = False
    malloc_backed = False  # its host side is the application's pageable buffer (backed as HOST_PAGES says)
    # its host pages fault in where first touched, by the host or by a copy landing in them (malloc'd memory
    # nothing page-locks): an output buffer the host never wrote faults in as the first copy back arrives
    pages_fault_on_copy = False
    pages_migrate = False  # the driver migrates its pages (managed, HMM system memory): CUPTI's UM counters see it
    advice = None  # managed memory's cuMemAdvise ("read-mostly", "prefer-gpu", ...), else None
    copies = False  # explicit cudaMemcpy between a host buffer and a cudaMalloc'd one
    pipelined = False  # a plan for the loop op: each iteration chunk by chunk over streams (loop only)
    # makes an application's own copies, which the loop's ``copies`` splits into parts: not memory that
    # kernels reach where it is (no copies), nor a plan that moves the buffer its own way
    copies_in_parts = False

    def unsupported(self, info) -> str | None:
        """Why this strategy cannot run on the device (``DeviceInfo``), or None."""
        return None

    def prepare(self) -> None:
        """Build or load what the strategy needs once per process, before anything is timed (nothing for most)."""

    def allocate(self, session, nbytes: int, pages: str = "numpy") -> Buffer:
        """A buffer of ``nbytes``; ``pages`` backs a ``malloc_backed`` strategy's pageable buffer (HOST_PAGES),
        and the strategies that allocate memory of their own ignore it."""
        raise NotImplementedError

    def to_device(self, session, buf: Buffer, nbytes: int | None = None) -> None:
        """Move the buffer's first ``nbytes`` (default: all of it) to where kernels read it."""

    def to_host(self, session, buf: Buffer, nbytes: int | None = None) -> None:
        """Move the buffer's first ``nbytes`` (default: all of it) back to where the host reads it."""

    def reset(self, session, buf: Buffer) -> None:
        """Put the data back where a sample starts (host); untimed, between samples."""

    def free(self, session, buf: Buffer) -> None:
        raise NotImplementedError


class _Explicit(Strategy):
    """Host memory of some kind + a cudaMalloc'd buffer + explicit copies."""

    moves_data = True
    copies = True
    copies_in_parts = True
    host_flags = None  # None: pageable; else pycuda host_alloc_flags

    def allocate(self, session, nbytes, pages="numpy"):
        cuda = session.cuda
        session.check_device_alloc(nbytes)
        session.check_host_alloc(nbytes)
        host = self._host_alloc(session, nbytes, pages)
        dev = cuda.mem_alloc(max(nbytes, 1))
        return Buffer(self, nbytes, host, int(dev), {"device": dev, "host": host})

    def _host_alloc(self, session, nbytes, pages):
        if self.host_flags is None:
            return pageable_empty(nbytes, pages)
        return session.cuda.pagelocked_empty(nbytes, np.uint8, mem_flags=self.host_flags(session.cuda))

    def to_device(self, session, buf, nbytes=None):
        cuda = session.cuda
        host = buf.host if nbytes is None else buf.host[:nbytes]
        if self.host_flags is None:
            cuda.memcpy_htod(buf.device_ptr, host)
        else:
            cuda.memcpy_htod_async(buf.device_ptr, host, session.stream)

    def to_host(self, session, buf, nbytes=None):
        cuda = session.cuda
        host = buf.host if nbytes is None else buf.host[:nbytes]
        if self.host_flags is None:
            cuda.memcpy_dtoh(host, buf.device_ptr)
        else:
            cuda.memcpy_dtoh_async(host, buf.device_ptr, session.stream)

    def copy_parts(self, session, buf, nbytes: int, parts: int, to_device: bool) -> None:
        """The buffer's first ``nbytes`` moved one way as an application moves records: in
        ``parts`` equal copies (4-byte aligned), each a synchronous cudaMemcpy, one after another.
        Many small copies pay each call's latency more than their bytes, whatever the host memory."""
        cuda = session.cuda
        edges = [4 * (nbytes // 4 * i // parts) for i in range(parts + 1)]
        for a, b in zip(edges, edges[1:]):
            if b > a:
                if to_device:
                    cuda.memcpy_htod(buf.device_ptr + a, buf.host[a:b])
                else:
                    cuda.memcpy_dtoh(buf.host[a:b], buf.device_ptr + a)

    def free(self, session, buf):
        buf.handles.pop("device").free()
        self._host_free(session, buf.handles.pop("host"))

    def _host_free(self, session, host):
        if self.host_flags is not None:
            host.base.free()
        else:
            release_pages(host)


class Pageable(_Explicit):
    name = "pageable"
    malloc_backed = True
    pages_fault_on_copy = True
    about = "malloc'd host memory; the driver stages each copy through its own pinned buffer"


class Pinned(_Explicit):
    name = "pinned"
    about = "page-locked host memory (cuMemHostAlloc); copies run at the link's speed"
    host_flags = staticmethod(lambda cuda: 0)


class WriteCombined(_Explicit):
    name = "write-combined"
    about = "pinned, write-combined: fast host writes and H2D, very slow host reads"
    host_flags = staticmethod(lambda cuda: cuda.host_alloc_flags.WRITECOMBINED)


class PageableRegistered(_Explicit):
    """The application's malloc'd buffer page-locked where it lies (cuMemHostRegister): no new
    allocation and no change to the code that fills it, copies at the link's rate after. Pinning
    every page costs time at setup (and cuMemHostUnregister at the end), in proportion to the
    bytes: the calibration's setup loop measures it, and it pays back over enough copies."""

    name = "pageable-registered"
    about = "an existing malloc'd buffer page-locked in place (cuMemHostRegister); copies at the link's rate"
    host_flags = staticmethod(lambda cuda: 0)  # its copies are asynchronous, as pinned memory's are
    malloc_backed = True

    def _host_alloc(self, session, nbytes, pages):
        host = pageable_empty(nbytes, pages)
        session.host_register(host.ctypes.data, max(nbytes, 1))
        return host

    def _host_free(self, session, host):
        session.host_unregister(host.ctypes.data)
        release_pages(host)


class PageableStaged(_Explicit):
    """Pageable (malloc'd) data whose copies go through a ring of pinned slots, host threads near
    the GPU filling (or emptying) slots while the DMAs of others run: pageable data near the link's
    rate without pinning it all. The ring (:func:`~umprof.measure.staging_ring.ring_shape`'s rule:
    up to 12 threads, 2 slots a thread of 1-4 MiB) is set up with the buffer."""

    name = "pageable-staged"
    about = "malloc'd host memory copied through a ring of pinned slots by host threads near the GPU"
    malloc_backed = True
    pages_fault_on_copy = True
    copies_in_parts = False  # its ring moves the buffer

    def prepare(self):
        from umprof.measure import staging_ring

        staging_ring.prepare()  # the native engine, built and loaded outside the timed allocation

    def allocate(self, session, nbytes, pages="numpy"):
        from umprof.measure.staging_ring import StagingRing

        buf = super().allocate(session, nbytes, pages)
        try:
            buf.handles["ring"] = StagingRing(session, nbytes)
        except BaseException:
            super().free(session, buf)
            raise
        return buf

    def to_device(self, session, buf, nbytes=None):
        buf.handles["ring"].h2d(buf.device_ptr, buf.host if nbytes is None else buf.host[:nbytes])

    def to_host(self, session, buf, nbytes=None):
        buf.handles["ring"].d2h(buf.host if nbytes is None else buf.host[:nbytes], buf.device_ptr)

    def free(self, session, buf):
        buf.handles.pop("ring").close()
        super().free(session, buf)


class PinnedPipelined(Pinned):
    """Pinned memory and a device copy, each loop iteration run chunk by chunk over ``streams``
    CUDA streams: the host writes chunk i + 1 while chunk i is copied in, processed and copied
    out, and reads each chunk back as soon as it is there. A plan for the ``loop`` op, which runs
    it; every other op refuses it. It assumes the kernel's work on a chunk needs that chunk
    alone (element-wise or streaming work), so a random pattern over the whole buffer cannot
    use it."""

    name = "pinned-pipelined"
    about = "pinned, each loop iteration in chunks over 4 streams (host writes, copies, kernel, host reads overlap)"
    pipelined = True
    copies_in_parts = False  # its chunks over streams move the buffer
    streams = 4
    min_chunk, max_chunk, target_chunks = 1024**2, 16 * 1024**2, 8
    granule = 64 * 1024  # chunks are whole 64 KiB pages (the loop's page)

    def chunking(self, nbytes: int) -> tuple[int, int]:
        """(chunk bytes, chunks) for a buffer: about ``target_chunks`` chunks, each 1..16 MiB of
        whole 64 KiB pages (one chunk under 1 MiB: too small to gain from overlap)."""
        want = min(self.max_chunk, max(self.min_chunk, nbytes // self.target_chunks))
        chunk = max(self.granule, want // self.granule * self.granule)
        if chunk >= nbytes:
            return nbytes, 1
        return chunk, -(-nbytes // chunk)

    def describe_chunking(self, nbytes: int) -> str:
        """The chunking in words, for an answer that assumes it."""
        chunk, count = self.chunking(nbytes)
        return (f"{count} chunk{'s' if count != 1 else ''} of {format_size(chunk)} over {self.streams} streams"
                if count > 1 else f"one chunk of {format_size(chunk)} (too small to overlap)")


class _MappedHost(Strategy):
    """Host memory mapped into the device's address space: kernels reach it over PCIe."""

    over_link = True

    def unsupported(self, info):
        return None if info.can_map_host_memory in (None, True) else "the device cannot map host memory"


class ZeroCopy(_MappedHost):
    name = "zero-copy"
    about = "mapped pinned memory (cuMemHostAlloc DEVICEMAP); kernels read it in place over PCIe"

    def allocate(self, session, nbytes, pages="numpy"):
        cuda = session.cuda
        session.check_host_alloc(nbytes)
        host = cuda.pagelocked_empty(nbytes, np.uint8, mem_flags=cuda.host_alloc_flags.DEVICEMAP)
        return Buffer(self, nbytes, host, int(host.base.get_device_pointer()), {"host": host})

    def free(self, session, buf):
        buf.handles.pop("host").base.free()


class Mapped(_MappedHost):
    name = "mapped"
    about = "an existing pageable buffer registered (cuMemHostRegister DEVICEMAP); kernels read it in place"
    malloc_backed = True

    def allocate(self, session, nbytes, pages="numpy"):
        session.check_host_alloc(nbytes)
        host = pageable_empty(nbytes, pages)
        # pycuda's register_host_memory raised a SystemError on the GPU machine we test on;
        # cuda-bindings' cuMemHostRegister does the same job, so it is used directly.
        dev_ptr = session.host_register(host.ctypes.data, nbytes)
        return Buffer(self, nbytes, host, dev_ptr, {"host": host, "registered": host.ctypes.data})

    def free(self, session, buf):
        session.host_unregister(buf.handles.pop("registered"))
        release_pages(buf.handles.pop("host"))


class Managed(Strategy):
    """cuMemAllocManaged; on demand unless ``prefetch``; ``advice`` applied at allocation."""

    managed = True
    pages_migrate = True

    def __init__(self, name, about, prefetch=False, advice=None):
        self.name, self.about, self.prefetch, self.advice = name, about, prefetch, advice
        self.moves_data = prefetch

    def unsupported(self, info):
        if info.managed_memory is False:
            return "the device does not support managed memory"
        if (self.prefetch or self.advice) and info.concurrent_managed_access is False:
            return "prefetch and advice need concurrent managed access, which the device lacks"
        return None

    def allocate(self, session, nbytes, pages="numpy"):
        cuda = session.cuda
        session.check_managed_alloc(nbytes)
        host = cuda.managed_empty(nbytes, np.uint8, mem_flags=cuda.mem_attach_flags.GLOBAL)
        ptr = int(host.base.get_device_pointer())
        if self.advice:
            session.advise(ptr, nbytes, self.advice)
        return Buffer(self, nbytes, host, ptr, {"host": host})

    def to_device(self, session, buf, nbytes=None):
        if self.prefetch:
            session.prefetch(buf.device_ptr, buf.nbytes if nbytes is None else nbytes, "device")

    def to_host(self, session, buf, nbytes=None):
        if self.prefetch:
            session.prefetch(buf.device_ptr, buf.nbytes if nbytes is None else nbytes, "host")

    def reset(self, session, buf):
        session.prefetch(buf.device_ptr, buf.nbytes, "host")
        session.synchronize()

    def free(self, session, buf):
        buf.handles.pop("host").base.free()


class System(Strategy):
    name = "system"
    malloc_backed = True
    pages_migrate = True
    about = "plain malloc'd memory used by kernels directly (HMM / ATS); only where the device reports pageable access"
    over_link = True

    def unsupported(self, info):
        if not info.pageable_memory_access:
            return "no HMM/ATS: the device reports PAGEABLE_MEMORY_ACCESS = 0"
        return None

    def allocate(self, session, nbytes, pages="numpy"):
        session.check_host_alloc(nbytes)
        host = pageable_empty(nbytes, pages)
        return Buffer(self, nbytes, host, host.ctypes.data, {"host": host})

    def free(self, session, buf):
        release_pages(buf.handles.pop("host"))


_ALL = [
    Pageable(), Pinned(), WriteCombined(), ZeroCopy(), Mapped(),
    Managed("managed", "managed memory migrated on demand by page faults"),
    Managed("managed-prefetch", "managed memory moved by cuMemPrefetchAsync before the kernel and before host access",
            prefetch=True),
    Managed("managed-advise-read-mostly", "managed, cuMemAdvise READ_MOSTLY (read-only copies on each side)",
            advice="read-mostly"),
    Managed("managed-advise-prefer-gpu", "managed, preferred location the GPU", advice="prefer-gpu"),
    Managed("managed-advise-prefer-host", "managed, preferred location the host (the GPU maps it instead of migrating)",
            advice="prefer-host"),
    Managed("managed-advise-accessed-by-gpu", "managed, ACCESSED_BY the GPU (mapped, no faults while it stays on the host)",
            advice="accessed-by-gpu"),
    System(),
    PageableStaged(),
    PageableRegistered(),
    PinnedPipelined(),
]
STRATEGIES = {s.name: s for s in _ALL}


def kernel_ceiling(strategy: Strategy, in_place: bool = False) -> str:
    """What a kernel phase's throughput is measured against: the link where the kernel's data
    crosses PCIe (mapped memory, or managed pages migrating on demand), else device memory.
    ``in_place``: the kernel reads and writes across the link, both directions at once."""
    if strategy.over_link:
        return "pcie-duplex" if in_place else "pcie"
    if strategy.managed and not strategy.moves_data:
        return "pcie"  # on demand, the kernel's time is the pages' migration
    return "dram"
EXPLICIT = tuple(s.name for s in _ALL if s.copies)


def get(name: str) -> Strategy:
    return STRATEGIES[name]
