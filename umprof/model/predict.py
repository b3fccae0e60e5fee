"""Predicted time per phase of a workload under each strategy, from measured lifecycles.

A :class:`Calibration` holds the ``lifecycle`` op's measured phase times on one device (the
``calibration`` group, or any saved ResultSet with lifecycle rows, measured here or
elsewhere). :meth:`Calibration.predict` builds a workload's phases from them:

* alloc, host_init, free, and one copy each way: the phase's time at the workload's size,
  interpolated log-log between the measured sizes (past the largest, in proportion to size);
* kernel: the first pass after the host last touched the buffer (for on-demand managed memory,
  the one that migrates pages) and each further pass, from the reuse 1 and reuse 4 cases
  (``next = (t4 - t1) / 3``), both scaled by the measured ratio of the workload's pattern to
  streaming and by the touched fraction (a line through the measured fractions);
* host_read and host_turn (the ping-pong's host step) at the size, scaled the same way,
  since what migrates back depends on what the kernel touched;
* counts: with ping-pong every iteration pays a copy each way, a host turn and a later round's
  first pass (the calibration's two-round ping-pong less its first pass: on-demand pages migrate
  again, mappings do not); without it the data stays and only the first pass is a first.

Phase times are the medians the runner recorded, so a prediction inherits their noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from umprof.core.errors import UsageError
from umprof.core.units import format_size
from umprof.measure import strategies
from umprof.model.workload import Workload

CALIBRATION_PREFIX = "calibration-"  # the shipped calibration group's scenarios
VERIFY_PREFIX = "recommend-"  # scenarios `recommend --verify` writes
PHASES = ("alloc", "host_init", "h2d", "kernel", "d2h", "host_turn", "host_read", "free")
REF_PATTERN_STRIDE = 8  # the calibration's strided pattern touches every 8th word: one per 32-byte sector
WORKLOAD_DEFAULTS = {"touched": 1.0, "pattern": "streaming", "stride": REF_PATTERN_STRIDE, "iterations": 1,
                     "pingpong": "no"}


@dataclass
class Prediction:
    strategy: str
    phases: dict[str, float]  # seconds per phase, summed over the workload's iterations
    notes: list[str] = field(default_factory=list)

    @property
    def total(self) -> float:
        return float(sum(self.phases.values()))


def _loglog(xs: np.ndarray, ys: np.ndarray, x: float) -> float:
    """Piecewise log-log interpolation; past the largest x, in proportion to x; under the smallest,
    the first segment's slope."""
    order = np.argsort(xs)
    xs, ys = xs[order], np.maximum(ys[order], 1e-9)
    if len(xs) == 1:
        return float(ys[0] * x / xs[0]) if x > xs[0] else float(ys[0])
    if x >= xs[-1]:
        return float(ys[-1] * x / xs[-1])
    lx, ly = np.log(xs), np.log(ys)
    if x <= xs[0]:
        slope = (ly[1] - ly[0]) / (lx[1] - lx[0])
        return float(math.exp(ly[0] + slope * (math.log(x) - lx[0])))
    return float(math.exp(np.interp(math.log(x), lx, ly)))


