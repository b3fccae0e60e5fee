"""Predicted time of an application's loop under each strategy, composed from a calibration.

A :class:`Calibration` holds the ``loop`` op's measured phases on one device (the
``calibration`` group: ``umprof run calibration``, measured here or on another machine). From
them it builds, per strategy, curves of seconds against bytes (log-log between the measured
sizes, in proportion past the largest; allocation and free, which are fixed for some strategies,
there follow the slope of the largest sizes), each per iteration:

* ``host_write``, ``host_read``: the host's local write and read (calibration-loop-sizes);
  for managed memory also the host's faults back when the pages sit on the GPU, on a write
  (calibration-loop-host) and on a read (calibration-loop-sizes, where the kernel pulled them);
* ``h2d``, ``d2h``: the copies (or prefetches) each way;
* the kernel: a fixed part (launch, the 8-byte result the host reads back) and each pass,
  read-only and in place (calibration-loop-resident, one and three passes apart), scaled by the
  measured ratio of the workload's pattern (calibration-loop-patterns at 16 MiB and, for memory
  the kernel reads on the device, calibration-loop-patterns-large at 256 MiB) and of sparse pages
  (calibration-loop-touched); for managed memory, the migration of pages on the kernel's
  faults (what the whole-buffer loop's kernel costs beyond its passes);
* ``other``: the host's time between the phases of an iteration (wall clock less the phases).

At 64 KiB-4 MiB the whole-buffer and resident loops are measured again over 25 iterations
(calibration-loop-steady, -resident-steady); where they were, their figures stand for the
3-iteration loops' (LONG_LOOPS).

For managed memory, which bytes pay which rate follows the pages: a simulation of where each
64 KiB page is (host, device, or both under READ_MOSTLY) through the first iteration and the
steady ones, with the workload's host-write, touched and host-read pages.

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

The steady iteration is the last simulated one; setup is allocation + the first write +
free + (first iteration − steady), with the first iteration's extra cost beyond its phases
(first touch, mappings) taken from the calibration's measured first iterations; whole run =
setup + iterations × steady. Allocation, the first write and free come from a loop measured as
an application pays them, where the calibration has it (calibration-loop-setup: SETUP_LOOP).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from umprof.core.errors import UsageError
from umprof.core.units import format_size, format_time
from umprof.measure import strategies
from umprof.measure.ops.lifecycle import PAGE_BYTES, touched_pages
from umprof.measure.ops.loop import written_pages
from umprof.measure.scenario import round_base
from umprof.model.workload import Workload

CALIBRATION_PREFIX = "calibration-loop-"  # the shipped calibration group's scenarios
# the column that tells the files of one frame apart (0, 1, ...): several calibrations given to --from, or
# several verification runs given to --measured; a case measured in each is a sample of each
RUN = "run"
VERIFY_PREFIX = "recommend-"  # scenarios `recommend --verify` writes
SETUP_PHASES = ("alloc", "host_init", "first_extra", "free")
STEADY_PHASES = ("host_write", "h2d", "kernel", "d2h", "host_read", "other", "overlap")
PHASES = SETUP_PHASES + STEADY_PHASES
PATTERN_BYTES = 16 * 1024**2  # where calibration-loop-patterns measures
PATTERN_LARGE_BYTES = 256 * 1024**2  # where calibration-loop-patterns-large measures (past the L2)
TOUCHED_REF = 0.0625  # calibration-loop-touched's fraction
# A pass fetches memory 64 bytes at a time, wherever it lives. Across PCIe: over the verification runs of
# 2026-11 (H200 and H100 alike) a stride-16 pass cost 0.9-1.1x a stride-8 pass of the same bytes (every
# 64-byte unit still fetched), stride 32 0.5x and stride 64 0.3x, where 32-byte sectors had predicted
# 0.5x, 0.25x and 0.125x (the passes 1.7-2.6x their predictions). In device memory past the L2 likewise:
# passes at stride 16 over 80-150 MiB measured 0.87-1.06x a streaming pass's work, at stride 32
# over 1 GiB 0.52x and at stride 64 over 520-640 MiB 0.19-0.25x (H200 and H100), where sectors had
# predicted half of each (holdout-2, -10, -11, -12).
FETCH_WORDS = 16
# ordinary cached host memory that only the host and the GPU's own accesses touch: one host rate. Pageable
# memory is not among them: the driver copies into and out of it through its staging buffers (with
# non-temporal stores, which leave nothing in the host's caches), and its host reads and writes
# measured 16-45% slower than pinned memory's at 1-16 MiB on the H200 and the H100.
CACHED_HOST = ("pinned", "zero-copy", "mapped")
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
# joins CACHED_HOST. On the H200 and H100 lent in 2026-11 its reads measured 0.89-1.03x pinned memory's
# and its writes 0.78-1.17x, while in the verification runs its writes and reads took a median 1.00x and
# 0.99x pinned memory's in the same workload on the H200 (119 and 96 workloads), 1.00x and 1.01x on the
# H100 (91 and 74): the calibration's differences were its allocations' luck, which had given
# write-combined memory a lead of up to 11%.
WRITE_COMBINED = "write-combined"
WC_CACHED_READ = 1.5
# Strategies calibrated on calibration-loop-sizes alone, whose kernel, host accesses and their
# ratios are another's: pageable-staged keeps pageable memory and a cudaMalloc'd buffer and
# differs only in how the copies go (its copies are its own); pinned-pipelined is pinned memory
# run chunk by chunk (its steps are pinned's, composed per chunk; only its setup is its own).
# The host's time between the steps (the gap) is the borrowed memory's for both: the staging ring's
# work lies inside its timed copies, and what its loop's wall clock left beyond them was the noise of
# two large figures' difference (calibration-7: 0 at 64 MiB, 1 ms at 256 MiB and, extrapolated, 4 ms a
# step at 1 GiB on the H200; 0.6 ms at 64 MiB and 0 at 256 MiB on the H100). Over the verification
# runs of 2026-11 with copies at 16 MiB-1 GiB (89 workload runs on the H200, 71 on the H100), the
# staged plan's steady iteration with pageable memory's gap came out a median 1.07x and 1.01x of
# the measured one, with its own 1.11x and 1.04x.
BORROWS = {"pageable-staged": "pageable", "pinned-pipelined": "pinned"}
SETUP_CURVES = ("alloc", "host_init", "free", "first")
OWN_CURVES = {"pageable-staged": ("h2d", "d2h") + SETUP_CURVES,
              "pinned-pipelined": ("pipe_issue",) + SETUP_CURVES}
PIPELINE_EXTRAS = ("issue_s",)  # the pipelined loop's extras a prediction uses
LAUNCH_FALLBACK = 10e-6  # pycuda's host time per kernel launch (H200, H100), where no calibration measured it
SIM_ITERATIONS = 4  # simulated iterations: page locations settle after the second
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
TAIL_POINTS = 3
# calibration-loop-steady and -resident-steady: the whole-buffer loop (sizes) and the resident passes
# (resident: the host touching nothing) again at 64 KiB-4 MiB, in long loops. A 3-iteration loop's
# steady iterations follow its allocation and first iteration, and there they cost more than a long
# loop's: on the H100 pinned memory's 64 KiB copy in took 12 µs per iteration there against 5.7 µs
# over 50 iterations, its pass 30 µs against 14 µs, and the host's time between the steps of a
# five-step iteration 92 µs against 55 µs (H200: 57 against 40 µs); in calibration-5 the long loops'
# steady iteration at 64 KiB and 1 MiB was a median 0.87x (H200) and 0.89x (H100) the short loops'.
# Where a long loop measured a size, its figures stand for the short loop's.
LONG_LOOPS = {"sizes": "steady", "resident": "resident-steady"}
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


@dataclass
class Prediction:
    strategy: str
    setup: dict[str, float]  # seconds, once per run
    steady: dict[str, float]  # seconds per steady iteration
    iterations: int
    notes: list[str] = field(default_factory=list)

    @property
    def setup_s(self) -> float:
        return float(sum(self.setup.values()))

    @property
    def steady_s(self) -> float:
        return float(sum(self.steady.values()))

    @property
    def whole_s(self) -> float:
        return self.setup_s + self.iterations * self.steady_s

    @property
    def phases(self) -> dict[str, float]:
        """Seconds per phase over the whole run (steady ones × iterations)."""
        out = dict(self.setup)
        out.update({k: v * self.iterations for k, v in self.steady.items()})
        return out

    def cost(self, steady: bool) -> float:
        """What a ranking orders by: the steady iteration, or the whole run."""
        return self.steady_s if steady else self.whole_s


def _at_span(curve: "Curve", nbytes: float, span: float) -> float:
    """The host's write or read of ``nbytes`` at the rate of the whole ``span`` it touches each
    iteration, not of this part alone: the calibration's loops write and read all of a buffer, and
    whether a write or read finds its lines in the host's caches depends on all the host touches."""
    return nbytes * curve(span) / span if span > nbytes > 0 else curve(nbytes)


