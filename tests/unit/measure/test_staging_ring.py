"""The staging ring's engine without a GPU: its rule, and its pipeline over a stand-in driver whose
'device' is a host array and whose DMAs land when their event is waited for (or at random)."""

import random
import types

import numpy as np
import pytest

from umprof.measure import staging_ring
from umprof.measure.host_cpus import near_cpus, numa_node, parse_cpulist
from umprof.measure.staging_ring import MAX_CHUNK, MIN_CHUNK, MiB, StagingRing, ring_shape


def test_the_rule_shares_a_buffer_over_threads_in_whole_pages():
    big = ring_shape(1024 * MiB, 16)
    assert (big.threads, big.chunk, big.slots) == (12, MAX_CHUNK, 24)  # one core left for the issuing thread
    assert ring_shape(1024 * MiB, 4).threads == 3 and ring_shape(1024 * MiB, 1).threads == 1
    small = ring_shape(3 * MiB, 16)
    assert small.chunk == MIN_CHUNK and small.slots == 3  # no more slots than the buffer has chunks
    tiny = ring_shape(12 * 1024, 16)
    assert tiny.chunk == 64 * 1024 and tiny.slots == 1  # never more than the buffer, in whole pages
    mid = ring_shape(24 * MiB, 9)
    assert mid.threads == 8 and mid.chunk == 3 * MiB and mid.slots == 8
    assert ring_shape(40 * MiB, 9).chunk == MAX_CHUNK and ring_shape(40 * MiB, 9).slots == 10
    assert ring_shape(1024 * MiB, 16, threads=4, chunk=2 * MiB, slots=3) == staging_ring.RingShape(4, 3, 2 * MiB)


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


def _fake_session(device: np.ndarray, seed: int):
    """A session whose driver copies at once into or out of ``device`` (a numpy array addressed by
    offset) but reports an event done only at random, until it is waited for."""
    rng = random.Random(seed)
    pending = []  # DMAs issued, applied in order when an event after them completes

    def flush(upto):
        while pending and pending[0][0] <= upto:
            pending.pop(0)[1]()

    counter = [0]

    class Event:
        def __init__(self):
            self.mark = -1

        def record(self, stream):
            self.mark = counter[0]

        def query(self):
            if rng.random() < 0.5:
                flush(self.mark)
                return True
            return False

        def synchronize(self):
            flush(self.mark)

    class Stream:
        def synchronize(self):
            flush(counter[0])

    def issue(fn):
        counter[0] += 1
        pending.append((counter[0], fn))

    def pagelocked_empty(n, dtype):
        a = np.full(n, 0xEE, dtype).view(_Pinned)
        a.base_free = False
        return a

    def htod(ptr, src, stream):
        # the DMA reads the slot when it runs: a slot refilled before its event fired lands wrong bytes
        issue(lambda: device.__setitem__(slice(ptr, ptr + src.size), src))

    def dtoh(dst, ptr, stream):
        issue(lambda: np.copyto(dst, device[ptr:ptr + dst.size]))

    cuda = types.SimpleNamespace(pagelocked_empty=pagelocked_empty, Event=Event, Stream=Stream,
                                 memcpy_htod_async=htod, memcpy_dtoh_async=dtoh)
    return types.SimpleNamespace(cuda=cuda, device=None, check_host_alloc=lambda n, what="": None)


@pytest.fixture(autouse=True)
def _pinned_free(monkeypatch):
    monkeypatch.setattr(_Pinned, "base", property(lambda self: types.SimpleNamespace(free=lambda: None)), raising=False)


@pytest.mark.parametrize("nbytes,shape", [
    (12 * 1024, {}), (3 * MiB + 4096, {}), (37 * MiB + 123, {}),
    (37 * MiB + 123, {"threads": 1, "slots": 2, "chunk": MiB}),
    (37 * MiB + 123, {"threads": 3, "slots": 2, "chunk": MiB}),
    (9 * MiB, {"threads": 4, "slots": 5, "chunk": 2 * MiB}),
])
def test_the_ring_moves_every_byte_each_way(nbytes, shape):
    src = np.random.default_rng(nbytes).integers(0, 256, nbytes, dtype=np.uint8)
    for seed in range(3):
        device = np.zeros(nbytes + 4096, np.uint8)
        ring = StagingRing(_fake_session(device, seed), nbytes, **shape)
        try:
            ring.h2d(4096, src)
            assert np.array_equal(device[4096:], src)
            back = np.zeros(nbytes, np.uint8)
            ring.d2h(back, 4096)
            assert np.array_equal(back, src)
            ring.h2d(4096, src[:0])  # nothing to move: nothing issued
            ring.d2h(back[:0], 4096)
        finally:
            ring.close()
