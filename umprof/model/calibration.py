"""A calibration read as curves: the ``loop`` op's measured phases on one device, per strategy.

A :class:`CalibrationCurves` holds the ``loop`` op's measured phases (the ``calibration`` group:
``umprof calibrate``, measured here or on another machine, or a calibration shipped with umprof).
From them it builds, per strategy, curves of seconds against bytes (:mod:`umprof.model.curves`;
allocation and free, which are fixed for some strategies, follow the slope of the largest sizes
past them), each per iteration:

* ``host_write``, ``host_read``: the host's local write and read (calibration-loop-sizes);
  for managed memory also the host's faults back when the pages sit on the GPU, on a write
  (calibration-loop-host) and on a read (calibration-loop-sizes, where the kernel pulled them);
* ``h2d``, ``d2h``: the copies (or prefetches) each way; ``h2d_part``, ``d2h_part``: one copy of
  an application's copies in many parts, its call's latency included (calibration-loop-copies);
* the kernel: a fixed part (launch, the 8-byte result the host reads back) and each pass,
  read-only and in place (calibration-loop-resident, one and three passes apart), scaled by the
  measured ratio of the workload's pattern (calibration-loop-patterns at 16 MiB and, for memory
  the kernel reads on the device, calibration-loop-patterns-large at 256 MiB) and of sparse pages
  (calibration-loop-touched); for managed memory, the migration of pages on the kernel's
  faults (what the whole-buffer loop's kernel costs beyond its passes);
* ``other``: the host's time between the phases of an iteration (wall clock less the phases).

At 64 KiB-4 MiB the whole-buffer and resident loops are measured again over 25 iterations
(calibration-loop-steady, -resident-steady); where they were, their figures stand for the
3-iteration loops' (LONG_LOOPS). Allocation, the first write and free come from a loop measured
as an application pays them, where the calibration has it (calibration-loop-setup: SETUP_LOOP; for a
C program's malloc'd pages, calibration-loop-setup-malloc: SETUP_MALLOC_LOOP; for a first write that
stores each word as a program computes it, calibration-loop-setup-stores: SETUP_STORES_LOOP).

How the curves compose into an iteration is :mod:`umprof.model.compose`'s; a plan's own steps,
:mod:`umprof.model.plans`'; the prediction and ranking, :mod:`umprof.model.predict`'s.
"""

from __future__ import annotations

import functools
import math
import statistics

import numpy as np
import pandas as pd

from umprof.core.errors import UsageError
from umprof.measure import strategies
from umprof.measure.scenario import round_base
from umprof.model.curves import Curve

