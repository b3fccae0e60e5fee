"""From predictions to a decision: strategies ranked for a workload, the reason in plain words,
and the check of the prediction against a measured run (``recommend --verify``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from umprof.core.results import slug
from umprof.core.units import format_size, format_time
from umprof.measure import strategies
from umprof.model.predict import PHASES, VERIFY_PREFIX, Calibration, Prediction
from umprof.model.workload import Workload, with_fit

CLOSE = 0.05  # within this, two strategies are a close call (and a top pick within it of the fastest counts as right)

PHASE_WORDS = {
    "alloc": "allocation (pinning or registering pages costs in proportion to the size)",
    "host_init": "the host's first write (first-touch page faults)",
    "h2d": "copies to the device",
    "kernel": "the kernel passes",
    "d2h": "copies back to the host",
    "host_turn": "the host's turns between iterations",
    "host_read": "the host's final read (managed pages migrate back on the host's faults)",
    "free": "freeing the memory",
}


@dataclass
class Recommendation:
    workload: Workload
    ranked: list[Prediction]
    excluded: dict[str, str]
    reason: str
    notes: list[str] = field(default_factory=list)

    @property
    def top(self) -> Prediction:
        return self.ranked[0]

    def to_frame(self) -> pd.DataFrame:
        """A row per strategy, fastest first: predicted seconds per phase, total, and × the best."""
        best = self.ranked[0].total
        rows = []
        for i, p in enumerate(self.ranked, 1):
            row = {"rank": i, "strategy": p.strategy}
            row.update({ph: p.phases.get(ph, math.nan) for ph in PHASES})
            row.update(total=p.total, vs_best=p.total / best if best > 0 else math.nan)
            rows.append(row)
        return pd.DataFrame(rows)


def _kind(name: str) -> str:
    st = strategies.get(name)
    if st.copies or st.moves_data:
        return "copy"
    if st.managed and st.advice in (None, "prefer-gpu", "read-mostly"):
        return "on-demand"
    return "in-place"  # over the link: zero-copy, mapped, system, managed mapped from the host


def _best(ranked, kind):
    return next((p for p in ranked if _kind(p.strategy) == kind), None)


def _copies(p: Prediction) -> float:
    return p.phases.get("h2d", 0.0) + p.phases.get("d2h", 0.0)


def explain(ranked: list[Prediction], w: Workload) -> str:
    """One paragraph: what wins, the mechanism that makes it win for this workload, the
    runner-up and where it loses, and where the winner's own time goes."""
    if not ranked:
        return "No strategy applies to this workload on this device."
    t = ranked[0]
    def times(n):
        return "once" if n == 1 else f"{n} times"

    if w.pingpong and w.iterations > 1:  # the data goes back to the host between rounds
        used = f"read {times(w.reuse)} per round trip, {w.iterations} round trips"
    else:
        used = f"read {times(w.reuse * w.iterations)} per transfer"
    out = [f"{t.strategy} is predicted fastest: {format_time(t.total)} for the whole workload ({w.describe()})."]
    kind = _kind(t.strategy)
    inplace, copier, ondemand = _best(ranked, "in-place"), _best(ranked, "copy"), _best(ranked, "on-demand")
    touched = w.touched_text
    if kind == "copy":
        if inplace is not None:
            out.append(f"The data is {used}, so copying all {format_size(w.bytes)} there and back "
                       f"({format_time(_copies(t))}) and reading it from device memory ({format_time(t.phases['kernel'])} "
                       f"of kernel time) beats reading it in place: {inplace.strategy} would cross PCIe on every pass "
                       f"({format_time(inplace.phases['kernel'])} of kernel time).")
        elif ondemand is not None:
            out.append(f"Moving the whole buffer up front ({format_time(_copies(t))} of copies) beats migrating it page by "
                       f"page on demand ({ondemand.strategy}: {format_time(ondemand.phases['kernel'])} of kernel time).")
    elif kind == "in-place":
        cmp = copier or ondemand
        extra = f" than copying all {format_size(w.bytes)} there and back ({cmp.strategy}: {format_time(_copies(cmp) + cmp.phases['kernel'])} " \
                "of copies and kernel time)" if cmp is not None and copier is not None else ""
        out.append(f"Each pass touches {touched} of the buffer and it is {used}: reading it in place over PCIe "
                   f"({format_time(t.phases['kernel'])} of kernel time) costs less{extra}.")
    else:
        cmp = copier
        tail = (f"; copying the whole buffer, as {cmp.strategy} does, costs {format_time(_copies(cmp))} in copies alone"
                if cmp is not None else "")
        out.append(f"Only the pages a kernel touches migrate ({touched} of {format_size(w.bytes)}), on demand, and "
                   f"later passes find them in device memory{tail}.")
    if len(ranked) > 1:
        u = ranked[1]
        gap = u.total / t.total - 1 if t.total > 0 else math.nan
        diffs = {ph: u.phases.get(ph, 0.0) - t.phases.get(ph, 0.0) for ph in set(u.phases) | set(t.phases)}
        ph = max(diffs, key=diffs.get)
        line = (f"Next: {u.strategy}, {gap:.0%} slower, mostly in {PHASE_WORDS[ph]} "
                f"({format_time(u.phases.get(ph, 0.0))} against {format_time(t.phases.get(ph, 0.0))}).")
        if gap < CLOSE:
            line += " That is a close call (under 5%): either will do; `--verify` measures both."
        out.append(line)
    biggest = max(t.phases, key=t.phases.get)
    share = t.phases[biggest] / t.total if t.total > 0 else math.nan
    if share > 0.4:
        out.append(f"Most of {t.strategy}'s time ({share:.0%}) is {PHASE_WORDS[biggest]}.")
    return " ".join(out)


