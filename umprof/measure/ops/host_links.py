"""``host-links``: host→GPU (or GPU→host) copies to every GPU of the run at once, beside each
GPU alone: what sharing the host (its memory, its root complex) costs (nvbandwidth's
host_to_all / all_to_host tests).

Each sample copies ``bytes`` of pinned (portable) host memory to each GPU alone in turn
(phases ``alone0``, ``alone1``, ...), then to all of them at once, one host thread per GPU
(phases ``gpu0``, ``gpu1``, ... for each GPU's share, by its own events, and ``all`` for the
whole: the bytes of every GPU over the longest GPU's time, its ceiling the sum of the links).
Every thread issues its copy after one barrier and waits for it only after a second, so no
thread's wait can delay another's start. ``sharing_cost``: how much slower a GPU's copy was
with the others running (1 - together/alone, averaged over the GPUs). Every copy is checked.
"""

from __future__ import annotations

import threading
import time

import numpy as np

from umprof.core.axes import AxisSet, AxisSpec
from umprof.core.errors import CaseFailed, CaseSkipped
from umprof.measure.ops.base import CaseRun, Op, register
from umprof.measure.ops.legs import Leg, gpus_text
from umprof.measure.ops.transfer import byte_pattern


class GpuEnd:
    """One GPU's side: a pinned host buffer usable from every context, a device buffer, a leg."""

    def __init__(self, session, nbytes: int, pattern, h2d: bool):
        cuda = session.cuda
        self.session, self.nbytes, self.h2d = session, nbytes, h2d
        self.handles = []
        session.check_device_alloc(nbytes, f"GPU {session.index} memory")
        try:
            self.host = cuda.pagelocked_empty(nbytes, np.uint8, mem_flags=cuda.host_alloc_flags.PORTABLE)
            self.handles.append(self.host.base)
            with self.session.current():
                self.dev = cuda.mem_alloc(nbytes)
                self.handles.append(self.dev)
                if h2d:
                    self.host[:] = pattern
                else:
                    cuda.memcpy_htod(self.dev, pattern)
        except BaseException:
            self.close()
            raise
        self.leg = Leg(session)

    def reset(self):
        if self.h2d:
            with self.session.current():
                self.session.cuda.memset_d8(self.dev, 0xA5, self.nbytes)
                self.session.synchronize()
        else:
            self.host.fill(0xA5)

    def issue(self):
        cuda = self.session.cuda
        with self.leg.issue() as stream:
            if self.h2d:
                cuda.memcpy_htod_async(self.dev, self.host, stream)
            else:
                cuda.memcpy_dtoh_async(self.host, self.dev, stream)

    def check(self, want):
        if self.h2d:
            got = np.empty(self.nbytes, np.uint8)
            with self.session.current():
                self.session.cuda.memcpy_dtoh(got, self.dev)
        else:
            got = self.host
        if not np.array_equal(got, want):
            bad = int(np.flatnonzero(got != want)[0])
            raise CaseFailed(f"{'H2D' if self.h2d else 'D2H'} copy of GPU {self.session.index} wrong at byte {bad}")

    def close(self):
        for h in self.handles:
            h.free()
        self.handles = []


class HostLinksRun(CaseRun):
    uses_managed_memory = False
    verify_every_sample = False

    def __init__(self, ctx, case):
        super().__init__()
        if len(ctx.devices) < 2:
            raise CaseSkipped(f"needs two GPUs to share the host; the run has {gpus_text(ctx.devices)}; pass --device all")
        self.nbytes, self.h2d = case.params["bytes"], case.params["direction"] == "h2d"
        ctx.session.check_host_alloc(len(ctx.devices) * self.nbytes, "pinned host memory")
        self.pattern = byte_pattern(self.nbytes)
        self.ends = []
        try:
            for g in ctx.devices:
                self.ends.append(GpuEnd(ctx.peer(g)[0], self.nbytes, self.pattern, self.h2d))
        except BaseException:
            self.close()
            raise
        self.extra["gpus"] = len(self.ends)

    def reset(self):
        for e in self.ends:
            e.reset()

    def sample(self, timer):
        n, ends = self.nbytes, self.ends
        for e in ends:  # each GPU alone
            with timer.phase(f"alone{e.session.index}", bytes=n, ceiling="pcie", gpu=False):
                e.issue()
                t = e.leg.seconds()
            timer.set_gpu_time(f"alone{e.session.index}", t)
        # all at once: one thread per GPU, issue after one barrier, wait after the next
        issued, errors = threading.Barrier(len(ends) + 1), []
        waited = threading.Barrier(len(ends) + 1)

        def drive(e):
            try:
                issued.wait()
                e.issue()
            except BaseException as ex:  # reported by the main thread
                errors.append(ex)
            finally:
                waited.wait()
            try:
                e.leg.seconds()
            except BaseException as ex:
                errors.append(ex)

        threads = [threading.Thread(target=drive, args=(e,), daemon=True) for e in ends]
        for t in threads:
            t.start()
        issued.wait()
        t0 = time.perf_counter()
        waited.wait()
        for t in threads:
            t.join()
        wall = time.perf_counter() - t0
        if errors:
            raise errors[0]
        times = [e.leg.seconds() for e in ends]
        for e, t in zip(ends, times):
            timer.add_phase(f"gpu{e.session.index}", t, wall, bytes=n, ceiling="pcie")
        timer.add_phase("all", max(times), wall, bytes=n * len(ends), ceiling=f"pcie-x{len(ends)}")

    def verify(self):
        for e in self.ends:
            e.check(self.pattern)

    def finish_rows(self, rows):
        by = {r["phase"]: r for r in rows}
        ratios = [by[f"gpu{e.session.index}"]["bytes_per_s"] / by[f"alone{e.session.index}"]["bytes_per_s"]
                  for e in self.ends if f"gpu{e.session.index}" in by and f"alone{e.session.index}" in by]
        if ratios:
            for r in rows:
                r["sharing_cost"] = 1.0 - float(np.mean(ratios))

    def close(self):
        for e in getattr(self, "ends", []):
            e.close()
        self.ends = []


OP = register(Op(
    name="host-links",
    about="H2D or D2H to every GPU at once (a host thread each) beside each GPU alone: what sharing the host costs",
    axes=AxisSet([
        AxisSpec("direction", "choice", default=("h2d", "d2h"), choices=("h2d", "d2h")),
        AxisSpec("bytes", "size", default=(64 * 1024**2, 256 * 1024**2, 1024**3), minimum=1),
    ]),
    phases=("alone0", "gpu0", "all"),
    run=HostLinksRun,
    spans_devices=True,
    sample_rate=10e9,
    min_sample_s=1e-3,
))
