"""Plans that move a memory kind their own way, composed for one iteration.

A pipelined plan (``pinned-pipelined``) runs each iteration in chunks over streams: its copies
and kernel are pinned's, composed chunk by chunk (so each chunk pays its own launch and copy
latency; a warp-pages kernel's chunks, a few warps each, walk their pages at once over the
streams); the host's writes and reads are pinned memory's (the other chunks' copies beside them
slowed them by a median 2-7% in the workloads measured), and the host also issues every chunk's
work (``other``: measured per iteration by its own loop, plus a measured cost per extra pass).
The iteration is its busiest resource (the host, one thread; the copy engine each way; the
kernel) plus a chunk's share of the rest (filling and draining the pipeline: the host's write
and read, and the longer of its issuing and the GPU's steps, which run while it issues);
``overlap`` is what that hides (negative).

A staged plan (``pageable-staged``) needs no composition of its own: its copies are its own
curves and the rest is pageable memory's (``BORROWS`` in :mod:`umprof.model.calibration`).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from umprof.measure import strategies
from umprof.model.calibration import STEADY_PHASES
from umprof.model.compose import PhaseComposition
from umprof.model.curves import at_span
from umprof.model.pages import PageSimulation
from umprof.model.workload import Workload

LAUNCH_FALLBACK = 10e-6  # pycuda's host time per kernel launch (H200, H100), where no calibration measured it


class PlanComposition(PhaseComposition):
    """The phase composition with the plans' own (see the module's docstring)."""

    def _pipelined(self, strategy, w: Workload, pages: "PageSimulation.Step") -> dict[str, float]:
        """One iteration chunk by chunk over streams (see the module's docstring)."""
        plan = strategies.get(strategy)
        chunk, k = plan.chunking(w.bytes)
        B, gw = w.bytes, w.gpu_writes

        def spread(name, total):
            if total <= 0:
                return 0.0
            n = math.ceil(total / chunk - 1e-9)
            return n * self.curve(strategy, name)(total / n)

        ph = dict.fromkeys(STEADY_PHASES, 0.0)
        # the host's writes and reads: pinned memory's, at the rate of the span it touches. Beside
        # the other chunks' copies they measured a median 1.02-1.07x of pinned memory's own in the
        # same runs (H200: 26 writes, 25 reads; H100: 6 and 8, quartiles 0.95-1.15), where the
        # calibration's pipelined loop gave 0.7-3.0x from one run to the next (the host's rate
        # belongs to the allocation: the same loops a minute apart moved by up to 46%).
        bw, br = w.host_write_bytes, w.host_read_bytes
        ph["host_write"] = at_span(self.curve(strategy, "host_write"), bw, w.host_span)
        ph["host_read"] = at_span(self.curve(strategy, "host_read"), br, w.host_span)
        ph["h2d"] = spread("h2d", B if pages.first else bw)
        if gw > 0:
            ph["d2h"] = spread("d2h", br)
        # k - 1 whole chunks and the rest (the loop's chunks: whole 64 KiB pages, the last one shorter)
        last = B - (k - 1) * chunk
        sizes = [(n, dataclasses.replace(w, bytes=size, kernel_s=w.kernel_s * size / B, copies=1))
                 for n, size in ((k - 1, chunk), (1, last)) if n and size > 0]
        step = PageSimulation.Step(first=pages.first)
        ph["kernel"] = sum(n * self._kernel(strategy, wc, step) for n, wc in sizes)
        if w.pattern == "warp-pages" and k > 1:
            # a chunk's warp-pages passes are one warp's walks of its pages, a few warps on the whole GPU:
            # the streams' chunks walk theirs at once, so the chunks' kernels cost a stream's share of
            # them, never less than one kernel's passes over the whole buffer without the walk's floor
            ph["kernel"] = max(ph["kernel"] / min(plan.streams, k), self._kernel(strategy, w, step, walk=False))
        # the host issuing every chunk's copies, passes and result (one thread, between its writes)
        copied = (B if pages.first else bw) + (br if gw > 0 else 0.0)
        ph["other"] = self._issue(strategy, B, k, copied) + k * (w.reuse - 1) * self._launch_cost(strategy)
        host = ph["host_write"] + ph["host_read"] + ph["other"]
        gpu = ph["h2d"] + ph["kernel"] + ph["d2h"]
        busiest = max(host, ph["h2d"], ph["kernel"], ph["d2h"])
        # one chunk's steps in a row: the host writes it, issues its work while the GPU runs what
        # was issued already (a launch is queued in ~10 µs, a pass may take longer), reads it back
        in_a_row = ph["host_write"] + ph["host_read"] + max(ph["other"], gpu)
        ph["overlap"] = busiest + max(in_a_row - busiest, 0.0) / k - (host + gpu)
        return ph

    def _issue(self, strategy, nbytes, k, copied) -> float:
        """The host's time to issue an iteration's chunks: a fixed part per chunk (the calibration's
        one-chunk 64 KiB loop) and the rest of the calibrated loop's issuing in proportion to the
        bytes copied (issuing a large pinned copy takes the host time in proportion to its size)."""
        curve = self.curve(strategy, "pipe_issue")
        if not curve:
            return 0.0
        base = float(curve.ys[np.argmin(curve.xs)])
        whole = curve(nbytes)  # the calibration copied the whole buffer both ways
        per_byte = max(whole - k * base, 0.0) / (2 * nbytes)
        return k * base + per_byte * copied

    def _launch_cost(self, strategy) -> float:
        """The host's time to issue one more kernel pass of a chunk (calibration-loop-pipelined:
        passes 1 and 9 apart), else LAUNCH_FALLBACK."""
        key = ("launch", strategy)
        if key not in self._values:
            one = self._select(strategy, "pipelined", "pipelined", column="it_issue_s", reuse=1)
            nine = self._select(strategy, "pipelined", "pipelined", column="it_issue_s", reuse=9)
            costs = [(nine[b] - one[b]) / 8 / strategies.get(strategy).chunking(int(b))[1]
                     for b in one if b in nine]
            self._values[key] = max(float(np.median(costs)), 0.0) if costs else LAUNCH_FALLBACK
        return self._values[key]