CALIBRATION_PREFIX = "calibration-loop-"  # the shipped calibration group's scenarios
# the column that tells the files of one frame apart (0, 1, ...): several calibrations given to --from, or
# several verification runs given to --measured; a case measured in each is a sample of each
RUN = "run"
# rows a run carries only as the reference of its own strategies' ratios (`scripts/ship_run.py --only`): the
# pageable memory measured beside a new staging ring prices the ring's host steps, not pageable memory itself
REFERENCE = "reference"
VERIFY_PREFIX = "recommend-"  # scenarios `recommend --verify` writes
SETUP_PHASES = ("alloc", "host_init", "first_extra", "free")
STEADY_PHASES = ("host_write", "h2d", "kernel", "d2h", "host_read", "other", "overlap")
# the axes of calibration-loop-sizes' whole-buffer loop (and its long and large loops): the host writes and
# reads all of the buffer each iteration, one kernel pass updates all of it
WHOLE_LOOP = dict(reuse=1, host_writes=1.0, gpu_writes=1.0, host_reads=1.0)
PHASES = SETUP_PHASES + STEADY_PHASES
PATTERN_BYTES = 16 * 1024**2  # where calibration-loop-patterns measures
PATTERN_LARGE_BYTES = 256 * 1024**2  # where calibration-loop-patterns-large measures (past the L2)
TOUCHED_REF = 0.0625  # calibration-loop-touched's fraction
# The least work above its launch that a streaming pass must show for a pattern's ratio to divide by it:
# a launch's jitter is about a microsecond (H100 and H200, 2026-11: 16 MiB passes in device memory took
# 1.2-11 us above their floor where they did work, 0 where they were launch-bound).
PASS_RESOLUTION_S = 1e-6
# A pass fetches memory 64 bytes at a time, wherever it lives. Across PCIe: over the verification runs of
# 2026-11 (H200 and H100 alike) a stride-16 pass cost 0.9-1.1x a stride-8 pass of the same bytes (every
# 64-byte unit still fetched), stride 32 0.5x and stride 64 0.3x, where 32-byte sectors had predicted
# 0.5x, 0.25x and 0.125x (the passes 1.7-2.6x their predictions). In device memory past the L2 likewise:
# passes at stride 16 over 80-150 MiB measured 0.87-1.06x a streaming pass's work, at stride 32
# over 1 GiB 0.52x and at stride 64 over 520-640 MiB 0.19-0.25x (H200 and H100), where sectors had
# predicted half of each (holdout-2, -10, -11, -12).
FETCH_WORDS = 16
# Ordinary cached host memory that only the host and the GPU's own accesses touch: one host rate. Managed
# memory advised to stay on the host (prefer-host) or mapped for the GPU (accessed-by-gpu) is such memory
# too: its pages stay on the host and the GPU reads them across the link. Over the verification runs of
# 2026-11 its host writes and reads took a median 1.00-1.05x pinned memory's in the same workload (H100:
# 219 writes, 184 reads; H200: 278, 268; quartiles 0.93-1.28, as zero-copy's and mapped memory's 0.93-1.25),
# where their own calibrated curves said 0.83-1.45x by size: one allocation's luck, which priced them up
# to 17% under pinned memory on the H100 and picked them where they measured 1.07-1.30x the fastest
# (holdout-20).
# Pageable memory is not among them: the driver copies into and out of it through its staging buffers
# (with non-temporal stores, which leave nothing in the host's caches), and its host reads and writes
# measured 16-45% slower than pinned memory's at 1-16 MiB on the H200 and the H100.
CACHED_HOST = ("pinned", "zero-copy", "mapped", "managed-advise-prefer-host", "managed-advise-accessed-by-gpu")
# ... until no copy writes into it: pageable memory that the driver only copies out of (the GPU never
# writes it back, or the host reads none of it) stays in the host's caches as pinned memory does. Over
# the verification runs of 2026-11 (25 such workloads a GPU) pageable memory's host writes took a
# median 0.84x (H200) and 0.88x (H100) of its own calibrated rate and 1.19x and 1.02x of pinned
# memory's, where pinned memory's own took 1.16x and 1.00x of it. A staging ring's threads read the
# buffer from other cores and leave it slower (pageable-staged: 1.09x and 1.14x of pageable's rate).
CACHED_UNLESS_COPIED_INTO = ("pageable",)
# Write-combined memory is uncached to the host: the CPU reads it without its caches, several times
# slower than cached memory. Where the calibration's host reads of it measured no slower than
# WC_CACHED_READ x cached memory's at every size, the platform gave it cached memory's behaviour, and it
# joins CACHED_HOST. On the H200 and H100 machines of 2026-11 its reads measured 0.89-1.03x pinned memory's
# and its writes 0.78-1.17x, while in the verification runs its writes and reads took a median 1.00x and
# 0.99x pinned memory's in the same workload on the H200 (119 and 96 workloads), 1.00x and 1.01x on the
# H100 (91 and 74): the calibration's differences were its allocations' luck, which gave write-combined
# memory a lead of up to 11%.
WRITE_COMBINED = "write-combined"
WC_CACHED_READ = 1.5
# READ_MOSTLY's kernel may not write, so the whole-buffer loop (sizes) never runs it and it has no local
# host write of its own: the host's write to pages of it that hold no GPU copy is a write to managed memory
# on the host, which managed memory that prefers the host measures (its pages stay there). Priced at its
# faults alone, a buffer the host rewrites whole each step while the GPU reads a little of it comes out
# a quarter of its time (holdout-18's 512 MiB table probed at 2%: 0.034 s a steady step predicted, 0.136 s
# measured; H100, 2026-11-25).
# A strategy's single curve taken from another strategy (BORROWS below takes them all but its own).
CURVE_BORROWS = {("managed-advise-read-mostly", "host_write"): "managed-advise-prefer-host"}
# Strategies calibrated on calibration-loop-sizes alone, whose kernel and ratios are another's:
# pageable-staged keeps pageable memory and a cudaMalloc'd buffer and differs in how the copies go (its
# copies are its own) and in what they leave behind: the ring's threads (up to 12) read and write the
# buffer from other cores, so the host's own writes and reads of it are its own curves too: they took
# 1.15x and 1.33x pageable memory's at 256 MiB (H100, 16 cores, 2026-11-25), and pageable memory's curves
# predict a staged loop's steady iteration 30% short. pinned-pipelined is pinned memory run chunk by chunk
# (its steps are pinned's, composed per chunk; only its setup is its own).
# The host's time between the steps (the gap) is the borrowed memory's for both: the staging ring's
# work lies inside its timed copies, and what its loop's wall clock left beyond them was the noise of
# two large figures' difference (calibration-7: 0 at 64 MiB, 1 ms at 256 MiB and, extrapolated, 4 ms a
# step at 1 GiB on the H200; 0.6 ms at 64 MiB and 0 at 256 MiB on the H100). Over the verification
# runs of 2026-11 with copies at 16 MiB-1 GiB (89 workload runs on the H200, 71 on the H100), the
# staged plan's steady iteration with pageable memory's gap came out a median 1.07x and 1.01x of
# the measured one, with its own 1.11x and 1.04x.
# pageable-registered is pageable memory page-locked in place: after cuMemHostRegister it is pinned
# memory to the host and the copy engines alike, so every step but its setup (the registration and
# unregistration, in proportion to the bytes) is pinned memory's.
BORROWS = {"pageable-staged": "pageable", "pinned-pipelined": "pinned", "pageable-registered": "pinned"}
# A plan's setup of its own: its allocation (the ring's slots and threads, the chunks' streams, the pages
# pinned in place), its free and its first iteration's extra. The host's first write of the buffer is the
# memory's it borrows, the same malloc'd or pinned pages written before any copy: over the verification
# sets of 2026-11 it measured a median 1.035x (H100, 510 rounds of a workload) and 1.063x (H200, 746) pageable
# memory's in the same workload for the staged plan, and 0.99-1.01x pinned memory's for the pipelined and
# registered ones, where the plans' own curves, a few samples a size, price the staged plan's at 0.91x
# and 0.87x pageable memory's (sets 20-22).
SETUP_CURVES = ("alloc", "free", "first")
# mapped memory and the registered plan allocate and free alike: malloc'd pages page-locked in place with
# cuMemHostRegister (DEVICEMAP), cuMemHostUnregister at the end (measure/strategies.py). Over the
# verification sets of 2026-11 the registered plan's allocation measured a median 1.05x mapped memory's in
# the same workload (H200, 37 workload runs; H100 1.06x, 45) and its free 1.09x and 1.13x, where each one's
# own curve, a few samples a size, puts it at 1.52x (H200) and 0.75x (H100) the other's: the two are priced
# from the median of both measurements.
SAME_SETUP = ("mapped", "pageable-registered")
SAME_SETUP_STEPS = ("alloc", "free")
OWN_CURVES = {"pageable-staged": ("h2d", "d2h", "host_write", "host_read") + SETUP_CURVES,
              "pinned-pipelined": ("pipe_issue",) + SETUP_CURVES,
              "pageable-registered": SETUP_CURVES}
