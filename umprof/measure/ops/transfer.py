"""``transfer``: cudaMemcpy bandwidth H2D, D2H and D2D across sizes, as bandwidthTest does.

Small copies are repeated inside one timed phase (the time per copy is reported) so that
event resolution and launch latency do not dominate; D2D counts bytes read plus written.
"""

from __future__ import annotations

import math
import time

import numpy as np

from umprof.core.axes import AxisSet, AxisSpec
from umprof.core.errors import CaseFailed
from umprof.core.memo import bytes_bounded_cache
from umprof.measure import strategies
from umprof.measure.ops.base import CaseRun, Op, register

TARGET_PHASE_S = 1e-3  # repeat small copies until one timed phase lasts about this long
MAX_REPS = 256


@bytes_bounded_cache(2 * 1024**3)
def byte_pattern(n: int) -> np.ndarray:
    """n bytes of a repeating random 1 MiB block (cheap to build at 1 GiB; a copy that
    drops, repeats or shifts a chunk still fails the comparison)."""
    out = np.empty(n, dtype=np.uint8)
    filled = min(n, 2**20 + 7)  # an odd period keeps the repeats misaligned with pages
    out[:filled] = np.random.default_rng(12345).integers(0, 256, filled, dtype=np.uint8)
    while filled < n:  # doubling copies: memcpy speed
        step = min(filled, n - filled)
        out[filled:filled + step] = out[:step]
        filled += step
    return out


class TransferRun(CaseRun):
    # every sample copies the same bytes to the same place: the last one's result, checked in
    # full once (a read-back and compare of up to 1 GiB), proves the copy
    verify_every_sample = False

    def __init__(self, ctx, case):
        super().__init__()
        self.session = s = ctx.session
        p = case.params
        self.direction, self.nbytes = p["direction"], p["bytes"]
        n = self.nbytes
        self.pattern = byte_pattern(n)
        if self.direction == "d2d":
            s.check_device_alloc(2 * n)
            self.src, self.dst = s.cuda.mem_alloc(max(n, 1)), s.cuda.mem_alloc(max(n, 1))
            s.cuda.memcpy_htod(self.src, self.pattern)
            self.buf = None
        else:
            self.strategy = strategies.get(p["strategy"])
            self.buf = self.strategy.allocate(s, n)
            if self.direction == "h2d":
                self.buf.host[:] = self.pattern
            else:
                s.cuda.memcpy_htod(self.buf.device_ptr, self.pattern)
                self.buf.host.fill(0xFF)  # poison: the first verify proves the copy wrote
        self.reps = self._calibrate()
        self.extra["reps_per_sample"] = self.reps

    def _copy(self):
        cuda, s = self.session.cuda, self.session
        if self.direction == "h2d":
            self.strategy.to_device(s, self.buf)
        elif self.direction == "d2h":
            self.strategy.to_host(s, self.buf)
        else:
            cuda.memcpy_dtod_async(self.dst, self.src, self.nbytes, s.stream)

    def _calibrate(self) -> int:
        t0 = time.perf_counter()
        self._copy()
        self.session.synchronize()
        once = time.perf_counter() - t0
        return int(min(MAX_REPS, max(1, math.ceil(TARGET_PHASE_S / max(once, 1e-7)))))

    def sample(self, timer):
        counted = 2 * self.nbytes if self.direction == "d2d" else self.nbytes
        ceiling = "dram" if self.direction == "d2d" else "pcie"
        with timer.phase(self.direction, bytes=counted, ceiling=ceiling, reps=self.reps):
            for _ in range(self.reps):
                self._copy()

    def verify(self):
        s, n = self.session, self.nbytes
        if self.direction == "h2d":
            got = np.empty(n, np.uint8)
            s.cuda.memcpy_dtoh(got, self.buf.device_ptr)
        elif self.direction == "d2h":
            got = np.asarray(self.buf.host)
        else:
            got = np.empty(n, np.uint8)
            s.cuda.memcpy_dtoh(got, self.dst)
        if not np.array_equal(got, self.pattern):
            bad = int(np.flatnonzero(got != self.pattern)[0])
            raise CaseFailed(f"{self.direction} copy of {n} bytes is wrong at byte {bad}: got {got[bad]}, expected {self.pattern[bad]}")

    def close(self):
        if self.buf is not None:
            self.strategy.free(self.session, self.buf)
        else:
            self.src.free()
            self.dst.free()


def _merge(params):
    if params["direction"] == "d2d":  # no host memory involved: one case per size
        return {**params, "strategy": "device"}
    if params["strategy"] == "device":  # 'device' names the d2d cases only
        return None
    return params


OP = register(Op(
    name="transfer",
    about="cudaMemcpy H2D / D2H / D2D bandwidth across sizes (bandwidthTest, nvbandwidth)",
    axes=AxisSet([
        AxisSpec("strategy", "choice", default=("pageable", "pinned"), choices=strategies.EXPLICIT + ("device",),
                 about="host memory of the copy ('device' is used for d2d)"),
        AxisSpec("direction", "choice", default=("h2d", "d2h"), choices=("h2d", "d2h", "d2d")),
        AxisSpec("bytes", "size", default=(256 * 1024**2,), minimum=1),
    ]),
    phases=("h2d", "d2h", "d2d"),
    run=TransferRun,
    merge=_merge,
    sample_rate=20e9,
    min_sample_s=1e-3,  # small copies repeat until a phase lasts ~1 ms
))
