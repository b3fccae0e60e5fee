"""The staging ring's engine without a GPU: its rule, and its native pipeline (kernels/staging_ring.c,
built with nvcc) over a stand-in driver whose 'device' is a host array and whose DMAs run when their
stream's event or the stream is waited for, or at random before: a slot refilled before its DMA ran
lands wrong bytes."""

import ctypes
import dataclasses
import random
import threading
import types

import numpy as np
import pytest

from umprof.measure import staging_ring
from umprof.measure.host_cpus import near_cpus, numa_node, parse_cpulist
from umprof.measure.staging_ring import GRANULE, MAX_CHUNK, MIN_CHUNK, MiB, HostCopy, StagingRing, ring_shape


def test_the_rule_shares_a_buffer_over_threads_in_whole_pages():
    big = ring_shape(1024 * MiB, 16)
    assert (big.threads, big.chunk, big.slots) == (12, MAX_CHUNK, 24)  # one core left for the calling thread
    assert ring_shape(1024 * MiB, 4).threads == 3 and ring_shape(1024 * MiB, 1).threads == 1
    small = ring_shape(3 * MiB, 16)
    assert small.chunk == MIN_CHUNK and small.slots == 3 == small.threads  # no more slots than chunks, a lane each
    tiny = ring_shape(12 * 1024, 16)
    assert tiny.chunk == 64 * 1024 and tiny.slots == 1  # never more than the buffer, in whole pages
    mid = ring_shape(24 * MiB, 9)
    assert mid.threads == 8 and mid.chunk == 3 * MiB and mid.slots == 8
    assert ring_shape(40 * MiB, 9).chunk == MAX_CHUNK and ring_shape(40 * MiB, 9).slots == 8  # 10 chunks, 8 lanes
    # every thread as many slots as the others, and no more threads than slots
    assert ring_shape(1024 * MiB, 16, threads=4, chunk=2 * MiB, slots=3) == staging_ring.RingShape(3, 3, 2 * MiB)
    assert ring_shape(1024 * MiB, 16, threads=4, chunk=2 * MiB, slots=9) == staging_ring.RingShape(4, 8, 2 * MiB)


def test_a_ring_for_small_transfers_is_the_calling_threads():
    # up to INLINE_BYTES the calling thread moves every transfer: one lane, a slot's copy beside the other's DMA
    assert ring_shape(staging_ring.INLINE_BYTES, 16) == staging_ring.RingShape(1, 2, MIN_CHUNK)
    assert ring_shape(MIN_CHUNK, 16) == staging_ring.RingShape(1, 1, MIN_CHUNK)
    assert ring_shape(staging_ring.INLINE_BYTES + GRANULE, 16).threads == 3  # past it, threads as before
    assert ring_shape(2 * MiB, 16, inline_bytes=0).threads == 2