def recommend(cal: Calibration, w: Workload) -> Recommendation:
    """Every strategy that applies, ranked by predicted total time, with the reason."""
    ranked, excluded = cal.rank(w)
    notes = sorted({n for p in ranked for n in p.notes})
    return Recommendation(w, ranked, excluded, explain(ranked, w), notes)


def recommend_all(cal: Calibration, workloads: list[Workload]) -> list[Recommendation]:
    """:func:`recommend` for each workload, ``fits`` decided from the calibrated device's memory
    where the workload leaves it open."""
    memory = cal.device.get("memory_total_bytes")
    return [recommend(cal, with_fit(w, memory)) for w in workloads]


# -- verification ---------------------------------------------------------------------------

def verification_name(w: Workload, index: int) -> str:
    """The scenario name ``--verify`` measures the index-th workload under (its results' key)."""
    return f"{VERIFY_PREFIX}{slug(w.name) or index + 1}"


VERIFY_ITERATIONS = 3  # a verification runs at least this many iterations: the steady ones are measured apart


def verification_scenario(w: Workload, strategy_names: list[str], timing: dict | None = None, index: int = 0):
    """A ``loop`` scenario that measures the workload under the given strategies (at least
    VERIFY_ITERATIONS iterations, so that setup and the steady iteration are both measured)."""
    from umprof.measure.ops import get_op
    from umprof.measure.scenario import Scenario

    op = get_op("loop")
    axes = {spec.name: list(spec.default) for spec in op.axes.specs}
    axes.update(w.loop_axes(max(w.iterations, VERIFY_ITERATIONS)))
    axes["strategy"] = list(strategy_names)
    name = verification_name(w, index)
    # at least three samples of every strategy, even of cases that take a second each
    timing = dict({"min_samples": 3, "timeout": 2.0}, **(timing or {}))
    return Scenario(name=name, about=f"recommend --verify: {w.describe()}", op=op, path=Path("<recommend>"),
                    axes=axes, kernel=op.default_kernel, timing=timing)


def measured_totals(frame: pd.DataFrame, scenario: str) -> dict[str, float]:
    """Strategy → measured total (median per-sample sum of the phases) of a verification scenario."""
    rows = frame[(frame["scenario"] == scenario) & (frame["phase"] == "total") & (frame["status"] == "ok")]
    return dict(zip(rows["axis.strategy"], rows["time_median_s"].astype(float)))


def verdict(rec: Recommendation, measured: dict[str, float]) -> dict:
    """Predicted vs measured for the verified strategies, and whether the top pick held."""
    rows = []
    for p in rec.ranked:
        if p.strategy in measured:
            m = measured[p.strategy]
            rows.append({"strategy": p.strategy, "predicted_s": p.total, "measured_s": m,
                         "error": p.total / m - 1 if m > 0 else math.nan})
    table = pd.DataFrame(rows)
    if table.empty or rec.top.strategy not in measured:
        return {"table": table, "ok": False, "fastest": None, "gap": math.nan,
                "summary": "the top pick was not measured"}
    table["measured_rank"] = table["measured_s"].rank(method="min").astype(int)
    fastest = table.loc[table["measured_s"].idxmin(), "strategy"]
    gap = measured[rec.top.strategy] / measured[fastest] - 1
    ok = gap <= CLOSE
    if fastest == rec.top.strategy:
        summary = f"top pick {rec.top.strategy} measured fastest of {len(table)}"
    else:
        summary = (f"top pick {rec.top.strategy} measured {gap:.1%} slower than {fastest} "
                   f"({'within' if ok else 'outside'} 5%)")
    return {"table": table, "ok": ok, "fastest": fastest, "gap": gap, "summary": summary}


def verify_all(recs: list[Recommendation], frame: pd.DataFrame) -> list[dict | None]:
    """Each recommendation's :func:`verdict` against measured results, None where its workload
    was not measured (recommendations in the order ``recommend --verify`` ran them)."""
    out = []
    for i, rec in enumerate(recs):
        measured = measured_totals(frame, verification_name(rec.workload, i))
        out.append(verdict(rec, measured) if measured else None)
    return out


def summary_rows(pairs) -> list[dict]:
    """One row per verified (recommendation, verdict): the top pick, the measured fastest, the gap."""
    return [{"workload": rec.workload.label, "top pick": rec.top.strategy, "measured fastest": v["fastest"] or "-",
             "top pick vs fastest": "-" if math.isnan(v["gap"]) else f"+{v['gap']:.1%}", "held": "yes" if v["ok"] else "NO"}
            for rec, v in pairs if v is not None]