def _loglog(xs: np.ndarray, ys: np.ndarray, x: float, tail: float = 1.0) -> float:
    """Piecewise log-log interpolation; past the largest x, as x to the power ``tail`` (1: in
    proportion); under the smallest, the first segment's slope (never below a tenth of the
    smallest measured value)."""
    if x <= 0:
        return 0.0
    order = np.argsort(xs)
    xs, ys = xs[order], np.maximum(ys[order], 1e-9)
    if len(xs) == 1:
        return float(ys[0] * x / xs[0]) if x > xs[0] else float(ys[0])
    if x >= xs[-1]:
        return float(ys[-1] * (x / xs[-1]) ** tail)
    lx, ly = np.log(xs), np.log(ys)
    if x <= xs[0]:
        slope = (ly[1] - ly[0]) / (lx[1] - lx[0])
        return float(max(math.exp(ly[0] + slope * (math.log(x) - lx[0])), ys[0] / 10))
    return float(math.exp(np.interp(math.log(x), lx, ly)))


class Curve:
    """Seconds against bytes, from measured points (bytes → seconds). Past the largest, in
    proportion to the bytes; or, with ``fitted_tail``, as the largest sizes' log-log slope says
    (between 0, a fixed cost, and 1, in proportion)."""

    def __init__(self, points: dict[float, float], fitted_tail: bool = False):
        pts = {float(b): max(float(t), 1e-9) for b, t in points.items() if t is not None and not math.isnan(t)}
        self.xs, self.ys = np.array(list(pts)), np.array(list(pts.values()))
        self.tail = 1.0
        if fitted_tail and len(self.xs) > 1:
            largest = np.argsort(self.xs)[-TAIL_POINTS:]
            fit = np.polyfit(np.log(self.xs[largest]), np.log(self.ys[largest]), 1)[0]
            self.tail = float(np.clip(fit, 0.0, 1.0))

    def __bool__(self):
        return len(self.xs) > 0

    def __call__(self, nbytes: float) -> float:
        if nbytes <= 0 or not len(self.xs):
            return 0.0
        return _loglog(self.xs, self.ys, nbytes, self.tail)


