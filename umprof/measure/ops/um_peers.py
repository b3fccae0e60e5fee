"""``um-peers``: one managed buffer touched by two GPUs in turn: pages migrate from GPU to GPU
(CUPTI counts them as device-to-device migrations), unless ``accessed-by`` advice lets the
peer map them and read and write them in place over NVLink or PCIe.

``pair = "A>B"``: each sample starts with the buffer on GPU A (prefetched there, untimed);
then a kernel on GPU A reads and writes every word (``on_a``: local, the baseline), one on
GPU B does the same (``on_b``: migrations A→B, or remote accesses with the advice), and one
on GPU A again (``back_on_a``: the pages come back, or never left). Each phase is timed by
its own GPU's events. ``advice``: ``none``, or ``accessed-by`` (cuMemAdvise SET_ACCESSED_BY
for GPU B, with the preferred location on GPU A so that the pages stay there). The buffer's
words end as x → 3x + 1 applied three times, checked exactly.
"""

from __future__ import annotations

import numpy as np

from umprof.core.axes import AxisSet, AxisSpec
from umprof.core.errors import CaseFailed, CaseSkipped
from umprof.measure.ops.base import CaseRun, Op, register
from umprof.measure.ops.legs import Leg, case_pair, pair_cases

TOUCH = "streams.cu:chunk_work"  # x = 3x + 1 on every word, in place
TOUCH_SIG = "PQI"
START = np.uint32(0x01020304)


def after_touches(x: np.uint32, touches: int) -> np.uint32:
    """A word after ``touches`` passes of x → 3x + 1 (uint32 arithmetic)."""
    with np.errstate(over="ignore"):
        for _ in range(touches):
            x = np.uint32(x * np.uint32(3) + np.uint32(1))
    return x


class UmPeersRun(CaseRun):
    uses_managed_memory = True
    verify_every_sample = False

    def __init__(self, ctx, case):
        super().__init__()
        p = case.params
        self.a, self.b = case_pair(ctx, p["pair"])
        (sa, ka), (sb, kb) = ctx.peer(self.a), ctx.peer(self.b)
        for s in (sa, sb):
            if not s.attribute("CONCURRENT_MANAGED_ACCESS", 0):
                raise CaseSkipped(f"GPU {s.index} lacks concurrent managed access: pages cannot move between GPUs on demand")
            s.check_managed_alloc(p["bytes"])  # never more managed memory than either GPU has free
        self.sa, self.sb, self.advice = sa, sb, p["advice"]
        self.nbytes = p["bytes"] // 4 * 4
        self.words = self.nbytes // 4
        cuda = sa.cuda
        with sa.current():
            self.host = cuda.managed_empty(self.words, np.uint32, mem_flags=cuda.mem_attach_flags.GLOBAL)
        self.ptr = int(self.host.base.get_device_pointer())
        try:
            if self.advice == "accessed-by":
                sa.advise(self.ptr, self.nbytes, "prefer-gpu")  # the pages' home: GPU A
                sb.advise(self.ptr, self.nbytes, "accessed-by-gpu")  # GPU B maps them where they are
            self.kernels = {self.a: ka.get(TOUCH, TOUCH_SIG, ()), self.b: kb.get(TOUCH, TOUCH_SIG, ())}
            self.legs = {self.a: Leg(sa), self.b: Leg(sb)}
        except BaseException:
            self.close()
            raise
        sms = sa.attribute("MULTIPROCESSOR_COUNT", 132) or 132
        self.grid, self.block = max(1, min(sms * 8, (self.words // 4 + 255) // 256)), 256
        self.extra.update(src_gpu=self.a, dst_gpu=self.b)

    def reset(self):
        sa = self.sa
        with sa.current():  # the words back to START, on GPU A
            sa.cuda.memset_d32(self.ptr, int(START), self.words)
            sa.prefetch(self.ptr, self.nbytes, "device")
            sa.synchronize()

    def _touch(self, timer, phase, g):
        leg = self.legs[g]
        with timer.phase(phase, bytes=2 * self.nbytes, gpu=False):
            with leg.issue() as stream:
                self.kernels[g].launch(self.grid, self.block, self.ptr, self.words, 1, stream=stream)
            t = leg.seconds()
        timer.set_gpu_time(phase, t)

    def sample(self, timer):
        self._touch(timer, "on_a", self.a)
        self._touch(timer, "on_b", self.b)
        self._touch(timer, "back_on_a", self.a)

    def verify(self):
        got = np.empty(self.words, np.uint32)
        with self.sa.current():
            self.sa.cuda.memcpy_dtoh(got, self.ptr)
        want = after_touches(START, 3)
        bad = np.flatnonzero(got != want)
        if bad.size:
            raise CaseFailed(f"word {int(bad[0])} is {int(got[bad[0]]):#x} after GPU {self.a}, {self.b}, {self.a} "
                             f"touched it; expected {int(want):#x}")

    def close(self):
        host = getattr(self, "host", None)
        if host is not None:
            host.base.free()
        self.host = None


def _device_cases(params, devices):
    return pair_cases(params, devices, both_directions=True)  # A, B, A covers both directions


OP = register(Op(
    name="um-peers",
    about="a managed buffer touched by GPU A, GPU B, GPU A: migrations between GPUs, or in-place access with accessed-by advice",
    axes=AxisSet([
        AxisSpec("pair", "pair", default=("all",)),
        AxisSpec("advice", "choice", default=("none", "accessed-by"), choices=("none", "accessed-by")),
        AxisSpec("bytes", "size", default=(64 * 1024**2, 256 * 1024**2), minimum=4),
    ]),
    kernels=lambda scenario: [(TOUCH, TOUCH_SIG, ())],
    phases=("on_a", "on_b", "back_on_a"),
    run=UmPeersRun,
    spans_devices=True,
    device_cases=_device_cases,
    counts_um=True,
    sample_rate=5e9,
    min_sample_s=1e-3,
))