# plans that move a buffer their own way: one transfer each way, whatever the application's copies
PLANS = ("pageable-staged", "pinned-pipelined")
PIPELINE_EXTRAS = ("issue_s",)  # the pipelined loop's extras a prediction uses
GPU_STEPS, HOST_STEPS = ("h2d", "kernel", "d2h"), ("host_write", "host_read")  # an iteration's timed steps
GAP_FIT_BYTES = 1024**2  # the per-step costs are fitted where the steps are short
GAP_FALLBACK = 5e-6  # per timed step, where the calibration cannot separate them
# Setup costs that are fixed for one strategy and in proportion to the bytes for another (a staging
# ring's buffers, pinning every page): past the largest calibrated size they follow the slope of the
# largest TAIL_POINTS sizes; so does the host's time between an iteration's steps (the gap), which is
# what the host does there, not the buffer's size (a kernel-only iteration over 1 GiB measured 13-31 µs
# where 4x the 256 MiB figure said 133 µs). The per-iteration steps move bytes at a rate, so they scale
# in proportion.
FIXED_OR_PROPORTIONAL = ("alloc", "free", "gap")
# calibration-loop-steady and -resident-steady: the whole-buffer loop (sizes) and the resident passes
# (resident: the host touching nothing) again at 64 KiB-4 MiB, in long loops. A 3-iteration loop's
# steady iterations follow its allocation and first iteration, and there they cost more than a long
# loop's: on the H100 pinned memory's 64 KiB copy in took 12 µs per iteration there against 5.7 µs
# over 50 iterations, its pass 30 µs against 14 µs, and the host's time between the steps of a
# five-step iteration 92 µs against 55 µs (H200: 57 against 40 µs); in calibration-5 the long loops'
# steady iteration at 64 KiB and 1 MiB was a median 0.87x (H200) and 0.89x (H100) the short loops'.
# Where a long loop measured a size, its figures stand for the short loop's.
LONG_LOOPS = {"sizes": "steady", "resident": "resident-steady"}
# calibration-loop-large: the whole-buffer loop (sizes) at 1 GiB for the plans whose rate still rises
# past 256 MiB (the staging ring) and the memory they borrow from; read beside sizes' where measured.
LARGE_LOOPS = {"sizes": "large"}
LONG_SCENARIOS = tuple(CALIBRATION_PREFIX + name for name in LONG_LOOPS.values())
# calibration-loop-setup: every strategy's loop at 64 KiB-1 GiB measured as `recommend --verify` measures
# an application (rounds, each case sampled briefly and without warm-up, the strategies of one size
# one after another). Allocation, the host's first write and free cost what the process's state makes
# them (a freshly mapped buffer's first touch, pages pinned, memory cached by the allocators), and the
# whole-buffer loop's repeated samples of one case measured them otherwise: over the verification runs
# of 2026-11 (27 workloads of 20 MiB-1 GiB per set) pageable memory's first write took a median 0.82x
# of calibration-loop-sizes' figure on the H200 and its allocation 0.64x, pinned memory's allocation
# 1.07x (1.2-1.4x at 20-56 MiB), with every set and both GPUs alike. Where it measured a strategy,
# its allocation, first write and free stand for the whole-buffer loop's.
SETUP_LOOP = "setup"
SETUP_FROM_SETUP_LOOP = ("alloc", "host_init", "free")
# calibration-loop-setup-malloc: the setup loop again for the strategies whose buffer is the application's
# pageable memory (strategies.Strategy.malloc_backed), that memory backed as a C program's malloc backs it
# (host_pages = malloc). A workload of malloc'd pages (Workload.host_pages) takes their allocation, first
# write and free from it, where the calibration measured it; the steady phases are numpy's (once its
# pages are in, the host's accesses and the copies were not measured to differ).
SETUP_MALLOC_LOOP = "setup-malloc"
# calibration-loop-setup-stores: the host's first write of every strategy's buffer, on numpy's and on
# malloc's pages, stored word by word as a program computes its data (the loop's first_write = stores)
# instead of copied in with memcpy, whose large copies store around the caches and so skip reading each
# line for ownership. A program that computes its buffer writes page-locked memory at that slower rate
# (the applications' producers wrote 1 GiB of it in 0.20-0.31 s on both GPUs, where the memcpy of
# calibration-loop-setup took 0.11-0.12 s), while memory whose pages fault in as they are written has each
# page zeroed just before, in the caches. The loop copies each buffer in too (first_write = copy), so that
# a run says what storing costs against copying on its own machine. A workload first written by stores
# (Workload.first_write: every application `umprof advise` reads) takes its first write from it where the
# calibration measured the strategy so: that ratio times the copied first write of the other setup loops
# (H100 and H200 machines of 16 cores, 2026-11-26, at 1 GiB: 1.5-2.1x for page-locked memory, 0.7-1.2x for
# memory whose pages fault in, by machine); its other setup steps and its steady host writes are the other
# loops'.
SETUP_STORES_LOOP = "setup-stores"
SETUP_LOOPS = (SETUP_LOOP, SETUP_MALLOC_LOOP, SETUP_STORES_LOOP)
# calibration-loop-copies: an application's copies in many parts (8 MiB each way per iteration in 8-2048
# synchronous copies of 1 MiB-4 KiB). A part's time, its call's latency included, is a curve of its own
# (``h2d_part``, ``d2h_part``: seconds a copy against the bytes of one copy), which prices an application's
# copies in parts (Workload.copies > 1) where the calibration has it; the whole-buffer loops' one copy an
# iteration, read at a record's size, priced pinned memory's 16 KiB records at half of pageable memory's,
# where a program copying 16 KiB records measured them alike (on the H100, 2026-11). Its loops answer for
# these curves alone: their gaps and sizes are no whole-buffer loop's.
PARTS_LOOP = "copies"
PARTS_UNMEASURED = ("this calibration did not measure copies in parts (calibration-loop-copies, added in 0.4.0): "
                    "the copies are priced as copies of their size made one an iteration, without each call's "
                    "latency, which on an H100 priced 16 KiB copies from pinned memory at half of pageable "
                    "memory's where they measured alike; `umprof calibrate` measures it")
# calibration-loop-read-words: the whole-buffer loop (sizes) of pinned and of the managed ways whose host reads
# fault pages back (on-demand, prefer-gpu, prefetched) at 1-256 MiB, the host reading the buffer back with
# numpy's sum and, as a compiled program does, each word in turn (the loop's host_reader). The two readers
# pay for the same pages' faults differently (on an H200, 2026-12-03, benchmarks/fault_read.cu: at 64 MiB after
# a kernel that read and wrote the buffer, a C program's read took 8.1-9.4 ms beyond pinned memory's, numpy's
# 5-7 ms and the calibration's 3.3 ms; in this loop on an H200 of 16 cores, 2026-12-04, the words reader's extra
# came 1.4-3.4 ms above numpy's at 64 MiB and 11-13 ms at 256 MiB). A workload read back word by word (Workload.host_reader: every compiled
# program `umprof advise` reads) prices its faulting read as numpy's (``fault_read``) plus the difference of the
# two readers' extras beyond pinned memory in the same run (``fault_read_words``), where the calibration
# measured it. Its loops answer for that curve alone: their gaps and sizes are no whole-buffer loop's.
READ_WORDS_LOOP = "read-words"
# calibration-loop-walk: a warp-pages pass over 16 pages (a sixteenth of 16 MiB), one warp each: one
# warp's walk of a page, which bounds every warp-pages pass from below (see Calibration._pass).
WALK_LOOP = "walk"
WALK_TOUCHED = 0.0625


def kind(name: str) -> str:
    """How a strategy moves data: 'copy' (explicit copies), 'link' (kernels read across PCIe),
    'on-demand' (managed pages migrate on faults), 'prefetch' or 'read-mostly'."""
    st = strategies.get(name)
    if st.copies:
        return "copy"
    if st.managed:
        if st.prefetch:
            return "prefetch"
        if st.advice == "read-mostly":
            return "read-mostly"
        if st.advice in ("prefer-host", "accessed-by-gpu"):
            return "link"
        return "on-demand"
    return "link"