class Calibration:
    """Lifecycle phase times of one device, indexed for prediction."""

    def __init__(self, frame: pd.DataFrame, device: dict | None = None, source: str = ""):
        self.device = device or {}
        self.source = source
        need = {"op", "phase", "status", "time_median_s", "axis.strategy", "axis.bytes", "axis.reuse"}
        missing = need - set(frame.columns)
        if missing:
            raise UsageError(f"{source or 'results'}: no lifecycle measurements to predict from "
                             f"(missing columns {', '.join(sorted(missing))}); run `umprof run calibration` first")
        life = frame[frame["op"] == "lifecycle"]
        # a verification run measures the very workloads predicted: never predict from it; and where
        # a calibration is present, predict from it alone rather than mix in other runs' sweeps
        life = life[~life["scenario"].astype(str).str.startswith(VERIFY_PREFIX)]
        if life["scenario"].astype(str).str.startswith(CALIBRATION_PREFIX).any():
            life = life[life["scenario"].astype(str).str.startswith(CALIBRATION_PREFIX)]
        life = life.copy()
        for k, v in WORKLOAD_DEFAULTS.items():
            col = f"axis.{k}"
            life[col] = life[col].fillna(v) if col in life.columns else v
        life["axis.stride"] = np.where(life["axis.pattern"] == "strided", life["axis.stride"], REF_PATTERN_STRIDE)
        self.skipped = {r["axis.strategy"]: r["reason"] for _, r in life[life["status"] == "skipped"].iterrows()}
        ok = life[life["status"] == "ok"]
        if ok.empty:
            raise UsageError(f"{source or 'results'}: no successful lifecycle cases to predict from; "
                             "run `umprof run calibration` first")
        base = ok[(ok["axis.touched"].astype(float) == 1.0) & (ok["axis.pattern"] == "streaming")
                  & (ok["axis.iterations"].astype(int) == 1) & (ok["axis.pingpong"] == "no")]
        if base.empty:
            raise UsageError(f"{source or 'results'}: the lifecycle cases hold no plain workload (whole buffer, streaming, "
                             "one iteration) to scale from; include calibration-sizes (`umprof run calibration`)")
        keys = ["axis.strategy", "axis.bytes", "axis.reuse", "axis.touched", "axis.pattern", "axis.stride",
                "axis.iterations", "axis.pingpong", "phase"]
        self.t = ok.groupby(keys)["time_median_s"].median()
        self.strategies = sorted(ok["axis.strategy"].unique())
        self.max_bytes = int(ok["axis.bytes"].max())
        self.reuses = sorted({int(r) for r in ok["axis.reuse"]})
        self.sparse_fractions = sorted({float(f) for f in ok["axis.touched"] if float(f) < 1.0})
        self._cache: dict[tuple, dict] = {}  # _rows' answers: a prediction asks the same ones many times
        for s in list(self.skipped):
            if s in self.strategies:
                del self.skipped[s]

    @classmethod
    def from_results(cls, rs, source: str = "") -> "Calibration":
        return cls(rs.frame, rs.devices[0] if rs.devices else {}, source)

    # -- lookups ----------------------------------------------------------------------------

    def _rows(self, strategy, phase, *, reuse=None, touched=1.0, pattern="streaming", iterations=1, pingpong="no"):
        """{bytes: seconds} for the condition (median over the reuse values when reuse is None)."""
        key = (strategy, phase, reuse, touched, pattern, iterations, pingpong)
        if key not in self._cache:
            self._cache[key] = self._select(*key)
        return self._cache[key]

    def _select(self, strategy, phase, reuse, touched, pattern, iterations, pingpong) -> dict:
        try:
            sub = self.t.xs((strategy, phase), level=("axis.strategy", "phase"))
        except KeyError:
            return {}
        sub = sub.reset_index()
        m = ((sub["axis.touched"].astype(float) - touched).abs() < 1e-9) & (sub["axis.pattern"] == pattern) \
            & (sub["axis.iterations"].astype(int) == iterations) & (sub["axis.pingpong"] == pingpong)
        if pattern == "strided":
            m &= sub["axis.stride"].astype(int) == REF_PATTERN_STRIDE
        if reuse is not None:
            m &= sub["axis.reuse"].astype(int) == reuse
        sub = sub[m]
        return sub.groupby("axis.bytes")["time_median_s"].median().to_dict()

    def _at(self, strategy, phase, nbytes, **cond) -> float | None:
        rows = self._rows(strategy, phase, **cond)
        if not rows:
            return None
        return _loglog(np.array(list(rows), float), np.array(list(rows.values()), float), nbytes)

    def _ref_bytes(self, strategy, **cond) -> float | None:
        """The size at which a variant (pattern, touched fraction) was measured: its ratio's base."""
        rows = self._rows(strategy, "kernel", reuse=1, **cond)
        return max(rows) if rows else None

    def _kernel_parts(self, strategy, nbytes, **cond) -> tuple[float, float] | None:
        """(first pass, each further pass) at a size, from the smallest and largest reuse measured
        (the calibration's 1 and 4): next = (t_hi - t_lo) / (hi - lo)."""
        reuses = self._reuses(strategy, **cond)
        if not reuses:
            return None
        lo, hi = reuses[0], reuses[-1]
        t_lo = self._at(strategy, "kernel", nbytes, reuse=lo, **cond)
        if hi == lo:
            return t_lo / lo, t_lo / lo
        t_hi = self._at(strategy, "kernel", nbytes, reuse=hi, **cond)
        nxt = max((t_hi - t_lo) / (hi - lo), 0.0)
        return max(t_lo - (lo - 1) * nxt, 0.0), nxt

    def _reuses(self, strategy, **cond) -> list[int]:
        """The reuse counts measured for a condition (the calibration's are 1 and 4)."""
        return [r for r in self.reuses if self._rows(strategy, "kernel", reuse=r, **cond)]

    def _ratio(self, strategy, phase, variant: dict, part: str = "all") -> float:
        """Measured time of a variant (pattern, touched) over streaming's, at the variant's size."""
        ref = self._ref_bytes(strategy, **variant)
        if ref is None:
            return math.nan
        if phase == "kernel":
            v, base = self._kernel_parts(strategy, ref, **variant), self._kernel_parts(strategy, ref)
            if v is None or base is None:
                return math.nan
            i = 0 if part == "first" else 1
            return v[i] / base[i] if base[i] > 0 else 1.0
        v, base = self._at(strategy, phase, ref, **variant), self._at(strategy, phase, ref)
        if v is None or base is None or base <= 0:
            return math.nan
        return v / base

    def _touched_ratio(self, strategy, phase, f: float, part: str = "all") -> float:
        """The phase's time at touched fraction f over its time on the whole buffer: a line through the
        measured sparse point (f_cal, r) and (1, 1); for the kernel, below f_cal in proportion to f
        (scattered pages cost more per byte than a contiguous buffer, but nothing touched costs
        nothing), while the host's phases keep the line's fixed part (it reads the whole buffer)."""
        if f >= 1.0:
            return 1.0
        unmeasured = f if phase == "kernel" else 1.0  # nothing measured: passes in proportion, the rest as is
        if not self.sparse_fractions:
            return unmeasured
        fc = min(self.sparse_fractions, key=lambda x: abs(math.log(x) - math.log(f)))
        r = self._ratio(strategy, phase, {"touched": fc}, part)
        if math.isnan(r):
            return unmeasured
        if f <= fc and phase == "kernel":  # fewer scattered pages: in proportion to the measured sparse point
            return max(r * f / fc, 1e-3)
        return max(r + (1.0 - r) * (f - fc) / (1.0 - fc), 1e-3)  # a line through it and the whole buffer

    def _pattern_ratio(self, strategy, phase, w: Workload, part: str = "all") -> float:
        if w.pattern == "streaming":
            return 1.0
        r = self._ratio(strategy, phase, {"pattern": w.pattern}, part)
        if math.isnan(r):
            return 1.0
        if w.pattern == "strided" and phase == "kernel" and w.stride > REF_PATTERN_STRIDE:
            # past one word per 32-byte sector, the passes fetch fewer sectors in proportion
            # (not the first pass of on-demand managed memory: it migrates whole pages)
            st = strategies.get(strategy)
            if not (part == "first" and st.managed and not st.moves_data):
                r = max(r * REF_PATTERN_STRIDE / w.stride, 1e-3)
        return r

    # -- the prediction ---------------------------------------------------------------------

    def applies(self, strategy: str, w: Workload) -> str | None:
        """Why the strategy cannot serve the workload here, or None."""
        if strategies.get(strategy).advice == "read-mostly":
            return ("the workload's kernels write the buffer, and every write collapses READ_MOSTLY's read-only "
                    "copies: advice for data the GPU only reads")
        if strategy in self.skipped:
            return self.skipped[strategy]
        if strategy not in self.strategies:
            return "not in the calibration"
        st = strategies.get(strategy)
        if w.fits is False and (st.copies or st.moves_data):
            return f"needs a device copy of all {format_size(w.bytes)}, which does not fit in device memory"
        return None

    def predict(self, strategy: str, w: Workload) -> Prediction:
        """Seconds per phase of the workload under the strategy."""
        B, st = w.bytes, strategies.get(strategy)
        pp = w.pingpong and w.iterations > 1
        turns = w.iterations - 1 if pp else 0
        notes = []
        if B > self.max_bytes:
            notes.append(f"{format_size(B)} is past the largest calibrated size ({format_size(self.max_bytes)}): "
                         "scaled in proportion")
        ph = {}
        for name in ("alloc", "host_init", "free"):
            v = self._at(strategy, name, B)
            ph[name] = v or 0.0
        copies = 1 + turns
        if st.moves_data:
            ph["h2d"] = (self._at(strategy, "h2d", B) or 0.0) * copies
        parts = self._kernel_parts(strategy, B)
        first, nxt = parts if parts else (0.0, 0.0)
        first *= self._pattern_ratio(strategy, "kernel", w, "first") * self._touched_ratio(strategy, "kernel", w.touched, "first")
        nxt *= self._pattern_ratio(strategy, "kernel", w, "next") * self._touched_ratio(strategy, "kernel", w.touched, "next")
        if pp:
            # the first pass of a later round, after the host's turn: on-demand pages migrate again, while
            # mappings (prefer-host, accessed-by) are set up once; measured as the calibration's ping-pong
            # kernel (two rounds of one pass) less the first pass
            again = first
            both = self._at(strategy, "kernel", B, reuse=1, iterations=2, pingpong="yes")
            if both is not None and parts:
                again = max(both - parts[0], 0.0) * first / parts[0] if parts[0] > 0 else first
            ph["kernel"] = first + (w.iterations - 1) * again + (w.reuse - 1) * w.iterations * nxt
        else:
            ph["kernel"] = first + (w.reuse * w.iterations - 1) * nxt
        if st.moves_data:
            ph["d2h"] = (self._at(strategy, "d2h", B) or 0.0) * copies
        if turns:
            turn = self._at(strategy, "host_turn", B, reuse=1, iterations=2, pingpong="yes")
            if turn is None:
                notes.append("no ping-pong in the calibration: a host turn taken as a host read")
                turn = self._at(strategy, "host_read", B) or 0.0
            ph["host_turn"] = turns * turn * self._touched_ratio(strategy, "host_read", w.touched) \
                * self._pattern_ratio(strategy, "host_read", w)
        ph["host_read"] = (self._at(strategy, "host_read", B) or 0.0) \
            * self._touched_ratio(strategy, "host_read", w.touched) * self._pattern_ratio(strategy, "host_read", w)
        ordered = {k: ph[k] for k in PHASES if k in ph}
        return Prediction(strategy, ordered, notes)

    def rank(self, w: Workload) -> tuple[list[Prediction], dict[str, str]]:
        """Predictions for every strategy that applies, fastest first, and why the others do not."""
        preds, excluded = [], {}
        for s in strategies.STRATEGIES:
            why = self.applies(s, w)
            if why:
                excluded[s] = why
                continue
            preds.append(self.predict(s, w))
        preds.sort(key=lambda p: p.total)
        return preds, excluded
