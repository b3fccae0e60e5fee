"""Predicted time of an application's loop under each strategy, from a calibration.

The steady iteration is the last simulated one (:mod:`umprof.model.pages`: page locations settle
after the second); setup is allocation + the first write + free + (first iteration − steady),
with the first iteration's extra cost beyond its phases (first touch, mappings) taken from the
calibration's measured first iterations; whole run = setup + iterations × steady.

The parts, one job each: :mod:`umprof.model.curves` (a curve of seconds against bytes),
:mod:`umprof.model.calibration` (a calibration read as curves, ratios and gaps),
:mod:`umprof.model.pages` (where managed pages are), :mod:`umprof.model.compose` (an iteration's
phases step by step), :mod:`umprof.model.plans` (a pipelined plan's chunks over streams) and this
module (a :class:`Prediction` per strategy, and the ranking).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from umprof.core.units import format_size, format_time
from umprof.measure import strategies
from umprof.model.calibration import BORROWS, PARTS_UNMEASURED, kind
from umprof.model.curves import Curve
from umprof.model.pages import PageSimulation
from umprof.model.plans import PlanComposition
from umprof.model.workload import Workload

SIM_ITERATIONS = 4  # simulated iterations: page locations settle after the second


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


class Calibration(PlanComposition):
    """A calibration that predicts: the setup and steady phases of a workload under each strategy,
    and every strategy that applies ranked."""

    def applies(self, strategy: str, w: Workload) -> str | None:
        """Why the strategy cannot serve the workload here, or None."""
        st = strategies.get(strategy)
        if st.advice == "read-mostly" and not w.read_only:
            return ("the kernel writes the buffer (gpu_writes > 0), and every write collapses READ_MOSTLY's "
                    "read-only copies: advice for data the GPU only reads")
        if strategy in self.skipped and strategy not in self.strategies:
            return self.skipped[strategy]
        if strategy not in self.strategies or BORROWS.get(strategy, strategy) not in self.strategies:
            return ("not in the calibration (one measured before umprof had it, or cut short): `umprof calibrate` "
                    "measures every strategy")
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
        its = [self._compose(strategy, w, state) for state in PageSimulation(w, kind(strategy)).iterations(SIM_ITERATIONS)]
        first, steady = its[0], its[-1]
        c = lambda name, b=w.bytes: self.curve(strategy, name, w.host_pages, w.first_write)(b)  # noqa: E731
        # what the calibration's first iterations cost beyond the same composition (first touch,
        # mappings), in proportion to the pages the kernel touches
        extra = self._first_extra(strategy, w.bytes) * w.touched
        setup = {"alloc": c("alloc"), "host_init": self._first_write(strategy, w),
                 "first_extra": sum(first.values()) - sum(steady.values()) + extra, "free": c("free")}
        if sum(setup.values()) < 0:  # whole = setup + iterations × steady still holds; say why it is negative
            notes.append(f"{strategy}'s setup is below zero: its first iteration is predicted "
                         f"{format_time(-setup['first_extra'])} cheaper than a steady one (setup counts the first "
                         "iteration less a steady one, so that whole run = setup + iterations × steady)")
        st = strategies.get(strategy)
        if w.copies > 1 and st.copies_in_parts and not self.measures_parts:
            notes.append(PARTS_UNMEASURED)
        if st.pipelined:
            notes.append(f"{strategy} assumes {st.describe_chunking(w.bytes)} per iteration, the kernel's work on a chunk "
                         "needing that chunk alone")
        return Prediction(strategy, setup, steady, w.iterations, notes)

    def _first_write(self, strategy, w: Workload) -> float:
        """The host's first write: the calibration's, of the whole buffer (its loop writes it all), or, for an
        application's input and output apart, of the input alone. The output's pages are then first touched
        by the GPU (managed memory), were placed at allocation (pinned, registered), or, malloc'd and not
        page-locked, fault in as the first copy back lands in them: priced as a first write by copy."""
        seconds = self.curve(strategy, "host_init", w.host_pages, w.first_write)(w.first_write_bytes)
        if w.output_first_bytes > 0 and strategies.get(strategy).pages_fault_on_copy:
            seconds += self.curve(strategy, "host_init", w.host_pages, "copy")(w.output_first_bytes)
        return seconds

    def _first_extra(self, strategy, nbytes) -> float:
        """The calibration's measured first iteration less its composed one (first touch, mappings)."""
        key = ("first_extra", strategy)
        if key not in self._curves:
            pts = {}
            scenario, axes = self._setup_reference(strategy)
            for b, measured in self._build(strategy, "first").items():
                cal = Workload(bytes=int(b), iterations=3, **axes)
                composed = sum(self._compose(strategy, cal, PageSimulation(cal, kind(strategy)).first()).values())
                pts[b] = max(measured - composed, 1e-7)
            self._curves[key] = Curve(pts)
        return self._curves[key](nbytes)

    def _compose(self, strategy, w: Workload, pages: "PageSimulation.Step") -> dict[str, float]:
        """Seconds per phase of one iteration: step by step, or chunk by chunk for a pipelined plan."""
        if strategies.get(strategy).pipelined:
            return self._pipelined(strategy, w, pages)
        return self._iteration(strategy, w, pages)

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