def _ratios_by_run(rows: pd.DataFrame, figures) -> dict[float, list[float]]:
    """Size → the ratio of two figures measured in the same run, one a run that measured both at that size:
    ``figures(run's rows)`` gives (own, reference), each size → seconds."""
    ratios: dict[float, list[float]] = {}
    for _, run in (rows.groupby(RUN, dropna=False) if RUN in rows.columns else [(0, rows)]):
        own, base = figures(run)
        for b, t in own.items():
            if base.get(b, 0) > 0:
                ratios.setdefault(b, []).append(t / base[b])
    return ratios


def _median_per_size(curves) -> dict[float, float]:
    """Size → the median of the curves' figures at that size, over the curves that measured it."""
    return pd.DataFrame(list(curves)).median().to_dict()


class CalibrationCurves:
    """The loop's phases measured on one device, as curves per strategy (see the module's docstring)."""

    def __init__(self, frame: pd.DataFrame, device: dict | None = None, source: str = ""):
        self.device = device or {}
        self.source = source
        where = source or "results"
        if "op" not in frame.columns or not (frame["op"] == "loop").any():
            raise UsageError(f"{where}: no loop measurements to predict from (a calibration of this version is "
                             "`umprof run calibration -o FILE`; older calibrations measured the one-shot lifecycle)")
        loop = frame[(frame["op"] == "loop") & frame["scenario"].astype(str).str.startswith(CALIBRATION_PREFIX)]
        if loop.empty:
            raise UsageError(f"{where}: no calibration-loop-* scenarios in it; run `umprof run calibration` first")
        self.skipped = {}
        for _, r in loop[(loop["status"] == "skipped") & (loop["phase"] == "total")].iterrows():
            self.skipped.setdefault(r["axis.strategy"], r["reason"])
        ok = loop[loop["status"] == "ok"].copy()
        steady_its = (ok["axis.iterations"].astype(int) - 1).clip(lower=1)
        ok["per_iteration"] = ok["time_median_s"] / steady_its
        for col in PIPELINE_EXTRAS:  # the pipelined loop's host time, summed over its steady iterations
            if col in ok.columns:
                ok["it_" + col] = ok[col] / steady_its
        # the scenario each row belongs to, its rounds as one (a loop measured in rounds: SETUP_LOOP)
        ok["base_scenario"] = round_base(ok["scenario"].astype(str))
        reference = ok[REFERENCE].astype("boolean").fillna(False).astype(bool) if REFERENCE in ok.columns else None
        self.reference_rows = ok[reference] if reference is not None else ok.iloc[:0]
        if reference is not None:
            ok = ok[~reference]
        setup_loop = ok["base_scenario"].isin([CALIBRATION_PREFIX + name for name in SETUP_LOOPS])
        # the setup loop answers for allocation, first write and free alone (see SETUP_LOOP): the curves
        # of the steady iteration, their gaps and the largest calibrated size are the other loops'
        self.setup_rows, ok = ok[setup_loop], ok[~setup_loop]
        parts_loop = ok["base_scenario"] == CALIBRATION_PREFIX + PARTS_LOOP
        self.parts_rows, ok = ok[parts_loop], ok[~parts_loop]
        read_loop = ok["base_scenario"] == CALIBRATION_PREFIX + READ_WORDS_LOOP
        self.read_rows, ok = ok[read_loop], ok[~read_loop]
        self.ok = ok
        self.strategies = sorted(ok["axis.strategy"].unique())
        for s in self.strategies:
            self.skipped.pop(s, None)
        self.max_bytes = int(ok["axis.bytes"].max())
        self._curves: dict[tuple, Curve] = {}
        self._values: dict[tuple, float] = {}
        self._gap_table: pd.DataFrame | None = None
        self._by_scenario: dict[str, dict[tuple, pd.DataFrame]] = {}
        self._selections: dict[tuple, dict[float, float]] = {}

    @classmethod
    def from_results(cls, rs, source: str = "") -> "CalibrationCurves":
        return cls(rs.frame, rs.devices[0] if rs.devices else {}, source)

    # -- what was measured --------------------------------------------------------------------

    def _select(self, strategy, scenario, phase, column="per_iteration", rows=None, **axes) -> dict[float, float]:
        """bytes → the median of ``column`` over the cases of one scenario matching ``axes`` (none
        where the calibration has no such column: one older than the measurement), among ``rows``
        (default: the calibration's); for a loop measured again in a long loop (LONG_LOOPS) or at
        larger sizes (LARGE_LOOPS), that loop's figures at its sizes."""
        out = self._select_one(strategy, scenario, phase, column, rows=rows, **axes)
        for also in (LONG_LOOPS, LARGE_LOOPS):
            if scenario in also:
                out.update(self._select_one(strategy, also[scenario], phase, column, rows=rows, **axes))
        return out

    def _select_one(self, strategy, scenario, phase, column, rows=None, **axes) -> dict[float, float]:
        base = CALIBRATION_PREFIX + scenario  # all of the scenario's rounds, where it was measured in rounds
        if rows is not None:
            mine = rows[(rows["phase"] == phase) & (rows["base_scenario"] == base)]
            return self._selected(strategy, phase, column, mine, axes)
        key = (strategy, scenario, phase, column, tuple(sorted(axes.items())))
        if key not in self._selections:  # the curves ask for the same selection many times over
            own = "setup" if scenario in SETUP_LOOPS else "ok"
            self._selections[key] = self._selected(strategy, phase, column, self._own_rows(own, phase, base), axes)
        return dict(self._selections[key])

    def _selected(self, strategy, phase, column, d: pd.DataFrame, axes: dict) -> dict[float, float]:
        """bytes → the median of ``column`` over the rows ``d`` (one phase of one scenario) of the strategy (for the
        kernel phase, its peers') that match ``axes``."""
        if column not in d.columns:
            return {}
        m = d["axis.strategy"].isin(self._kernel_peers(strategy) if phase == "kernel" else (strategy,))
        for k, v in axes.items():
            col = d[f"axis.{k}"]
            m &= (col.astype(float) - v).abs() < 1e-9 if isinstance(v, float) else col == v
        sub = d[m]
        return sub.groupby("axis.bytes")[column].median().to_dict() if not sub.empty else {}

    def _own_rows(self, which: str, phase: str, scenario: str) -> pd.DataFrame:
        """The rows of one phase of one scenario (its rounds as one) among the calibration's own (``which``: 'ok',
        its steady loops', or 'setup', SETUP_LOOPS'): split by phase and scenario once (curves select from them
        hundreds of times)."""
        d = self.setup_rows if which == "setup" else self.ok
        if which not in self._by_scenario:  # as numpy objects: comparisons on a few rows cost less than on arrow's
            text = {c: object for c in d.columns if pd.api.types.is_string_dtype(d[c].dtype)}
            self._by_scenario[which] = dict(list(d.astype(text).groupby(["phase", "base_scenario"], sort=False)))
        found = self._by_scenario[which].get((phase, scenario))
        return found if found is not None else d.iloc[:0]

    @property
    def cached_host(self) -> tuple[str, ...]:
        """The calibrated strategies whose host memory is ordinary cached memory to the host, their
        host rates pooled (CACHED_HOST), with write-combined memory among them where its host reads
        measured as cached memory's (WC_CACHED_READ)."""
        if "cached_host" not in self._values:
            pool = tuple(s for s in CACHED_HOST if s in self.strategies)
            read = functools.partial(self._select, phase="host_read", scenario="sizes", **WHOLE_LOOP)
            wc = read(WRITE_COMBINED) if WRITE_COMBINED in self.strategies else {}
            ref = _median_per_size(read(s) for s in pool)
            ratios = [wc[b] / ref[b] for b in wc if ref.get(b, 0) > 0]
            if ratios and max(ratios) <= WC_CACHED_READ:
                pool += (WRITE_COMBINED,)
            self._values["cached_host"] = pool
        return self._values["cached_host"]

    def _kernel_peers(self, strategy) -> tuple[str, ...]:
        """The strategies whose kernel phase stands for the strategy's, their measurements pooled:
        for an explicit copy, every one that copies whole iterations into a cudaMalloc'd buffer (the
        same kernel on the same memory; a pipelined plan's kernel runs chunk by chunk); else the
        strategy alone."""
        st = strategies.get(strategy)
        if st.copies and not st.pipelined:
            return tuple(s for s in strategies.EXPLICIT if not strategies.get(s).pipelined)
        return (strategy,)

    def curve(self, strategy, name, pages: str = "numpy", first_write: str = "copy") -> Curve:
        """One of the strategy's per-iteration curves (see the module's docstring), cached; a setup step
        of malloc'd pages (``pages``, SETUP_MALLOC_LOOP) where the calibration measured the strategy so, and
        the first write stored word by word (``first_write``, SETUP_STORES_LOOP) where it measured that."""
        if name not in OWN_CURVES.get(strategy, ()):
            strategy = BORROWS.get(strategy, strategy)
        strategy = CURVE_BORROWS.get((strategy, name), strategy)
        stored = first_write != "copy" and name == "host_init"
        if pages != "numpy" and not (stored and self.measures_stores(strategy, pages)) \
                and not (name in SETUP_FROM_SETUP_LOOP and self.measures_pages(strategy, pages)):
            pages = "numpy"
        if not (stored and self.measures_stores(strategy, pages)):  # on the pages the curve is read from now
            first_write = "copy"
        key = (strategy, name) + ((pages,) if pages != "numpy" else ()) + ((first_write,) if first_write != "copy" else ())
        if key not in self._curves:
            self._curves[key] = Curve(self._build(strategy, name, pages, first_write),
                                      fitted_tail=name in FIXED_OR_PROPORTIONAL)
        return self._curves[key]

    def measures_pages(self, strategy, pages: str) -> bool:
        """Whether the calibration measured the strategy's setup on pages backed so (SETUP_MALLOC_LOOP)."""
        return pages == "numpy" or (strategies.get(strategy).malloc_backed and strategy in self._malloc_measured)

    @functools.cached_property
    def _malloc_measured(self) -> frozenset:
        rows = self.setup_rows
        return frozenset(rows.loc[rows["base_scenario"] == CALIBRATION_PREFIX + SETUP_MALLOC_LOOP, "axis.strategy"])

    def measures_stores(self, strategy, pages: str = "numpy") -> bool:
        """Whether the calibration measured the strategy's first write stored word by word on pages backed
        so (SETUP_STORES_LOOP)."""
        return (strategy, pages) in self._stores_measured

    @functools.cached_property
    def _stores_measured(self) -> frozenset:
        rows = self.setup_rows
        rows = rows[(rows["base_scenario"] == CALIBRATION_PREFIX + SETUP_STORES_LOOP) & (rows["phase"] == "host_init")]
        if "axis.first_write" not in rows.columns or "axis.host_pages" not in rows.columns:
            return frozenset()  # no loop of this version's: every first write as copied
        rows = rows[rows["axis.first_write"] == "stores"]
        return frozenset(zip(rows["axis.strategy"], rows["axis.host_pages"]))

    def measures_read_words(self, strategy) -> bool:
        """Whether the calibration measured the strategy's faulting read made word by word beside numpy's and pinned
        memory's (READ_WORDS_LOOP)."""
        return strategy in self._read_words_measured

    @functools.cached_property
    def _read_words_measured(self) -> frozenset:
        rows = self.read_rows
        if rows.empty or "axis.host_reader" not in rows.columns:
            return frozenset()
        by = rows[rows["phase"] == "host_read"].groupby("axis.strategy")["axis.host_reader"].agg(set)
        both = {s for s, readers in by.items() if {"numpy", "words"} <= readers}
        return frozenset(both - {"pinned"}) if "pinned" in both else frozenset()

    def _host_step_beside(self, strategy, ref, name) -> dict:
        """A plan's own host step (the staging ring's threads disturb the host's writes and reads of the
        buffer) as its ratio to the memory it borrows in the same run, size by size, times that memory's
        pooled host step: the host's rate differs from machine to machine more than the ratio does, and a
        run that brings the plan's rows alone (with its references, REFERENCE) must not price it at its own
        machine's rate."""
        ratios = _ratios_by_run(pd.concat([self.ok, self.reference_rows]), lambda run: tuple(
            self._select(s, "sizes", name, rows=run, **WHOLE_LOOP) for s in (strategy, ref)))
        if not ratios:  # no run measured both: its own figures as they are
            return self._select(strategy, "sizes", name, **WHOLE_LOOP)
        pooled = self.curve(ref, name)
        return {b: statistics.median(r) * pooled(b) for b, r in ratios.items()}

    def _passes(self, strategy, gw: float, scenario="resident", **axes) -> tuple[dict, dict]:
        """(fixed part, each pass) of the kernel phase per iteration, from one and three passes."""
        k1 = self._select(strategy, scenario, "kernel", reuse=1, gpu_writes=gw, **axes)
        k3 = self._select(strategy, scenario, "kernel", reuse=3, gpu_writes=gw, **axes)
        each = {b: max((k3[b] - k1[b]) / 2, 1e-7) for b in k1 if b in k3}
        fixed = {b: max(k1[b] - each[b], 0.0) for b in each}
        return fixed, each

    def _build(self, strategy, name, pages: str = "numpy", first_write: str = "copy") -> dict:
        if name in ("host_write", "host_read") and strategy in self.cached_host:
            # the same memory to the host whoever allocated it: the median of their measurements per
            # size (each alone varies ±30% from run to run, with no order between them)
            return _median_per_size(self._select(s, "sizes", name, **WHOLE_LOOP) for s in self.cached_host)
        # a plan's own host steps
        if name in HOST_STEPS and strategy in BORROWS and name in OWN_CURVES.get(strategy, ()):
            return self._host_step_beside(strategy, BORROWS[strategy], name)
        if name in ("host_write", "host_read", "h2d", "d2h"):
            return self._select(strategy, "sizes", name, **WHOLE_LOOP)
        if name == "pass_ro":
            return self._passes(strategy, 0.0)[1]
        if name == "pass_rw":
            return self._passes(strategy, 1.0)[1]
        if name == "fixed":
            return self._passes(strategy, 0.0)[0]
        if name == "migrate":  # the whole-buffer loop's kernel beyond its fixed part and its pass
            k = self._select(strategy, "sizes", "kernel", **WHOLE_LOOP)
            fixed, each = self.curve(strategy, "fixed"), self.curve(strategy, "pass_rw")
            return {b: max(t - fixed(b) - each(b), 1e-7) for b, t in k.items()}
        if name == "migrate_dup":  # READ_MOSTLY: read-only copies made again after the host's writes
            k = self._select(strategy, "host", "kernel", reuse=1, host_writes=1.0, gpu_writes=0.0, host_reads=0.0)
            fixed, each = self.curve(strategy, "fixed"), self.curve(strategy, "pass_ro")
            return {b: max(t - fixed(b) - each(b), 1e-7) for b, t in k.items()}
        if name == "fault_write":  # the host writing pages that sit on the GPU
            return self._select(strategy, "host", "host_write", reuse=1, host_writes=1.0, gpu_writes=0.0,
                                host_reads=0.0)
        if name == "fault_read":
            return self._select(strategy, "sizes", "host_read", **WHOLE_LOOP)
        if name == "fault_read_words":
            return self._fault_read_words(strategy)
        if name == "local_read":  # managed pages read where they are (READ_MOSTLY's copies)
            return self._select(strategy, "host-read", "host_read", reuse=1, host_writes=0.0, gpu_writes=0.0,
                                host_reads=1.0)
        if name in ("h2d_part", "d2h_part"):
            return self._parts(strategy, name[:3])
        if name == "pipe_issue":  # the pipelined loop's own issuing (its row's extras), per iteration
            return self._select(strategy, "sizes", "pipelined", column="it_issue_s", **WHOLE_LOOP)
        if name in ("alloc", "host_init", "free", "first"):
            if strategy in SAME_SETUP and name in SAME_SETUP_STEPS:  # one operation measured under two names
                return _median_per_size(self._setup_step(s, name, pages) for s in SAME_SETUP)
            return self._setup_step(strategy, name, pages, first_write)
        if name == "gap":
            return self._gaps(strategy)
        raise KeyError(name)

    def _setup_step(self, strategy, name, pages: str = "numpy", first_write: str = "copy") -> dict[float, float]:
        """A setup step of the strategy's own measurement: as an application pays it (SETUP_LOOP, or
        SETUP_MALLOC_LOOP for malloc'd ``pages``; SETUP_STORES_LOOP for a first write by stores) where
        measured so, else the first iteration of its calibration loop."""
        if name == "host_init" and first_write == "stores":
            stored = self._stored_first_write(strategy, pages)
            if stored:
                return stored
        if name in SETUP_FROM_SETUP_LOOP:
            loop = SETUP_MALLOC_LOOP if pages == "malloc" else SETUP_LOOP
            measured = self._select(strategy, loop, name, column="time_median_s")
            if measured:
                return measured
        # READ_MOSTLY has no whole-buffer loop (its kernel may not write): its read-only host-read loop
        scenario, axes = self._setup_reference(strategy)
        return self._select(strategy, scenario, name, column="time_median_s", **axes)

    def _stored_first_write(self, strategy, pages: str) -> dict[float, float]:
        """The strategy's first write by stores (SETUP_STORES_LOOP): where a run of that loop copied the same
        buffer in too, its stores' ratio to its copy, size by size (the median over the runs), times the
        first write copied in as the other setup loops price it, so that the host's rate on that loop's machine
        does not move one strategy against the others; else the stores as measured."""
        rows = self.setup_rows
        rows = rows[rows["base_scenario"] == CALIBRATION_PREFIX + SETUP_STORES_LOOP]
        if "axis.first_write" not in rows.columns or "axis.host_pages" not in rows.columns:
            return {}

        def first_write(how, run=None):
            return self._select(strategy, SETUP_STORES_LOOP, "host_init", column="time_median_s", rows=run,
                                host_pages=pages, first_write=how)

        ratios = _ratios_by_run(rows, lambda run: (first_write("stores", run), first_write("copy", run)))
        if not ratios:  # no run copied too: the stores as measured, over every run
            return first_write("stores")
        # the ratio between the sizes measured, and as the nearest measured one beyond them (a quick
        # calibration measures it at two sizes), over every size the copied first write was measured at
        sizes = sorted(ratios)
        ratio = [statistics.median(ratios[b]) for b in sizes]
        copied = self.curve(strategy, "host_init", pages)
        return {b: float(np.interp(math.log2(b), np.log2(sizes), ratio)) * copied(b)
                for b in sorted(set(sizes) | set(copied.xs))}

    def _fault_read_words(self, strategy) -> dict[float, float]:
        """The host's read of the strategy's pages faulting back, made word by word as a compiled program makes it
        (READ_WORDS_LOOP): numpy's faulting read (``fault_read``) plus, size by size, how much more the words
        reader's read took beyond pinned memory's than numpy's did, in the same run (the median over the runs;
        neither extra below nothing); none where the calibration did not measure it."""
        rows = self.read_rows
        if not self.measures_read_words(strategy):
            return {}

        def read(s, reader, run):
            return self._select(s, READ_WORDS_LOOP, "host_read", rows=run, host_reader=reader, **WHOLE_LOOP)

        more: dict[float, list[float]] = {}
        for _, run in (rows.groupby(RUN, dropna=False) if RUN in rows.columns else [(0, rows)]):
            words, words_ref = read(strategy, "words", run), read("pinned", "words", run)
            numpy_, numpy_ref = read(strategy, "numpy", run), read("pinned", "numpy", run)
            for b in set(words) & set(words_ref) & set(numpy_) & set(numpy_ref):
                more.setdefault(b, []).append(max(words[b] - words_ref[b], 0.0) - max(numpy_[b] - numpy_ref[b], 0.0))
        if not more:
            return {}
        numpy_read = self.curve(strategy, "fault_read")
        return {b: max(numpy_read(b) + statistics.median(d), 1e-7) for b, d in sorted(more.items())}

    def _parts(self, strategy, direction: str) -> dict[float, float]:
        """One copy's bytes → its seconds, from calibration-loop-copies (PARTS_LOOP): the steady
        iteration's copies one way over the copies made (the median over its cases and runs)."""
        d = self.parts_rows
        if d.empty or "axis.copies" not in d.columns:
            return {}
        d = d[(d["axis.strategy"] == strategy) & (d["phase"] == direction)]
        copies = d["axis.copies"].astype(int)
        each = d["per_iteration"] / copies
        return each.groupby(d["axis.bytes"].astype(float) / copies).median().to_dict()

    @property
    def measures_parts(self) -> bool:
        """Whether the calibration measured copies in parts (calibration-loop-copies)."""
        return not self.parts_rows.empty

    def _setup_reference(self, strategy) -> tuple[str, dict]:
        """The calibration loop whose setup phases and first iteration stand for the strategy's."""
        if kind(strategy) == "read-mostly":
            return "host-read", dict(reuse=1, host_writes=0.0, gpu_writes=0.0, host_reads=1.0)
        return "sizes", dict(WHOLE_LOOP)

    def _gap_rows(self) -> pd.DataFrame:
        """Per calibrated loop (steady iterations timed): its strategy, bytes, timed GPU and host
        phases per iteration, and its gap (the wall clock of a steady iteration less its phases)."""
        if self._gap_table is None:
            d = self.ok
            steady = d[d["phase"].isin(STEADY_PHASES)]
            # a case's phases against its own run's wall clock, where the frame pools several runs (RUN)
            keys = ["scenario", "case"] + ([RUN] if RUN in d.columns else [])
            per_case = steady.assign(n_gpu=steady["phase"].isin(GPU_STEPS), n_host=steady["phase"].isin(HOST_STEPS))
            per_case = per_case.groupby(keys)[["per_iteration", "n_gpu", "n_host"]].sum().add_prefix("steps_")
            rows = []
            if "wall_steady_s" in d.columns:
                t = d[d["phase"] == "total"].join(per_case, on=keys, how="inner")
                t = t[t["wall_steady_s"].notna()]
                rows = pd.DataFrame({"strategy": t["axis.strategy"], "bytes": t["axis.bytes"].astype(float),
                                     "n_gpu": t["steps_n_gpu"].astype(int), "n_host": t["steps_n_host"].astype(int),
                                     "gap": t["wall_steady_s"] - t["steps_per_iteration"],
                                     "long": t["scenario"].isin(LONG_SCENARIOS)}).to_dict("records")
            self._gap_table = pd.DataFrame(rows, columns=["strategy", "bytes", "n_gpu", "n_host", "gap", "long"])
        return self._gap_table

    @staticmethod
    def _long_where_measured(d: pd.DataFrame, by: list[str]) -> pd.DataFrame:
        """The rows of long loops (LONG_LOOPS) where a group of ``by`` has them, else the group's
        short loops."""
        has_long = d.groupby(by)["long"].transform("any") if len(d) else d["long"]
        return d[d["long"] | ~has_long.astype(bool)]

    def phase_costs(self) -> tuple[float, float]:
        """The host's time per timed step beside the steps themselves (an event recorded and waited
        for, the range, the clock): (each GPU step beyond the first, each host step), fitted over
        the calibrated loops of unmanaged memory up to GAP_FIT_BYTES (the long ones alone where the
        calibration has them), with an intercept per strategy and size (where the steps are short
        and the gap is not lost in their noise; managed memory's gaps also hold the faults the host
        takes between steps)."""
        key = ("phase_costs",)
        if key not in self._values:
            d = self._gap_rows()
            d = d[(d["bytes"] <= GAP_FIT_BYTES) & ~d["strategy"].map(lambda s: strategies.get(s).managed)]
            if d["long"].any():  # long loops alone: a short loop's steps cost more (see LONG_LOOPS)
                d = d[d["long"]]
            costs = (GAP_FALLBACK, GAP_FALLBACK)
            if len(d) and d["n_gpu"].nunique() + d["n_host"].nunique() > 2:
                groups = pd.get_dummies(d["strategy"] + "@" + d["bytes"].astype(str)).to_numpy(float)
                x = np.column_stack([d["n_gpu"] - 1, d["n_host"], groups])
                fit = np.linalg.lstsq(x, d["gap"].to_numpy(float), rcond=None)[0]
                costs = (max(float(fit[0]), 0.0), max(float(fit[1]), 0.0))
            self._values[key] = costs
        return self._values[key]

    def _gaps(self, strategy) -> dict:
        """The gap of a steady iteration of one GPU step and no host step, per size: the median
        over the strategy's calibrated loops of their gaps less their steps' costs."""
        d = self._gap_rows()
        d = self._long_where_measured(d[d["strategy"] == strategy], ["bytes"])
        per_gpu, per_host = self.phase_costs()
        base = d["gap"] - per_gpu * (d["n_gpu"] - 1) - per_host * d["n_host"]
        return {b: max(float(v), 1e-7) for b, v in base.groupby(d["bytes"]).median().items()}

    def gap(self, strategy, nbytes: float, n_gpu: int, n_host: int) -> float:
        """The host's time per steady iteration outside its timed steps, for an iteration of
        ``n_gpu`` GPU steps and ``n_host`` host steps."""
        per_gpu, per_host = self.phase_costs()
        return self.curve(strategy, "gap")(nbytes) + per_gpu * max(n_gpu - 1, 0) + per_host * n_host

    def _pattern_ratio(self, strategy, pattern: str, gw: float, scenario: str, at: float) -> float | None:
        """A pass in ``pattern`` over one in streaming order at ``at`` bytes, as ``scenario``
        measured it (cached; None where it did not)."""
        name, moving = ("pass_rw", 1.0) if gw > 0 else ("pass_ro", 0.0)
        key = (strategy, scenario, pattern, name)
        if key not in self._values:
            each = self._passes(strategy, moving, scenario, pattern=pattern)[1].get(at)
            floor = self.pass_floor(strategy, moving)
            base = self.curve(strategy, name)(at) - floor
            # a streaming pass no longer than its launch did no work the ratio could divide by (H100,
            # 16 MiB in the L2: READ_MOSTLY's and PREFER_GPU's read-only passes, whose ratios came out
            # at 1e15 and more): unresolved, like a pattern the scenario did not measure
            resolved = base >= PASS_RESOLUTION_S
            self._values[key] = max(each - floor, 1e-9) / base if each and resolved else None
        return self._values[key]

    def pass_time(self, strategy, gw: float, nbytes: float) -> float:
        """One pass in streaming order over ``nbytes`` of resident data, read-only and in place
        weighted by ``gw`` (the fraction of what it touches that it writes)."""
        ro = self.curve(strategy, "pass_ro")(nbytes)
        return ro + gw * (self.curve(strategy, "pass_rw")(nbytes) - ro)

    def pass_floor(self, strategy, gw: float) -> float:
        """What a pass costs whatever its bytes: its launch (the pass curve's least value, at the
        smallest sizes), read-only and in place weighted by ``gw``."""
        strategy = BORROWS.get(strategy, strategy)

        def least(name):
            curve = self.curve(strategy, name)
            return float(curve.ys.min()) if curve else 0.0
        return least("pass_ro") + gw * (least("pass_rw") - least("pass_ro"))

    def pass_ratio(self, strategy, pattern: str, gw: float, nbytes: float = PATTERN_BYTES) -> float:
        """A pass in ``pattern`` over one in streaming order (resident data) over ``nbytes``: as
        measured at 16 MiB (calibration-loop-patterns; 1 where unmeasured) and, where the calibration
        has it, at 256 MiB (calibration-loop-patterns-large: past the GPU's L2, where a random word
        costs a sector of DRAM), constant past them. Between them, where the device's L2 size is
        known: the 16 MiB ratio up to it, then toward the 256 MiB one with the share of the data the
        L2 cannot hold (log-linearly in size where it is not known: from a strided ratio of ~0 at
        16 MiB, launch-bound in the L2, that predicted 120 MiB stride-4 passes over the DRAM's peak)."""
        strategy = BORROWS.get(strategy, strategy)  # the kernel's side is the borrowed strategy's
        if pattern == "streaming":
            return 1.0
        small = self._pattern_ratio(strategy, pattern, gw, "patterns", PATTERN_BYTES) or 1.0
        if nbytes <= PATTERN_BYTES:
            return small
        large = self._pattern_ratio(strategy, pattern, gw, "patterns-large", PATTERN_LARGE_BYTES)
        if large is None:
            return small
        l2 = float(self.device.get("l2_bytes") or 0)
        if PATTERN_BYTES < l2 < PATTERN_LARGE_BYTES:
            # the share of the pass's words that miss the L2 (whatever of the data it cannot hold), as a
            # share of the misses at PATTERN_LARGE_BYTES: nothing misses up to the L2's size
            def misses(b):
                return max(1.0 - l2 / b, 0.0)
            at = min(misses(nbytes) / misses(PATTERN_LARGE_BYTES), 1.0)
            return small + at * (large - small)
        at = min(math.log(nbytes / PATTERN_BYTES) / math.log(PATTERN_LARGE_BYTES / PATTERN_BYTES), 1.0)
        return float(math.exp((1 - at) * math.log(small) + at * math.log(large)))

    def migrate_ratio(self, strategy, pattern: str) -> float:
        """The first pass's migration in ``pattern`` over streaming's, at 16 MiB."""
        strategy = BORROWS.get(strategy, strategy)  # the kernel's side is the borrowed strategy's
        if pattern == "streaming":
            return 1.0
        key = (strategy, "migrate", pattern)
        if key not in self._values:
            gw, each_name, base_name = self._moving(strategy)
            k = self._select(strategy, "patterns-moving", "kernel", reuse=1, pattern=pattern, host_writes=1.0,
                             gpu_writes=gw, host_reads=1.0).get(PATTERN_BYTES)
            fixed = self.curve(strategy, "fixed")(PATTERN_BYTES)
            each = self.curve(strategy, each_name)(PATTERN_BYTES) * self.pass_ratio(strategy, pattern, gw)
            base = self.curve(strategy, base_name)(PATTERN_BYTES)
            self._values[key] = max(k - fixed - each, 1e-7) / base if k and base > 0 else 1.0
        return self._values[key]

    @staticmethod
    def _moving(strategy) -> tuple[float, str, str]:
        """(gpu_writes, pass curve, migration curve) of the 'moving' variants a strategy is scaled by:
        READ_MOSTLY's read-only copies, the others' in-place migration."""
        return (0.0, "pass_ro", "migrate_dup") if kind(strategy) == "read-mostly" else (1.0, "pass_rw", "migrate")

    def touched_ratio(self, strategy, what: str, t: float) -> float:
        """Sparse pages' cost over the plain curve at the same bytes, measured at 1/16 of 64 MiB and
        taken log-linearly between 1 (the whole buffer) and there, constant below; 1 where the
        calibration did not resolve the passes (three measured no longer than one)."""
        strategy = BORROWS.get(strategy, strategy)  # the kernel's side is the borrowed strategy's
        if t >= 1.0:
            return 1.0
        key = (strategy, "touched", what)
        if key not in self._values:
            B, T = 64 * 1024**2, 64 * 1024**2 * TOUCHED_REF
            if what == "pass":
                each = self._passes(strategy, 1.0, "touched", touched=TOUCHED_REF)[1].get(B)
                if each is not None and each <= 1e-7:
                    each = None  # three passes measured no longer than one: lost in the kernel phase's noise
                base = self.curve(strategy, "pass_rw")(T)
            else:
                gw, each_name, base_name = self._moving(strategy)
                k = self._select(strategy, "touched-moving", "kernel", reuse=1, touched=TOUCHED_REF,
                                 host_writes=1.0, gpu_writes=gw, host_reads=1.0).get(B)
                fixed = self.curve(strategy, "fixed")(T)
                pas = self.curve(strategy, each_name)(T) * self.touched_ratio(strategy, "pass", TOUCHED_REF)
                each = max(k - fixed - pas, 1e-7) if k else None
                base = self.curve(strategy, base_name)(T)
            self._values[key] = each / base if each and base > 0 else 1.0
        r = self._values[key]
        return r ** min(1.0, math.log(t) / math.log(TOUCHED_REF))

    def walk(self, strategy, gw: float) -> float | None:
        """One warp's walk of one 64 KiB page, a pass's launch included (calibration-loop-walk:
        16 pages, passes one and three apart), read-only and in place weighted by ``gw``; None
        where the calibration did not measure it."""
        strategy = BORROWS.get(strategy, strategy)  # the kernel's side is the borrowed strategy's
        key = (strategy, "walk")
        if key not in self._values:
            ro, rw = (self._passes(strategy, g, WALK_LOOP, pattern="warp-pages",
                                   touched=WALK_TOUCHED)[1].get(PATTERN_BYTES) for g in (0.0, 1.0))
            self._values[key] = (ro, rw) if ro and rw else None
        both = self._values[key]
        return None if both is None else both[0] + gw * (both[1] - both[0])

