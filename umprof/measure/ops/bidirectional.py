"""``bidirectional``: H2D and D2H at the same time on two streams (nvbandwidth's bidirectional
copies), beside each direction alone.

Each sample times the H2D copy alone (phase ``h2d``), the D2H copy alone (``d2h``), then both
at once (``both``: issued on two streams after one event, its wall time by the legacy stream,
which waits for both). Each direction's own end is an event on its stream, so its rate while
the other direction runs is known too: ``h2d_both_bytes_per_s``, ``d2h_both_bytes_per_s``,
and their sum, ``both_bytes_per_s`` (bytes of both directions over the wall time). Pinned host
memory; both copies' results are checked.
"""

from __future__ import annotations

import numpy as np

from umprof.core.axes import AxisSet, AxisSpec
from umprof.core.errors import CaseFailed
from umprof.measure.ops.base import CaseRun, Op, register
from umprof.measure.ops.transfer import byte_pattern


class BidirectionalRun(CaseRun):
    verify_every_sample = False  # every sample copies the same bytes to the same places

    def __init__(self, ctx, case):
        super().__init__()
        s = self.session = ctx.session
        cuda = s.cuda
        n = self.nbytes = case.params["bytes"]
        s.check_device_alloc(2 * n)
        s.check_host_alloc(2 * n)
        self.pattern = byte_pattern(n)
        self.up = cuda.pagelocked_empty(n, np.uint8)  # source of H2D
        self.down = cuda.pagelocked_empty(n, np.uint8)  # destination of D2H
        self.dev_in, self.dev_out = cuda.mem_alloc(n), cuda.mem_alloc(n)
        self.up[:] = self.pattern
        cuda.memcpy_htod(self.dev_out, self.pattern[::-1].copy())  # what D2H brings back: the pattern reversed
        self.streams = (cuda.Stream(), cuda.Stream())
        self.go, self.h2d_end, self.d2h_end = cuda.Event(), cuda.Event(), cuda.Event()

    def reset(self):
        self.down.fill(0xFF)  # poison: the check proves the copy wrote

    def sample(self, timer):
        cuda, s, n = self.session.cuda, self.session, self.nbytes
        with timer.phase("h2d", bytes=n, ceiling="pcie"):
            cuda.memcpy_htod_async(self.dev_in, self.up, s.stream)
        with timer.phase("d2h", bytes=n, ceiling="pcie"):
            cuda.memcpy_dtoh_async(self.down, self.dev_out, s.stream)
        up, down = self.streams
        with timer.phase("both", bytes=2 * n, ceiling="pcie-duplex"):
            self.go.record(s.stream)  # both streams wait for the legacy stream: they start together
            cuda.memcpy_htod_async(self.dev_in, self.up, up)
            self.h2d_end.record(up)
            cuda.memcpy_dtoh_async(self.down, self.dev_out, down)
            self.d2h_end.record(down)
        h2d_s = self.h2d_end.time_since(self.go) / 1e3
        d2h_s = self.d2h_end.time_since(self.go) / 1e3
        timer.sample.extra.setdefault("both", {}).update(h2d_both_s=h2d_s, d2h_both_s=d2h_s)

    def verify(self):
        got = np.empty(self.nbytes, np.uint8)
        self.session.cuda.memcpy_dtoh(got, self.dev_in)
        for what, have, want in (("h2d", got, self.pattern), ("d2h", self.down, self.pattern[::-1])):
            if not np.array_equal(have, want):
                bad = int(np.flatnonzero(have != want)[0])
                raise CaseFailed(f"{what} copy (both directions at once) wrong at byte {bad}")

    def finish_rows(self, rows):
        both = next((r for r in rows if r["phase"] == "both"), None)
        if both is None:
            return
        n = self.nbytes
        facts = {"h2d_both_bytes_per_s": n / both["h2d_both_s"], "d2h_both_bytes_per_s": n / both["d2h_both_s"],
                 "both_bytes_per_s": 2 * n / both["time_median_s"]}
        for r in rows:
            r.update(facts)

    def close(self):
        for d in (getattr(self, "dev_in", None), getattr(self, "dev_out", None)):
            if d is not None:
                d.free()
        for h in (getattr(self, "up", None), getattr(self, "down", None)):
            if h is not None:
                h.base.free()
        self.dev_in = self.dev_out = self.up = self.down = None


OP = register(Op(
    name="bidirectional",
    about="H2D and D2H at once on two streams, beside each alone (nvbandwidth's bidirectional copies)",
    axes=AxisSet([AxisSpec("bytes", "size", default=(64 * 1024**2, 256 * 1024**2, 1024**3), minimum=1)]),
    phases=("h2d", "d2h", "both"),
    run=BidirectionalRun,
    sample_rate=10e9,
    min_sample_s=1e-3,
))
