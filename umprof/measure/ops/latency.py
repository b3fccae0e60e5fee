"""``latency``: how long a small transfer takes, start to finish (median and p99 over many samples).

Methods, each one sample = one operation, timed by the host clock (what an application waits):

* ``memcpy``: a synchronous cudaMemcpy H2D of ``bytes`` from pinned memory;
* ``memcpy-async``: cudaMemcpyAsync on a stream, then a stream synchronize;
* ``zero-copy-kernel``: a kernel launch that copies ``bytes`` of mapped host memory into device
  memory, a thread per word, then a synchronize (launch latency plus reads over the link);
* ``pointer-chase-host`` / ``pointer-chase-device``: one GPU thread follows a random cyclic
  chain through 16 MiB of mapped host memory (256 MiB of device memory, beyond the L2), each
  load waiting for the one before; each sample goes on from where the last one stopped, so
  its lines were not read recently (a chase that restarted would find them in the L2);
  timed by CUDA events and divided by the hops: the latency of one load
  (nvbandwidth's host_device_latency_sm). ``bytes`` does not apply to them.

Every method's result is checked: the bytes copied, the chase's end index.
"""

from __future__ import annotations

import numpy as np

from umprof.core.axes import AxisSet, AxisSpec
from umprof.core.errors import CaseFailed
from umprof.measure.ops.base import CaseRun, Op, register

METHODS = ("memcpy", "memcpy-async", "zero-copy-kernel", "pointer-chase-host", "pointer-chase-device")
CHASE = "streams.cu:pointer_chase"
CHASE_SIG = "PQIP"
CHASE_WORDS = 16 * 1024**2 // 4  # 16 MiB of chain in host memory (as nvbandwidth's host latency test)
CHASE_WORDS_DEVICE = 256 * 1024**2 // 4  # 256 MiB in device memory: five times an H200's 50 MB L2
CHASE_STRIDE_WORDS = 64 // 4  # one link per 64-byte line
HOPS = 4096
COPY = "streams.cu:copy_words"
COPY_SIG = "PPQ"


def chase_chain(words: int, stride: int, seed: int = 7) -> np.ndarray:
    """A random cycle through every ``stride``-th word: ``chain[i]`` is the next index."""
    slots = np.arange(0, words, stride, dtype=np.uint32)
    order = np.random.default_rng(seed).permutation(slots)
    chain = np.zeros(words, np.uint32)
    chain[order] = np.roll(order, -1)
    return chain


def chase_end(chain: np.ndarray, hops: int, start: int = 0) -> int:
    """Where the chase from ``start`` ends after ``hops`` links (what the kernel must write)."""
    i = start
    for _ in range(hops):
        i = int(chain[i])
    return i


class LatencyRun(CaseRun):
    def __init__(self, ctx, case):
        super().__init__()
        s = self.session = ctx.session
        cuda = s.cuda
        self.method, self.nbytes = case.params["method"], case.params["bytes"]
        self.handles, self._chased = [], False
        if self.method.startswith("pointer-chase"):
            self.kernel = ctx.kernels.get(CHASE, CHASE_SIG, ())
            words = CHASE_WORDS if self.method == "pointer-chase-host" else CHASE_WORDS_DEVICE
            self.chain = chain = chase_chain(words, CHASE_STRIDE_WORDS)
            self.start, self.expected = 0, chase_end(chain, HOPS)
            if self.method == "pointer-chase-host":
                host = cuda.pagelocked_empty(CHASE_WORDS, np.uint32, mem_flags=cuda.host_alloc_flags.DEVICEMAP)
                host[:] = chain
                self.handles.append(host.base)
                self.chain_ptr = int(host.base.get_device_pointer())
            else:
                dev = cuda.to_device(chain)
                self.handles.append(dev)
                self.chain_ptr = int(dev)
            self.out = cuda.mem_alloc(4)
            self.handles.append(self.out)
        elif self.method == "zero-copy-kernel":
            self.kernel = ctx.kernels.get(COPY, COPY_SIG, ())
            self.words = max(1, self.nbytes // 4)
            host = cuda.pagelocked_empty(self.words, np.uint32, mem_flags=cuda.host_alloc_flags.DEVICEMAP)
            host[:] = np.arange(self.words, dtype=np.uint32) * np.uint32(2654435761)
            self.src, self.src_ptr = host, int(host.base.get_device_pointer())
            self.dst = cuda.mem_alloc(4 * self.words)
            self.handles += [host.base, self.dst]
        else:
            self.src = cuda.pagelocked_empty(max(1, self.nbytes), np.uint8)
            self.src[:] = np.arange(self.src.size, dtype=np.uint64).astype(np.uint8)
            self.dst = cuda.mem_alloc(max(1, self.nbytes))
            self.handles += [self.src.base, self.dst]
            self.stream = cuda.Stream()

    def reset(self):
        if self.method.startswith("pointer-chase") and self._chased:  # on from the last sample's end
            self.start = self.expected
            self.expected = chase_end(self.chain, HOPS, self.start)

    def sample(self, timer):
        cuda = self.session.cuda
        if self.method == "memcpy":
            with timer.phase("latency", bytes=self.nbytes, gpu=False):
                cuda.memcpy_htod(self.dst, self.src)
        elif self.method == "memcpy-async":
            with timer.phase("latency", bytes=self.nbytes, gpu=False):
                cuda.memcpy_htod_async(self.dst, self.src, self.stream)
                self.stream.synchronize()
        elif self.method == "zero-copy-kernel":
            with timer.phase("latency", bytes=self.nbytes, gpu=False):
                self.kernel.launch((self.words + 255) // 256, 256, self.src_ptr, self.dst, self.words)
                cuda.Context.synchronize()
        else:  # one load's latency: the chase's time over its hops
            with timer.phase("latency", reps=HOPS):
                self.kernel.launch(1, 1, self.chain_ptr, HOPS, self.start, self.out)
            self._chased = True

    def verify(self):
        cuda = self.session.cuda
        if not self.method.startswith("pointer-chase"):
            got = np.empty_like(self.src)
            cuda.memcpy_dtoh(got, self.dst)
            if not np.array_equal(got, self.src):
                raise CaseFailed(f"{self.method}: the {self.nbytes} bytes copied differ")
            return
        got = np.zeros(1, np.uint32)
        cuda.memcpy_dtoh(got, self.out)
        if int(got[0]) != self.expected:
            raise CaseFailed(f"{self.method}: the chase ended at index {int(got[0])}, expected {self.expected}")

    def close(self):
        for h in self.handles:
            h.free()
        self.handles = []


def _merge(params):
    if params["method"].startswith("pointer-chase"):
        return {**params, "bytes": None}
    return params


OP = register(Op(
    name="latency",
    about="small transfers start to finish, and one load's latency from host or device memory (median, p99)",
    axes=AxisSet([
        AxisSpec("method", "choice", default=METHODS, choices=METHODS),
        AxisSpec("bytes", "size", default=(4, 64, 4096, 65536), minimum=4, maximum=16 * 1024**2),
    ]),
    kernels=lambda scenario: [(CHASE, CHASE_SIG, ()), (COPY, COPY_SIG, ())],
    phases=("latency",),
    run=LatencyRun,
    merge=_merge,
    sample_rate=1e9,
    min_sample_s=2e-5,
))
