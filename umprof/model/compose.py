"""An iteration's phases composed from a calibration's curves: step by step, for one strategy.

Each step of the ``loop`` op's iteration (the host's writes, copies or prefetches, the kernel,
copies back, the host's reads, the host's time between them) is a curve of the calibration read
at the bytes the page simulation (:mod:`umprof.model.pages`) says cross that way. A kernel is its
fixed part, any migration on its faults and its passes; a pass is the streaming pass over the
touched bytes scaled by the pattern's ratio, a warp-pages pass never under one warp's walk.
"""

from __future__ import annotations

import math

from umprof.measure import strategies
from umprof.model.calibration import (CACHED_HOST, CACHED_UNLESS_COPIED_INTO, FETCH_WORDS, GPU_STEPS,
                                      HOST_STEPS, PATTERN_BYTES, STEADY_PHASES, CalibrationCurves, kind)
from umprof.model.curves import Curve, at_span
from umprof.model.pages import PageSimulation
from umprof.model.workload import Workload


class PhaseComposition(CalibrationCurves):
    """A calibration's curves composed into one iteration's phases (see the module's docstring)."""

    def _iteration(self, strategy, w: Workload, pages: "PageSimulation.Step") -> dict[str, float]:
        """Seconds per phase of one iteration, the bytes each rate applies to from the page step."""
        c = lambda name, b: self.curve(strategy, name)(b)  # noqa: E731
        B, k = w.bytes, kind(strategy)
        bw, br = w.host_write_bytes, w.host_read_bytes
        ph = dict.fromkeys(STEADY_PHASES, 0.0)
        span = w.host_span

        def local(curve: Curve, nbytes: float) -> float:
            return at_span(curve, nbytes, span)

        copied_back = k == "copy" and w.gpu_writes > 0 and br > 0
        host_side = CACHED_HOST[0] if strategy in CACHED_UNLESS_COPIED_INTO and not copied_back else strategy
        # the host's write: local, or faulting pages back from the GPU; an input apart from the output is
        # only copied out of, never into (CACHED_UNLESS_COPIED_INTO)
        write_side = CACHED_HOST[0] if strategy in CACHED_UNLESS_COPIED_INTO and w.split else host_side
        if bw:
            remote = min(pages.write_remote_bytes, bw)
            fault = "fault_write" if k in ("on-demand", "prefetch", "read-mostly") else None
            ph["host_write"] = local(self.curve(write_side, "host_write"), bw - remote) \
                + (c(fault, remote) if fault else 0.0)
        # copies (the application's, in its parts) and prefetches
        if k == "copy":
            ph["h2d"] = self._copies(strategy, "h2d", B if pages.first else bw, w.copies)
            if copied_back:
                ph["d2h"] = self._copies(strategy, "d2h", br, w.copies)
        elif k == "prefetch":
            ph["h2d"] = c("h2d", pages.prefetch_in_bytes)
            ph["d2h"] = c("d2h", pages.prefetch_out_bytes)
        ph["kernel"] = self._kernel(strategy, w, pages)
        # the host's read: local, or faulting pages back
        if br:
            remote = min(pages.read_remote_bytes, br)
            if k in ("on-demand", "prefetch"):
                # a compiled program's loop waits on each page in turn, where numpy's sum reads ahead of its faults
                words = w.host_reader == "words" and self.measures_read_words(strategy)
                ph["host_read"] = local(self._managed_local_read(strategy), br - remote) \
                    + c("fault_read_words" if words else "fault_read", remote)
            elif k == "read-mostly":
                ph["host_read"] = local(self.curve(strategy, "local_read"), br)
            else:
                ph["host_read"] = local(self.curve(host_side, "host_read"), br)
        ph["other"] = self.gap(strategy, B,
                               sum(ph[p] > 0 for p in GPU_STEPS), sum(ph[p] > 0 for p in HOST_STEPS))
        return ph

    def _copies(self, strategy, direction: str, nbytes: float, parts: int) -> float:
        """``nbytes`` copied one way in ``parts`` equal copies, each at its own size's time (a plan, which
        copies the buffer its own way, in one). Copies in parts cost what the calibration measured
        copies of their size made back to back (``h2d_part``: their calls' latency included) up to the
        largest part it measured, never less than its smallest's; larger ones, or without that
        measurement, what one copy of their size costs."""
        if nbytes <= 0:
            return 0.0
        parts = max(1, min(int(parts), math.ceil(nbytes))) if strategies.get(strategy).copies_in_parts else 1
        size = nbytes / parts
        if parts > 1:
            each = self.curve(strategy, direction + "_part")
            if each and size <= each.xs.max():
                return parts * each(max(size, each.xs.min()))
        return parts * self.curve(strategy, direction)(size)

    def _kernel(self, strategy, w: Workload, pages: "PageSimulation.Step", walk: bool = True) -> float:
        """The kernel phase of one iteration: fixed part, migration on faults, passes (a warp-pages
        pass bounded below by one warp's walk of a page unless ``walk`` is False); never under the
        workload's own kernel time (``kernel_s``: an application's kernels, which run as long as
        their work takes wherever their data is)."""
        c = lambda name, b: self.curve(strategy, name)(b)  # noqa: E731
        B, k = w.bytes, kind(strategy)
        each = self._pass(strategy, w, walk)
        mig = 0.0
        if pages.migrate_bytes:
            name = "migrate_dup" if k == "read-mostly" else "migrate"
            mig = c(name, pages.migrate_bytes) * self.migrate_ratio(strategy, w.pattern) \
                * self.touched_ratio(strategy, "migrate", w.touched)
        return max(c("fixed", B) + w.reuse * each, w.kernel_s) + mig

    def _pass(self, strategy, w: Workload, walk: bool = True) -> float:
        """One pass of the workload's kernel over its touched pages of resident data.

        A warp-pages pass gives each touched page one warp, which walks it in a chain of loads:
        where the calibration measured that walk (WALK_LOOP), it costs what a dense pass over as
        many pages costs (spread or not, a page is one warp's), and never less than one walk,
        however few the pages: all of them are walked at once. The verification runs of 2026-11
        measured memory read across PCIe at 156-211 µs a pass over 20-80 pages (H200), where the
        pass in proportion to its bytes predicted 13-53 µs, and device memory at 32-42 µs over
        20-320 pages, as over 256."""
        dense = self._dense_pass(strategy, w)
        floor = self.walk(strategy, w.gpu_writes) if walk and w.pattern == "warp-pages" else None
        return dense * self.touched_ratio(strategy, "pass", w.touched) if floor is None else max(dense, floor)

    def _dense_pass(self, strategy, w: Workload) -> float:
        """One pass in the workload's pattern over its touched bytes of resident data, as if they
        were the whole buffer (sparse pages' own cost is the caller's)."""
        gw, touched_bytes = w.gpu_writes, w.touched * w.bytes
        if w.kernel_bytes and kind(strategy) == "link":
            # a kernel reading the buffer across the link moves what it reads, not the buffer: no more than the
            # application's kernels, in their measured time, can have moved of device memory at its peak (a
            # sparse lookup in a 1 GiB table reads megabytes of it a batch)
            touched_bytes = min(touched_bytes, w.kernel_bytes / w.reuse)
        each = self.pass_time(strategy, gw, touched_bytes)
        # a pass is its launch (the host's, ~5-15 µs, whatever the pattern) and its memory work; the
        # pattern scales the work alone (on the H100, 32 random passes over 64 KiB took 11 µs each,
        # launch-bound, where the 16 MiB pattern ratio of the whole pass had predicted 42 µs). Under
        # 16 MiB the work is the 16 MiB pass's in proportion to the bytes: what a 64 KiB pass measures
        # above the floor is the launch's noise, which no pattern multiplies. In device memory that work
        # is a fraction of a microsecond; across PCIe a random pass over 64 KiB fetches a 64-byte unit
        # per word (H200: 21 µs a pass, where the launch-bound figure said 6.5 µs).
        floor = self.pass_floor(strategy, gw)
        if touched_bytes < PATTERN_BYTES:
            work = max(self.pass_time(strategy, gw, PATTERN_BYTES) - floor, 0.0) * touched_bytes / PATTERN_BYTES
        else:
            work = max(each - floor, 0.0)
        scale = self.pass_ratio(strategy, w.pattern, gw, touched_bytes)
        if w.pattern == "strided" and w.stride > FETCH_WORDS:
            # past one word per fetched unit the calibration's stride-8 ratio (every unit fetched) falls
            # with the units a sparser stride fetches
            scale *= FETCH_WORDS / w.stride
        return each + (scale - 1) * work

    def _managed_local_read(self, strategy) -> Curve:
        """The host reading on-demand managed pages that are already on the host: measured as
        READ_MOSTLY's reads of its own copies (the calibration has no such read for on-demand
        memory, whose host reads there follow the kernel's migration; managed-prefetch's follow its
        prefetch back and are its own); the strategy's own reads without it."""
        rm = self.curve("managed-advise-read-mostly", "local_read")
        return rm if rm and kind(strategy) != "prefetch" else self.curve(strategy, "host_read")