def test_a_transfer_on_the_calling_thread_is_cut_over_its_slots_and_one_on_the_threads_in_whole_slots():
    big = ring_shape(1024 * MiB, 16)
    assert big.transfer(1024 * MiB) == (MAX_CHUNK, False)
    assert big.transfer(6 * MiB) == (MAX_CHUNK, False)  # 4 + 2 MiB on two threads: fewer cores touch the buffer
    assert big.transfer(3 * MiB // 2) == (MIN_CHUNK, True)  # on the caller, its two slots overlapping
    assert dataclasses.replace(big, inline_bytes=0).transfer(3 * MiB) == (MAX_CHUNK, True)  # one chunk: the caller's
    # a whole buffer goes as the ring was built for it: what the calibration measured is what runs
    for cpus in (2, 5, 9, 16, 64):
        for nbytes in (12 * 1024, MiB, 3 * MiB // 2, 2 * MiB, 3 * MiB + 4096, 24 * MiB, 40 * MiB, 256 * MiB, 1536 * MiB):
            shape = ring_shape(nbytes, cpus)
            chunk, on_caller = shape.transfer(nbytes)
            assert chunk == shape.chunk and on_caller == (nbytes <= staging_ring.INLINE_BYTES or nbytes <= chunk)


def test_cpus_near_the_gpu_come_from_sysfs(tmp_path):
    dev = tmp_path / "bus/pci/devices/0000:1b:00.0"
    dev.mkdir(parents=True)
    (dev / "numa_node").write_text("1\n")
    node = tmp_path / "devices/system/node/node1"
    node.mkdir(parents=True)
    (node / "cpulist").write_text("8-11,14\n")
    assert parse_cpulist("0-3,8,10-11") == [0, 1, 2, 3, 8, 10, 11] and parse_cpulist("") == []
    assert numa_node("00000000:1B:00.0", tmp_path) == 1  # CUDA's spelling of the bus id
    assert near_cpus("0000:1b:00.0", tmp_path, usable=list(range(16))) == [8, 9, 10, 11, 14]
    assert near_cpus("0000:1b:00.0", tmp_path, usable=[0, 1]) == [0, 1]  # none of the node's usable: all usable
    (dev / "numa_node").write_text("-1\n")
    assert near_cpus("0000:1b:00.0", tmp_path, usable=[0, 1, 2]) == [0, 1, 2]
    assert near_cpus(None, tmp_path, usable=[5]) == [5]


class _Pinned(np.ndarray):
    pass


def _host(ptr, n):
    return np.ctypeslib.as_array((ctypes.c_ubyte * n).from_address(ptr))


def _fake_driver(device: np.ndarray, seed: int, fail_at: int | None = None):
    """A driver table whose streams queue DMAs to and from ``device`` (addressed by offset) and run
    them in order when an event recorded after them, or the stream, is waited for, or at random
    before; the ``fail_at``-th DMA returns CUDA error 700."""
    rng, lock = random.Random(seed), threading.Lock()
    streams, events, issued = {}, {}, [0]
    vp, pp = ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)

    def run(stream, upto):
        q = streams[stream]
        while q and q[0][0] <= upto:
            q.pop(0)[1]()

    def new_handle(table, out):
        h = len(streams) + len(events) + 1
        table[h] = [] if table is streams else None
        out[0] = h
        return 0

    def enqueue(stream, fn):
        with lock:
            issued[0] += 1
            if fail_at is not None and issued[0] == fail_at:
                return 700
            q = streams[stream]
            q.append((issued[0], fn))
            if rng.random() < 0.3:  # the copy engine got there first
                run(stream, q[0][0])
            return 0

    def record(ev, stream):
        with lock:
            events[ev] = (stream, issued[0])
        return 0

    def event_sync(ev):
        with lock:
            if events[ev] is not None:
                run(*events[ev])
        return 0

    def stream_sync(stream):
        with lock:
            run(stream, issued[0])
        return 0

    def htod(dst, src, n, stream):
        return enqueue(stream, lambda: device.__setitem__(slice(dst, dst + n), _host(src, n)))

    def dtoh(dst, src, n, stream):
        return enqueue(stream, lambda: np.copyto(_host(dst, n), device[src:src + n]))

    def ctx_get(out):
        out[0] = 1
        return 0

    f = ctypes.CFUNCTYPE
    i = ctypes.c_int
    funcs = [
        f(i, pp)(ctx_get), f(i, vp)(lambda ctx: 0),
        f(i, pp, ctypes.c_uint)(lambda out, flags: new_handle(streams, out)), f(i, vp)(lambda h: 0),
        f(i, vp)(stream_sync),
        f(i, pp, ctypes.c_uint)(lambda out, flags: new_handle(events, out)), f(i, vp)(lambda h: 0),
        f(i, vp, vp)(record), f(i, vp)(event_sync),
        f(i, ctypes.c_uint64, vp, ctypes.c_size_t, vp)(htod), f(i, vp, ctypes.c_uint64, ctypes.c_size_t, vp)(dtoh),
    ]
    assert len(funcs) == len(staging_ring.DRIVER_FUNCTIONS)
    table = (ctypes.c_void_p * len(funcs))(*(ctypes.cast(fn, ctypes.c_void_p).value for fn in funcs))
    table._keep = funcs  # the callbacks live as long as the table
    return table


def _fake_session():
    def pagelocked_empty(n, dtype):
        return np.full(n, 0xEE, dtype).view(_Pinned)

    return types.SimpleNamespace(cuda=types.SimpleNamespace(pagelocked_empty=pagelocked_empty), device=None,
                                 check_host_alloc=lambda n, what="": None)


@pytest.fixture(autouse=True)
def _pinned_free(monkeypatch):
    monkeypatch.setattr(_Pinned, "base", property(lambda self: types.SimpleNamespace(free=lambda: None)), raising=False)


@pytest.mark.parametrize("nbytes,shape", [
    (12 * 1024, {}), (3 * MiB + 4096, {}), (37 * MiB + 123, {}),
    (37 * MiB + 123, {"threads": 1, "slots": 2, "chunk": MiB}),
    (37 * MiB + 123, {"threads": 3, "slots": 2, "chunk": MiB}),
    (9 * MiB, {"threads": 4, "slots": 5, "chunk": 2 * MiB}),
    (9 * MiB, {"threads": 2, "slots": 6, "chunk": 64 * 1024}),
])
def test_the_ring_moves_every_byte_each_way(nbytes, shape):
    src = np.random.default_rng(nbytes).integers(0, 256, nbytes, dtype=np.uint8)
    for seed in range(3):
        device = np.zeros(nbytes + 4096, np.uint8)
        ring = StagingRing(_fake_session(), nbytes, driver=_fake_driver(device, seed), **shape)
        try:
            log = ring.h2d(4096, src, log=True)
            assert np.array_equal(device[4096:], src)
            assert not np.isnan(log).any() and (log[:, 1] >= log[:, 0]).all()  # every chunk's copy, timed
            back = np.zeros(nbytes, np.uint8)
            ring.d2h(back, 4096)
            assert np.array_equal(back, src)
            ring.h2d(4096, src[:0])  # nothing to move: nothing issued
            ring.d2h(back[:0], 4096)
            again = np.zeros(nbytes, np.uint8)
            ring.host_copy(again, src)
            assert np.array_equal(again, src)
        finally:
            ring.close()


@pytest.mark.parametrize("inline_bytes,on_caller", [(0, False), (64 * MiB, True)])
def test_a_transfer_within_inline_bytes_runs_on_the_calling_thread(inline_bytes, on_caller):
    nbytes = 9 * MiB + 4096  # ten chunks of 1 MiB: a pipeline of its own on either side
    src = np.random.default_rng(7).integers(0, 256, nbytes, dtype=np.uint8)
    for seed in range(3):
        device = np.zeros(nbytes, np.uint8)
        ring = StagingRing(_fake_session(), nbytes, threads=3, slots=6, chunk=MiB, inline_bytes=inline_bytes,
                           driver=_fake_driver(device, seed))
        try:
            log = ring.h2d(0, src, log=True)
            assert np.array_equal(device, src)
            assert (log[:, 3] == -1).all() if on_caller else (log[:, 3] >= 0).all()
            back = np.zeros(nbytes, np.uint8)
            log = ring.d2h(back, 0, log=True)
            assert np.array_equal(back, src)
            assert (log[:, 3] == -1).all() if on_caller else (log[:, 3] >= 0).all()
        finally:
            ring.close()


def test_part_of_the_buffer_goes_in_the_rings_chunks():
    nbytes, part = 64 * MiB, 6 * MiB + 4096
    src = np.random.default_rng(3).integers(0, 256, part, dtype=np.uint8)
    for seed in range(3):
        device = np.zeros(nbytes, np.uint8)
        ring = StagingRing(_fake_session(), nbytes, threads=8, driver=_fake_driver(device, seed))
        try:
            assert ring.chunk == MAX_CHUNK
            log = ring.h2d(0, src, log=True)
            assert np.array_equal(device[:part], src) and not device[part:].any()
            assert len(log) == 2 and (log[:, 3] >= 0).all()  # 4 MiB and the rest, on the threads
            back = np.zeros(part, np.uint8)
            log = ring.d2h(back, 0, log=True)
            assert np.array_equal(back, src) and len(log) == 2
            small = src[:3 * MiB // 2]
            log = ring.h2d(0, small, log=True)
            assert np.array_equal(device[:len(small)], small)
            assert len(log) == 2 and (log[:, 3] == -1).all()  # on the caller, both its slots at work
        finally:
            ring.close()


def test_the_engine_refuses_a_chunk_larger_than_its_slots():
    ring = StagingRing(_fake_session(), 8 * MiB, threads=2, driver=_fake_driver(np.zeros(8 * MiB, np.uint8), 0))
    try:
        with pytest.raises(RuntimeError, match="could not copy to the GPU: its threads or memory"):
            ring.engine.transfer(staging_ring.H2D, 0, np.zeros(MiB, np.uint8), ring.chunk + GRANULE, False, None,
                                 "copy to the GPU")
    finally:
        ring.close()


def test_the_staged_strategy_loads_its_engine_before_anything_is_timed(monkeypatch):
    from umprof.measure import strategies
    from umprof.measure.ops.base import CaseRun

    loaded = []
    monkeypatch.setattr(staging_ring, "prepare", lambda: loaded.append(True))
    CaseRun().use_strategy("pageable-staged", types.SimpleNamespace())
    assert loaded == [True]
    strategies.get("pinned").prepare()  # others have nothing to prepare


def test_a_failed_dma_stops_the_ring_with_the_drivers_error():
    nbytes = 37 * MiB
    src = np.ones(nbytes, np.uint8)
    device = np.zeros(nbytes, np.uint8)
    ring = StagingRing(_fake_session(), nbytes, threads=4, driver=_fake_driver(device, 0, fail_at=5))
    try:
        with pytest.raises(RuntimeError, match="could not copy to the GPU: CUDA error 700"):
            ring.h2d(0, src)
    finally:
        ring.close()


def test_the_ring_takes_contiguous_bytes_alone():
    ring = StagingRing(_fake_session(), MiB, driver=_fake_driver(np.zeros(MiB, np.uint8), 0))
    try:
        with pytest.raises(ValueError, match="contiguous uint8"):
            ring.h2d(0, np.zeros(1024, np.float32))
        with pytest.raises(ValueError, match="not contiguous"):
            ring.h2d(0, np.zeros(2048, np.uint8)[::2])
    finally:
        ring.close()


@pytest.mark.parametrize("threads", [1, 3, 8])
def test_the_host_copy_copies_every_byte(threads):
    src = np.random.default_rng(1).integers(0, 256, 1_000_003, dtype=np.uint8)
    dst = np.zeros_like(src)
    copier = HostCopy(threads, None)
    try:
        copier.copy(dst, src)
        assert np.array_equal(dst, src)
        with pytest.raises(ValueError, match="one size"):
            copier.copy(dst[:10], src)
    finally:
        copier.close()