class Calibration:
    """The loop's phases measured on one device, as curves per strategy, for prediction."""

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
        setup_loop = ok["base_scenario"] == CALIBRATION_PREFIX + SETUP_LOOP
        # the setup loop answers for allocation, first write and free alone (see SETUP_LOOP): the curves
        # of the steady iteration, their gaps and the largest calibrated size are the other loops'
        self.setup_rows, ok = ok[setup_loop], ok[~setup_loop]
        self.ok = ok
        self.strategies = sorted(ok["axis.strategy"].unique())
        for s in self.strategies:
            self.skipped.pop(s, None)
        self.max_bytes = int(ok["axis.bytes"].max())
        self._curves: dict[tuple, Curve] = {}
        self._values: dict[tuple, float] = {}
        self._gap_table: pd.DataFrame | None = None

    @classmethod
    def from_results(cls, rs, source: str = "") -> "Calibration":
        return cls(rs.frame, rs.devices[0] if rs.devices else {}, source)

    # -- what was measured --------------------------------------------------------------------

    def _select(self, strategy, scenario, phase, column="per_iteration", **axes) -> dict[float, float]:
        """bytes → the median of ``column`` over the cases of one scenario matching ``axes`` (none
        where the calibration has no such column: one older than the measurement); for a loop
        measured again in a long loop (LONG_LOOPS), the long loop's figures at its sizes."""
        out = self._select_one(strategy, scenario, phase, column, **axes)
        if scenario in LONG_LOOPS:
            out.update(self._select_one(strategy, LONG_LOOPS[scenario], phase, column, **axes))
        return out

    def _select_one(self, strategy, scenario, phase, column, **axes) -> dict[float, float]:
        d = self.setup_rows if scenario == SETUP_LOOP else self.ok
        if column not in d.columns:
            return {}
        # all of the scenario's rounds, where it was measured in rounds
        m = d["axis.strategy"].isin(self._kernel_peers(strategy) if phase == "kernel" else (strategy,))
        m &= d["phase"] == phase
        m &= d["base_scenario"] == CALIBRATION_PREFIX + scenario
        for k, v in axes.items():
            col = d[f"axis.{k}"]
            m &= (col.astype(float) - v).abs() < 1e-9 if isinstance(v, float) else col == v
        sub = d[m]
        return sub.groupby("axis.bytes")[column].median().to_dict() if not sub.empty else {}

    @property
    def cached_host(self) -> tuple[str, ...]:
        """The calibrated strategies whose host memory is ordinary cached memory to the host, their
        host rates pooled (CACHED_HOST), with write-combined memory among them where its host reads
        measured as cached memory's (WC_CACHED_READ)."""
        if "cached_host" not in self._values:
            pool = tuple(s for s in CACHED_HOST if s in self.strategies)
            whole = dict(reuse=1, host_writes=1.0, gpu_writes=1.0, host_reads=1.0)
            wc = self._select(WRITE_COMBINED, "sizes", "host_read", **whole) if WRITE_COMBINED in self.strategies else {}
            ref = pd.DataFrame([self._select(s, "sizes", "host_read", **whole) for s in pool]).median().to_dict() \
                if pool else {}
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

    def curve(self, strategy, name) -> Curve:
        """One of the strategy's per-iteration curves (see the module's docstring), cached."""
        if name not in OWN_CURVES.get(strategy, ()):
            strategy = BORROWS.get(strategy, strategy)
        key = (strategy, name)
        if key not in self._curves:
            self._curves[key] = Curve(self._build(strategy, name), fitted_tail=name in FIXED_OR_PROPORTIONAL)
        return self._curves[key]

    def _passes(self, strategy, gw: float, scenario="resident", **axes) -> tuple[dict, dict]:
        """(fixed part, each pass) of the kernel phase per iteration, from one and three passes."""
        k1 = self._select(strategy, scenario, "kernel", reuse=1, gpu_writes=gw, **axes)
        k3 = self._select(strategy, scenario, "kernel", reuse=3, gpu_writes=gw, **axes)
        each = {b: max((k3[b] - k1[b]) / 2, 1e-7) for b in k1 if b in k3}
        fixed = {b: max(k1[b] - each[b], 0.0) for b in each}
        return fixed, each

    def _build(self, strategy, name) -> dict:
        whole = dict(reuse=1, host_writes=1.0, gpu_writes=1.0, host_reads=1.0)
        if name in ("host_write", "host_read") and strategy in self.cached_host:
            # the same memory to the host whoever allocated it: the median of their measurements per
            # size (each alone varies ±30% from run to run, with no order between them)
            pts = pd.DataFrame([self._select(s, "sizes", name, **whole) for s in self.cached_host])
            return pts.median().to_dict()
        if name in ("host_write", "host_read", "h2d", "d2h"):
            return self._select(strategy, "sizes", name, **whole)
        if name == "pass_ro":
            return self._passes(strategy, 0.0)[1]
        if name == "pass_rw":
            return self._passes(strategy, 1.0)[1]
        if name == "fixed":
            return self._passes(strategy, 0.0)[0]
        if name == "migrate":  # the whole-buffer loop's kernel beyond its fixed part and its pass
            k = self._select(strategy, "sizes", "kernel", **whole)
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
            return self._select(strategy, "sizes", "host_read", **whole)
        if name == "local_read":  # managed pages read where they are (READ_MOSTLY's copies)
            return self._select(strategy, "host-read", "host_read", reuse=1, host_writes=0.0, gpu_writes=0.0,
                                host_reads=1.0)
        if name == "pipe_issue":  # the pipelined loop's own issuing (its row's extras), per iteration
            return self._select(strategy, "sizes", "pipelined", column="it_issue_s", **whole)
        if name in ("alloc", "host_init", "free", "first"):
            if name in SETUP_FROM_SETUP_LOOP:  # as an application pays them, where measured so (SETUP_LOOP)
                measured = self._select(strategy, SETUP_LOOP, name, column="time_median_s")
                if measured:
                    return measured
            # READ_MOSTLY has no whole-buffer loop (its kernel may not write): its read-only host-read loop
            scenario, axes = self._setup_reference(strategy)
            return self._select(strategy, scenario, name, column="time_median_s", **axes)
        if name == "gap":
            return self._gaps(strategy)
        raise KeyError(name)

    def _setup_reference(self, strategy) -> tuple[str, dict]:
        """The calibration loop whose setup phases and first iteration stand for the strategy's."""
        if kind(strategy) == "read-mostly":
            return "host-read", dict(reuse=1, host_writes=0.0, gpu_writes=0.0, host_reads=1.0)
        return "sizes", dict(reuse=1, host_writes=1.0, gpu_writes=1.0, host_reads=1.0)

    def _gap_rows(self) -> pd.DataFrame:
        """Per calibrated loop (steady iterations timed): its strategy, bytes, timed GPU and host
        phases per iteration, and its gap (the wall clock of a steady iteration less its phases)."""
        if self._gap_table is None:
            d = self.ok
            steady = d[d["phase"].isin(STEADY_PHASES)]
            # a case's phases against its own run's wall clock, where the frame pools several runs (RUN)
            keys = ["scenario", "case"] + ([RUN] if RUN in d.columns else [])
            per_case = steady.groupby(keys)
            sums = per_case["per_iteration"].sum()
            n_gpu = per_case["phase"].agg(lambda p: int(p.isin(GPU_STEPS).sum()))
            n_host = per_case["phase"].agg(lambda p: int(p.isin(HOST_STEPS).sum()))
            rows = []
            if "wall_steady_s" in d.columns:
                for _, r in d[d["phase"] == "total"].iterrows():
                    key = tuple(r[k] for k in keys)
                    if key in sums.index and not math.isnan(r["wall_steady_s"]):
                        rows.append({"strategy": r["axis.strategy"], "bytes": float(r["axis.bytes"]),
                                     "n_gpu": n_gpu[key], "n_host": n_host[key],
                                     "gap": r["wall_steady_s"] - sums[key],
                                     "long": r["scenario"] in LONG_SCENARIOS})
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
            self._values[key] = max(each - floor, 1e-9) / base if each and base > 0 else None
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

    # -- the prediction -----------------------------------------------------------------------

    def applies(self, strategy: str, w: Workload) -> str | None:
        """Why the strategy cannot serve the workload here, or None."""
        st = strategies.get(strategy)
        if st.advice == "read-mostly" and not w.read_only:
            return ("the kernel writes the buffer (gpu_writes > 0), and every write collapses READ_MOSTLY's "
                    "read-only copies: advice for data the GPU only reads")
        if strategy in self.skipped and strategy not in self.strategies:
            return self.skipped[strategy]
        if strategy not in self.strategies or BORROWS.get(strategy, strategy) not in self.strategies:
            return "not in the calibration"
        if st.pipelined and w.pattern == "random":
            return ("runs the kernel chunk by chunk, and a random pass reaches the whole buffer: its work cannot "
                    "be split into chunks")
        if w.fits is False and kind(strategy) in ("copy", "prefetch"):
            return f"needs a device copy of all {format_size(w.bytes)}, which does not fit in device memory"
        return None

    def predict(self, strategy: str, w: Workload) -> Prediction:
        """Setup and steady-iteration seconds per phase of the workload under the strategy."""
        notes = []
        if w.bytes > self.max_bytes:
            notes.append(f"{format_size(w.bytes)} is past the largest calibrated size ({format_size(self.max_bytes)}): "
                         "scaled in proportion")
        its = [self._compose(strategy, w, state) for state in _Pages(w, kind(strategy)).iterations(SIM_ITERATIONS)]
        first, steady = its[0], its[-1]
        c = lambda name, b=w.bytes: self.curve(strategy, name)(b)  # noqa: E731
        # what the calibration's first iterations cost beyond the same composition (first touch,
        # mappings), in proportion to the pages the kernel touches
        extra = self._first_extra(strategy, w.bytes) * w.touched
        setup = {"alloc": c("alloc"), "host_init": c("host_init"),
                 "first_extra": sum(first.values()) - sum(steady.values()) + extra, "free": c("free")}
        if sum(setup.values()) < 0:  # whole = setup + iterations × steady still holds; say why it is negative
            notes.append(f"{strategy}'s setup is below zero: its first iteration is predicted "
                         f"{format_time(-setup['first_extra'])} cheaper than a steady one (setup counts the first "
                         "iteration less a steady one, so that whole run = setup + iterations × steady)")
        st = strategies.get(strategy)
        if st.pipelined:
            notes.append(f"{strategy} assumes {st.describe_chunking(w.bytes)} per iteration, the kernel's work on a chunk "
                         "needing that chunk alone")
        return Prediction(strategy, setup, steady, w.iterations, notes)

    def _first_extra(self, strategy, nbytes) -> float:
        """The calibration's measured first iteration less its composed one (first touch, mappings)."""
        key = ("first_extra", strategy)
        if key not in self._curves:
            pts = {}
            scenario, axes = self._setup_reference(strategy)
            for b, measured in self._build(strategy, "first").items():
                cal = Workload(bytes=int(b), iterations=3, **axes)
                composed = sum(self._compose(strategy, cal, _Pages(cal, kind(strategy)).first()).values())
                pts[b] = max(measured - composed, 1e-7)
            self._curves[key] = Curve(pts)
        return self._curves[key](nbytes)

    def _compose(self, strategy, w: Workload, pages: "_Pages.Step") -> dict[str, float]:
        """Seconds per phase of one iteration: step by step, or chunk by chunk for a pipelined plan."""
        if strategies.get(strategy).pipelined:
            return self._pipelined(strategy, w, pages)
        return self._iteration(strategy, w, pages)

    def _pipelined(self, strategy, w: Workload, pages: "_Pages.Step") -> dict[str, float]:
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
        bw, br = w.host_writes * B, w.host_reads * B
        ph["host_write"] = _at_span(self.curve(strategy, "host_write"), bw, max(bw, br))
        ph["host_read"] = _at_span(self.curve(strategy, "host_read"), br, max(bw, br))
        ph["h2d"] = spread("h2d", B if pages.first else bw)
        if gw > 0:
            ph["d2h"] = spread("d2h", br)
        # k - 1 whole chunks and the rest (the loop's chunks: whole 64 KiB pages, the last one shorter)
        last = B - (k - 1) * chunk
        sizes = [(n, dataclasses.replace(w, bytes=size)) for n, size in ((k - 1, chunk), (1, last)) if n and size > 0]
        step = _Pages.Step(first=pages.first)
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

    def _iteration(self, strategy, w: Workload, pages: "_Pages.Step") -> dict[str, float]:
        """Seconds per phase of one iteration, the bytes each rate applies to from the page step."""
        c = lambda name, b: self.curve(strategy, name)(b)  # noqa: E731
        B, k = w.bytes, kind(strategy)
        bw, br = w.host_writes * B, w.host_reads * B
        ph = dict.fromkeys(STEADY_PHASES, 0.0)
        span = max(bw, br)  # both are prefixes of the buffer

        def local(curve: Curve, nbytes: float) -> float:
            return _at_span(curve, nbytes, span)

        copied_back = k == "copy" and w.gpu_writes > 0 and br > 0
        host_side = CACHED_HOST[0] if strategy in CACHED_UNLESS_COPIED_INTO and not copied_back else strategy
        # the host's write: local, or faulting pages back from the GPU
        if bw:
            remote = min(pages.write_remote_bytes, bw)
            fault = "fault_write" if k in ("on-demand", "prefetch", "read-mostly") else None
            ph["host_write"] = local(self.curve(host_side, "host_write"), bw - remote) \
                + (c(fault, remote) if fault else 0.0)
        # copies and prefetches
        if k == "copy":
            ph["h2d"] = c("h2d", B if pages.first else bw)
            if copied_back:
                ph["d2h"] = c("d2h", br)
        elif k == "prefetch":
            ph["h2d"] = c("h2d", pages.prefetch_in_bytes)
            ph["d2h"] = c("d2h", pages.prefetch_out_bytes)
        ph["kernel"] = self._kernel(strategy, w, pages)
        # the host's read: local, or faulting pages back
        if br:
            remote = min(pages.read_remote_bytes, br)
            if k in ("on-demand", "prefetch"):
                ph["host_read"] = local(self._managed_local_read(strategy), br - remote) + c("fault_read", remote)
            elif k == "read-mostly":
                ph["host_read"] = local(self.curve(strategy, "local_read"), br)
            else:
                ph["host_read"] = local(self.curve(host_side, "host_read"), br)
        ph["other"] = self.gap(strategy, B,
                               sum(ph[p] > 0 for p in GPU_STEPS), sum(ph[p] > 0 for p in HOST_STEPS))
        return ph

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

    def _kernel(self, strategy, w: Workload, pages: "_Pages.Step", walk: bool = True) -> float:
        """The kernel phase of one iteration: fixed part, migration on faults, passes (a warp-pages
        pass bounded below by one warp's walk of a page unless ``walk`` is False)."""
        c = lambda name, b: self.curve(strategy, name)(b)  # noqa: E731
        B, k = w.bytes, kind(strategy)
        each = self._pass(strategy, w, walk)
        mig = 0.0
        if pages.migrate_bytes:
            name = "migrate_dup" if k == "read-mostly" else "migrate"
            mig = c(name, pages.migrate_bytes) * self.migrate_ratio(strategy, w.pattern) \
                * self.touched_ratio(strategy, "migrate", w.touched)
        return c("fixed", B) + mig + w.reuse * each

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

    def rank(self, w: Workload, steady: bool = False) -> tuple[list[Prediction], dict[str, str]]:
        """Predictions for every strategy that applies, fastest first (by the steady iteration or
        the whole run), and why the others do not apply."""
        preds, excluded = [], {}
        for s in strategies.STRATEGIES:
            why = self.applies(s, w)
            if why:
                excluded[s] = why
                continue
            preds.append(self.predict(s, w))
        preds.sort(key=lambda p: p.cost(steady))
        return preds, excluded


class _Pages:
    """Where each 64 KiB page of the workload's buffer is, iteration by iteration, for one kind of
    strategy: 'H' on the host, 'D' on the device, 'B' both (READ_MOSTLY's read-only copies)."""

    @dataclass
    class Step:
        first: bool
        write_remote_bytes: float = 0.0  # host-written bytes on pages that sit on the GPU
        prefetch_in_bytes: float = 0.0
        migrate_bytes: float = 0.0  # moved by the kernel's faults
        prefetch_out_bytes: float = 0.0
        read_remote_bytes: float = 0.0

    def __init__(self, w: Workload, kind: str):
        self.w, self.kind = w, kind
        n = max(1, w.bytes // PAGE_BYTES)
        self.n = n
        self.page_bytes = w.bytes / n
        idx = np.arange(n)
        self.write = idx < math.ceil(w.host_writes * n - 1e-9)
        self.read = idx < math.ceil(w.host_reads * n - 1e-9)
        self.touched = touched_pages(n, w.touched)
        touched_list = np.flatnonzero(self.touched)
        self.gpu_written = np.zeros(n, dtype=bool)
        self.gpu_written[touched_list[:written_pages(len(touched_list), w.gpu_writes)]] = True

    def first(self) -> "_Pages.Step":
        return next(iter(self.iterations(1)))

    def iterations(self, count: int):
        """A Step per iteration: the bytes that cross, and where."""
        loc = np.full(self.n, "H")
        pb = self.page_bytes
        for it in range(count):
            step = _Pages.Step(first=it == 0)
            if self.kind in ("on-demand", "prefetch", "read-mostly"):
                on_gpu = loc != "H"
                step.write_remote_bytes = float((self.write & on_gpu).sum() * pb)
                loc[self.write] = "H"
                if self.kind == "prefetch":
                    want = np.ones(self.n, bool) if it == 0 else (self.write | self.read)
                    step.prefetch_in_bytes = float((want & (loc == "H")).sum() * pb)
                    loc[want] = "D"
                faulting = self.touched & (loc == "H")
                step.migrate_bytes = float(faulting.sum() * pb)
                loc[faulting] = "B" if self.kind == "read-mostly" else "D"
                if self.kind == "prefetch" and self.w.host_reads > 0:
                    step.prefetch_out_bytes = float((self.read & (loc == "D")).sum() * pb)
                    loc[self.read] = "H"
                if self.kind != "read-mostly":
                    step.read_remote_bytes = float((self.read & (loc == "D")).sum() * pb)
                    loc[self.read] = "H"
            yield step
