"""From predictions to a decision: strategies ranked for a workload, the reason in plain words,
and the check of the prediction against a measured run (``recommend --verify``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

import numpy as np
import pandas as pd

from umprof.core.errors import UsageError
from umprof.core.results import slug
from umprof.core.units import format_time
from umprof.model.calibration import PHASES, RUN, VERIFY_PREFIX, kind
from umprof.model import ties
from umprof.model.predict import Calibration, Prediction
from umprof.model.workload import Workload, with_fit

CLOSE = 0.05  # within this, two strategies are a close call (and a top pick within it of the fastest counts as right)
# strategies predicted within this of the fastest are a tie, ordered by ties.CRITERION: within 3% the figures
# say nothing the criterion cannot (the prediction's own error there), at 5% they do. Over the 182 workloads of
# 13 verification sets (H200 and H100, 2026-11-22 to -24), ordering the top by that criterion within a band of
# 0, 1, 2, 3 and 5% held 158/144, 157/147, 158/146, 159/146 and 151/143 picks (whole run / steady): a cost of a
# few picks in a hundred at most, the price of saying which change is smaller where the prediction cannot tell
# the two apart
TIE_ERROR = 0.03

PHASE_WORDS = {
    "alloc": "allocation (pinning or registering pages costs in proportion to the size)",
    "host_init": "the host's first write (first-touch page faults)",
    "first_extra": "the first iteration's extra cost (the whole buffer moves, pages are mapped)",
    "free": "freeing the memory",
    "host_write": "the host's writes of new data",
    "h2d": "copies or prefetches to the device",
    "kernel": "the kernel passes (with any migration on their faults)",
    "d2h": "copies or prefetches back to the host",
    "host_read": "the host's reads of the buffer (managed pages on the GPU fault back first)",
    "other": "the host's time between the steps",
    "overlap": "what running the steps at once hides (chunks over streams)",
}
MECHANISM = {
    "copy": "keeps a device copy and moves only what changes with explicit copies",
    "link": "leaves the data in host memory and lets the kernels read it across PCIe",
    "on-demand": "migrates pages on the faults of whoever touches them",
    "prefetch": "prefetches pages to the device before the kernel and back before the host reads",
    "read-mostly": "keeps read-only copies on both sides (READ_MOSTLY), so reads are local everywhere",
}
PLAN_MECHANISM = {  # plans that move data their own way, beside their memory's kind
    "pageable-staged": "keeps a device copy and moves what changes through a ring of small pinned buffers, "
                       "host threads near the GPU filling some while the others are copied",
    "pageable-registered": "page-locks the application's own buffer in place once (its cost, in proportion to the "
                           "bytes, is in the setup) and copies what changes at the link's rate",
    "pinned-pipelined": "keeps a device copy and runs each iteration chunk by chunk over streams, so the host's "
                        "writes and reads, the copies and the kernel of different chunks overlap",
}


def mechanism(strategy: str) -> str:
    """How the strategy moves data, in words."""
    return PLAN_MECHANISM.get(strategy) or MECHANISM[kind(strategy)]


@dataclass
class Recommendation:
    workload: Workload
    ranked: list[Prediction]
    excluded: dict[str, str]
    reason: str
    steady: bool = False  # ranked by the steady iteration (else the whole run of the workload's iterations)
    notes: list[str] = field(default_factory=list)
    tied: list[str] = field(default_factory=list)  # the top strategies within TIE_ERROR, in the order ranked
    tie_spread: float = 0.0  # the slowest tied one's figure over the fastest's, less 1

    @property
    def top(self) -> Prediction:
        return self.ranked[0]

    @property
    def mode(self) -> str:
        return "steady" if self.steady else "whole"

    def to_frame(self) -> pd.DataFrame:
        """A row per strategy, fastest first: setup, steady iteration and whole run (seconds), × the
        best by the deciding figure, and every phase (setup ones once, steady ones per iteration)."""
        best = min(p.cost(self.steady) for p in self.ranked) if self.ranked else math.nan  # a tie's top may trail it
        rows = []
        for i, p in enumerate(self.ranked, 1):
            row = {"rank": i, "strategy": p.strategy, "setup": p.setup_s, "steady": p.steady_s, "whole": p.whole_s}
            row["total"] = p.cost(self.steady)
            row["vs_best"] = row["total"] / best if best > 0 else math.nan
            row.update({ph: p.setup.get(ph, p.steady.get(ph, math.nan)) for ph in PHASES})
            rows.append(row)
        return pd.DataFrame(rows)

    def to_dict(self, verdict: dict | None = None) -> dict:
        """The recommendation as plain data (``recommend --json``)."""
        return {
            "workload": {"name": self.workload.label, **{f.name: getattr(self.workload, f.name) for f in fields(Workload)
                                                          if f.name != "name"}},
            "ranked_by": "steady iteration" if self.steady else f"whole run of {self.workload.iterations} iterations",
            "ranking": [{"rank": i, "strategy": p.strategy, "setup_s": p.setup_s, "steady_s": p.steady_s,
                         "whole_s": p.whole_s, "setup_phases_s": p.setup, "steady_phases_s": p.steady, "notes": p.notes}
                        for i, p in enumerate(self.ranked, 1)],
            "excluded": self.excluded, "reason": self.reason, "notes": self.notes,
            "tie": {"strategies": self.tied, "within": self.tie_spread, "figure": "predicted",
                    "ranked_by": ties.CRITERION} if len(self.tied) > 1 else None,
            "verification": None if verdict is None else {
                "measured_in": verdict.get("source", ""), "held": bool(verdict["ok"]), "fastest": verdict["fastest"],
                "top_pick_vs_fastest": None if math.isnan(verdict["gap"]) else verdict["gap"],
                "round_gaps": verdict["round_gaps"], "rounds_held": verdict["rounds_held"],
                "strategies": verdict["table"].to_dict(orient="records")},
        }


def _diff_phase(a: Prediction, b: Prediction, steady: bool) -> str:
    """The phase where ``a`` loses most against ``b`` in the deciding figure."""
    pa, pb = (a.steady, b.steady) if steady else (a.phases, b.phases)
    diffs = {ph: pa.get(ph, 0.0) - pb.get(ph, 0.0) for ph in set(pa) | set(pb)}
    return max(diffs, key=diffs.get)


def explain(ranked: list[Prediction], w: Workload, steady: bool = False, tied: list[str] | None = None,
            spread: float = 0.0) -> str:
    """One paragraph: what wins and by which figure (or which strategies tie, and what orders them),
    the mechanism, the runner-up and where it loses, what the other figure would pick, and where the
    winner's time goes."""
    if not ranked:
        return "No strategy applies to this workload on this device."
    t = ranked[0]
    if tied and len(tied) > 1:
        by = "per steady iteration" if steady else "over the whole run"
        out = [f"A tie {by}: {ties.describe(tied, spread)}, closer than the prediction can tell apart; ranked by "
               f"{ties.CRITERION}: {t.strategy} first ({format_time(t.cost(steady))}"
               + (f"; setup {format_time(t.setup_s)} once)." if steady else
                  f" = setup {format_time(t.setup_s)} + {w.iterations} × {format_time(t.steady_s)}).")]
    elif steady:
        out = [f"{t.strategy} is predicted fastest per steady iteration: {format_time(t.steady_s)} "
               f"(ranked by the steady iteration, --steady; setup {format_time(t.setup_s)} once)."]
    else:
        out = [f"{t.strategy} is predicted fastest over the whole run: {format_time(t.whole_s)} = setup "
               f"{format_time(t.setup_s)} + {w.iterations} × {format_time(t.steady_s)} per iteration "
               f"(ranked by the whole run of {w.iterations} iteration{'s' if w.iterations != 1 else ''})."]
    out.append(f"It {mechanism(t.strategy)}; this loop ({w.describe()}) "
               + _what_matters(w) + ".")
    if len(ranked) > 1 and not (tied and len(tied) > 1):
        u = ranked[1]
        gap = u.cost(steady) / t.cost(steady) - 1 if t.cost(steady) > 0 else math.nan
        ph = _diff_phase(u, t, steady)
        src = (u.steady, t.steady) if steady else (u.phases, t.phases)
        line = (f"Next: {u.strategy}, {gap:.0%} slower, mostly in {PHASE_WORDS[ph]} "
                f"({format_time(src[0].get(ph, 0.0))} against {format_time(src[1].get(ph, 0.0))}).")
        out.append(line)
    other = min(ranked, key=lambda p: p.cost(not steady))
    if other.strategy != t.strategy:
        out.append(f"By the {'whole run' if steady else 'steady iteration alone (a loop that runs for hours, --steady)'}, "
                   f"{other.strategy} would win ({format_time(other.cost(not steady))} against "
                   f"{format_time(t.cost(not steady))}).")
    phases = t.steady if steady else t.phases
    total = sum(phases.values())
    biggest = max(phases, key=phases.get)
    share = phases[biggest] / total if total > 0 else math.nan
    if share > 0.4:
        out.append(f"Most of {t.strategy}'s time ({share:.0%}) is {PHASE_WORDS[biggest]}.")
    payback = _payback(t, ranked)
    if payback:
        out.append(payback)
    return " ".join(out)


def _payback(t: Prediction, ranked: list[Prediction]) -> str | None:
    """For a buffer page-locked in place: what registering costs (allocation and free beside malloc's)
    and after how many iterations it has paid for itself against copying from the same pageable memory."""
    plain = next((p for p in ranked if p.strategy == "pageable"), None)
    if t.strategy != "pageable-registered" or plain is None:
        return None
    cost = sum(t.setup.get(k, 0.0) - plain.setup.get(k, 0.0) for k in ("alloc", "free"))
    extra, gain = t.setup_s - plain.setup_s, plain.steady_s - t.steady_s
    if cost <= 0:
        return None
    line = f"Registering the buffer costs {format_time(cost)} (allocation and free beside malloc's); "
    if extra <= 0:
        return line + "its faster first copy has paid for it within the first iteration."
    if gain <= 0:
        return None
    n = max(1, math.ceil(extra / gain - 1e-9))
    return line + f"its faster copies pay for it after {n} iteration{'s' if n != 1 else ''}."


def _what_matters(w: Workload) -> str:
    """What of the loop moves data, in words."""
    parts = []
    parts.append("brings no new data after the first iteration" if w.host_writes == 0
                 else f"brings {w.host_writes:.0%} new data each iteration" if w.host_writes >= 0.01
                 else f"brings {w.host_writes:.2%} new data each iteration")
    parts.append(f"reads it {w.reuse} time{'s' if w.reuse != 1 else ''} per iteration on the GPU"
                 + (" without writing it" if w.read_only else ""))
    parts.append("returns only a small result" if w.host_reads == 0 else f"has the host read {w.host_reads:.0%} back")
    return ", ".join(parts)


def recommend(cal: Calibration, w: Workload, steady: bool = False) -> Recommendation:
    """Every strategy that applies, ranked by the predicted whole run (or steady iteration), with the reason."""
    ranked, excluded = cal.rank(w, steady)
    notes = sorted({n for p in ranked for n in p.notes})
    ranked, tied, spread = _with_ties(ranked, w, steady)
    return Recommendation(w, ranked, excluded, explain(ranked, w, steady, tied, spread), steady, notes, tied, spread)


def _with_ties(ranked: list[Prediction], w: Workload, steady: bool) -> tuple[list[Prediction], list[str], float]:
    """(ranking, tied strategies, their spread): predictions in the order of the figure, those within
    TIE_ERROR of the fastest first and in :func:`ties.tie_key`'s order."""
    ranked = sorted(ranked, key=lambda p: p.cost(steady))
    tied = ties.tied([(p.strategy, p.cost(steady)) for p in ranked], TIE_ERROR)
    if len(tied) < 2:
        return ranked, tied, 0.0
    cost = {p.strategy: p.cost(steady) for p in ranked}
    spread = max(cost[s] for s in tied) / cost[tied[0]] - 1 if cost[tied[0]] > 0 else 0.0
    first = sorted((p for p in ranked if p.strategy in tied), key=lambda p: ties.tie_key(p.strategy, w.bytes,
                                                                                         p.cost(steady)))
    return first + [p for p in ranked if p.strategy not in tied], [p.strategy for p in first], spread


def recommend_all(cal: Calibration, workloads: list[Workload], steady: bool = False) -> list[Recommendation]:
    """:func:`recommend` for each workload, ``fits`` decided from the calibrated device's memory
    where the workload leaves it open."""
    memory = cal.device.get("memory_total_bytes")
    return [recommend(cal, with_fit(w, memory), steady) for w in workloads]


# -- verification ---------------------------------------------------------------------------

def verification_name(w: Workload, index: int) -> str:
    """The scenario name ``--verify`` measures the index-th workload under (its results' key); a
    later round of the same measurement is ``NAME.rK`` (:func:`~umprof.measure.scenario.round_name`)."""
    return f"{VERIFY_PREFIX}{slug(w.name) or index + 1}"


VERIFY_ITERATIONS = 3  # a verification runs at least this many iterations: the steady ones are measured apart
VERIFY_ROUNDS = 5  # --verify-rounds' default: an odd count, so that each figure is one round's
VERIFY_SAMPLING_S = 2.0  # a strategy's sampling time, shared out over the rounds


def verification_timing(rounds: int = 1, timing: dict | None = None) -> dict:
    """How a verification case samples in one of ``rounds`` rounds: no warm-up and at least one
    sample (a sample is a whole run, allocation to free, and after the first round the process
    is warm), for a share of VERIFY_SAMPLING_S; ``timing`` overrides."""
    return dict({"min_samples": 1, "warmup": 0, "timeout": VERIFY_SAMPLING_S / max(rounds, 1)}, **(timing or {}))


def verification_scenario(w: Workload, strategy_names: list[str], timing: dict | None = None, index: int = 0):
    """A ``loop`` scenario that measures the workload under the given strategies (at least
    VERIFY_ITERATIONS iterations, so that setup and the steady iteration are both measured), as
    :func:`verification_rounds` runs it (``timing``: its sampling, by default
    :func:`verification_timing` of one round)."""
    from umprof.measure.ops import get_op
    from umprof.measure.scenario import Scenario

    if w.kernel_s or w.kernel_bytes:
        key = "kernel_s" if w.kernel_s else "kernel_bytes"
        raise UsageError(f"workload {w.label}: --verify measures umprof's own loop, which runs its own kernel; a "
                         f"workload with '{key}' (an application's, from its trace) is verified by timing the "
                         "application itself")
    if w.split:
        raise UsageError(f"workload {w.label}: --verify measures umprof's own loop, which reads back the part of its "
                         "buffer the host wrote; a workload with 'split = true' (an application's separate input "
                         "and output, from its trace) is verified by timing the application itself")
    op = get_op("loop")
    axes = {spec.name: list(spec.default) for spec in op.axes.specs}
    axes.update(w.loop_axes(max(w.iterations, VERIFY_ITERATIONS)))
    axes["strategy"] = list(strategy_names)
    name = verification_name(w, index)
    timing = timing if timing is not None else verification_timing()
    return Scenario(name=name, about=f"recommend --verify: {w.describe()}", op=op, path=Path("<recommend>"),
                    axes=axes, kernel=op.default_kernel, timing=timing)


def verification_rounds(workloads: list[Workload], strategies: list[list[str]], rounds: int = VERIFY_ROUNDS,
                        timing: dict | None = None) -> list:
    """The scenarios that measure each workload under its strategies in ``rounds`` rounds: every
    workload in each round, the strategies in the given order in odd rounds and reversed in even
    ones, each case sampled briefly (:func:`verification_timing`), so that a slow spell of the
    machine weighs on one round of a strategy, which the median over the rounds then outvotes.
    On H200 and H100 machines (2026-11) the same case measured again in one run differed by a median of
    4-9%, and by 20-30% for a tenth of the cases; within a case the samples agreed to 1-5%: the
    machine's state moves over seconds (one strategy's three samples all 1.6x slower in their host
    reads, the next strategy's first sample too, and none after it)."""
    from dataclasses import replace

    if rounds < 1:
        raise UsageError(f"verification rounds: expected a positive integer, got {rounds}")
    sampling = verification_timing(rounds, timing)
    # each workload's rounds as Scenario.in_rounds makes them (names, reversed even rounds), interleaved
    # so that every workload runs once in a round before any runs again
    each = [replace(verification_scenario(w, names, sampling, index=i), rounds=rounds).in_rounds()
            for i, (w, names) in enumerate(zip(workloads, strategies))]
    return [its[k] for k in range(rounds) for its in each]


def measured_rounds(frame: pd.DataFrame, scenario: str, w: Workload) -> dict[str, dict[tuple, tuple[float, float]]]:
    """Strategy → {(run, round): (whole run, steady iteration)} measured by wall clock in a
    verification scenario and its later rounds (``scenario.rK``), in each measured file (``run``,
    where the frame has the RUN column): the run's own wall where it ran the workload's iterations;
    where it ran more (so that the steady state is seen), its measured setup + iterations × its
    measured steady iteration."""
    from umprof.measure.scenario import is_round_of, round_number

    totals = frame[(frame["phase"] == "total") & (frame["status"] == "ok")]  # the rounds' names matched on these alone
    rows = totals[is_round_of(totals["scenario"].astype(str), scenario)]
    runs = rows[RUN] if RUN in rows else pd.Series(0, index=rows.index)
    rounds = round_number(rows["scenario"].astype(str))
    out: dict[str, dict[tuple, tuple[float, float]]] = {}
    for idx, r in rows.iterrows():
        steady = float(r["wall_steady_s"])
        whole = float(r["wall_s"]) if int(r["axis.iterations"]) == w.iterations \
            else float(r["wall_setup_s"]) + w.iterations * steady
        per = out.setdefault(r["axis.strategy"], {})
        key = (int(runs[idx]), int(rounds[idx]))
        while key in per:  # the same round measured twice in one file: both count
            key = (*key, len(per))
        per[key] = (whole, steady)
    return out


def measured(frame: pd.DataFrame, scenario: str, w: Workload) -> dict[str, tuple[float, float]]:
    """Strategy → (whole run, steady iteration): the median over its rounds (and files) of
    :func:`measured_rounds`."""
    return _medians(measured_rounds(frame, scenario, w))


def _medians(per_round: dict[str, dict[tuple, tuple[float, float]]]) -> dict[str, tuple[float, float]]:
    """Strategy → (whole run, steady iteration), each the median over the rounds."""
    return {s: (_median([v[0] for v in vs.values()]), _median([v[1] for v in vs.values()]))
            for s, vs in per_round.items()}


def _median(values: list[float]) -> float:
    """The median of the values that are numbers (NaN where none is)."""
    values = [v for v in values if not math.isnan(v)]
    return float(np.median(values)) if values else math.nan


def verdict(rec: Recommendation, measured_s: dict[str, tuple[float, float]],
            rounds: dict[str, dict[tuple, tuple[float, float]]] | None = None) -> dict:
    """Predicted vs measured (in the recommendation's figure) for the verified strategies, and
    whether the top pick held: it was the measured fastest (by the medians) or within 5% of it.
    With ``rounds`` (:func:`measured_rounds`), also round by round: ``round_gaps``, the top pick
    against the fastest of each round where every strategy measured in it ran, and
    ``rounds_held``, in how many of them it was within 5% (a miss that holds in some rounds is
    within what the machine repeats; one that misses in every round is the model's)."""
    i = 1 if rec.steady else 0
    meas = {k: v[i] for k, v in measured_s.items() if not math.isnan(v[i])}
    rows = []
    for p in rec.ranked:
        if p.strategy in meas:
            m = meas[p.strategy]
            rows.append({"strategy": p.strategy, "predicted_s": p.cost(rec.steady), "measured_s": m,
                         "error": p.cost(rec.steady) / m - 1 if m > 0 else math.nan})
    table = pd.DataFrame(rows, columns=["strategy", "predicted_s", "measured_s", "error"])
    if table.empty or rec.top.strategy not in meas:
        return {"table": table, "ok": False, "fastest": None, "gap": math.nan, "summary": "the top pick was not measured",
                "round_gaps": [], "rounds_held": 0}
    table["measured_rank"] = table["measured_s"].rank(method="min").astype(int)
    fastest = table.loc[table["measured_s"].idxmin(), "strategy"]
    gap = meas[rec.top.strategy] / meas[fastest] - 1
    ok = gap <= CLOSE
    what = "per steady iteration" if rec.steady else "over the whole run"
    if fastest == rec.top.strategy:
        summary = f"top pick {rec.top.strategy} measured fastest {what} of {len(table)}"
    else:
        summary = (f"top pick {rec.top.strategy} measured {gap:.1%} slower {what} than {fastest} "
                   f"({'within' if ok else 'outside'} 5%)")
    gaps = _round_gaps(rec.top.strategy, {s: rounds[s] for s in table["strategy"] if s in rounds}, i) if rounds else []
    held = sum(g <= CLOSE for g in gaps)
    if len(gaps) > 1:
        summary += f"; round by round, within 5% of the round's fastest in {held} of {len(gaps)}"
    return {"table": table, "ok": ok, "fastest": fastest, "gap": gap, "summary": summary,
            "round_gaps": gaps, "rounds_held": held}


def _round_gaps(top: str, rounds: dict[str, dict[tuple, tuple[float, float]]], i: int) -> list[float]:
    """The top pick against the fastest of each round (figure ``i``: 0 whole run, 1 steady), over
    the rounds in which every strategy measured anywhere was measured (a round missing one cannot
    say which was fastest)."""
    keys = set.intersection(*(set(k for k, v in per.items() if not math.isnan(v[i])) for per in rounds.values()))
    out = []
    for k in sorted(keys):
        best = min(per[k][i] for per in rounds.values())
        if best > 0:
            out.append(rounds[top][k][i] / best - 1)
    return out


def verify_all(recs: list[Recommendation], frame: pd.DataFrame) -> list[dict | None]:
    """Each recommendation's :func:`verdict` against measured results, None where its workload
    was not measured (recommendations in the order ``recommend --verify`` ran them)."""
    out = []
    ever = set(frame["axis.strategy"].dropna().astype(str)) if "axis.strategy" in frame else set()
    for i, rec in enumerate(recs):
        per_round = measured_rounds(frame, verification_name(rec.workload, i), rec.workload)
        out.append(verdict(among_measured(rec, ever), _medians(per_round), per_round) if per_round else None)
    return out


def among_measured(rec: Recommendation, ever: set[str]) -> Recommendation:
    """The recommendation as it would have been among the strategies a measurement ever ran: one that
    no case of it ran (a strategy added since a verification set was measured) is left out of the
    ranking, so that an old set judges the choice it can judge; a strategy that ran for other
    workloads but not this one stays (and a top pick left unmeasured is a miss)."""
    missing = [p.strategy for p in rec.ranked if p.strategy not in ever]
    if not missing or not ever:
        return rec
    ranked, tied, spread = _with_ties([p for p in rec.ranked if p.strategy in ever], rec.workload, rec.steady)
    return replace(rec, ranked=ranked, tied=tied, tie_spread=spread,
                   notes=rec.notes + [f"judged among the strategies measured ({', '.join(missing)} never ran)"])


def runs_agree(recs: list[Recommendation], frame: pd.DataFrame) -> dict | None:
    """How well one measured run predicts another (the frame holds several, told apart by RUN):
    for each ordered pair of runs and each workload measured in both, whether the strategy
    measured fastest in the first (by its median over that run's rounds) was within 5% of the
    fastest in the second, in each recommendation's figure: how repeatable the verdict itself is
    (a pick made from one measurement of the machine, judged by another). None for fewer than two
    runs."""
    if RUN not in frame or frame[RUN].nunique() < 2:
        return None
    runs = sorted(int(x) for x in frame[RUN].unique())
    tally = {(a, b): [0, 0] for a in runs for b in runs if a != b}  # (fastest of, judged by) → [held, of]
    for i, rec in enumerate(recs):
        fig = 1 if rec.steady else 0
        per_round = measured_rounds(frame, verification_name(rec.workload, i), rec.workload)
        by_run = {x: _run_medians(per_round, x, fig) for x in runs}
        for (a, b), counts in tally.items():
            ma, mb = by_run[a], by_run[b]
            if not ma or not mb:
                continue
            pick = min(ma, key=ma.get)
            if pick in mb:
                counts[1] += 1
                counts[0] += mb[pick] / min(mb.values()) - 1 <= CLOSE
    pairs = [{"fastest_of": a, "judged_by": b, "held": h, "of": n} for (a, b), (h, n) in tally.items()]
    return {"runs": len(runs), "pairs": pairs, "held": sum(p["held"] for p in pairs), "of": sum(p["of"] for p in pairs)}


def _run_medians(per_round: dict[str, dict[tuple, tuple[float, float]]], run: int, fig: int) -> dict[str, float]:
    """Strategy → its median figure ``fig`` (0 whole run, 1 steady) over one run's own rounds (a round's
    key starts with its run), where it has one."""
    mine = {s: {k: v for k, v in rounds.items() if k[0] == run} for s, rounds in per_round.items()}
    return {s: m[fig] for s, m in _medians(mine).items() if not math.isnan(m[fig])}


DRIFT_FAMILIES = {"host memory": ("host_write", "host_read"), "copies": ("h2d", "d2h"), "kernels": ("kernel",)}
DRIFT_FLOOR_S = 20e-6  # steps predicted shorter than this are a launch's noise, not the path's rate
DRIFT_WARN = 0.15  # a family measured this far from the calibration, in the median, no longer describes it


def phase_drift(recs: list[Recommendation], frame: pd.DataFrame) -> dict[str, dict]:
    """How this verification's steady steps ran against the calibration's prediction of them, by
    family (host memory: the host's writes and reads; copies; kernels): the median of measured /
    predicted over every verified workload and plain strategy (explicit copies, zero-copy, mapped:
    no managed faults, no plan's own steps) whose step the calibration predicts at DRIFT_FLOOR_S or
    more. A family far from 1 says the calibration describes another machine or day: on an H200
    (2026-11-23) two runs of one verification set measured host memory at 1.34x and 1.28x a
    calibration measured on another machine, copies at 1.01x, kernels at 1.05-1.07x; a set measured
    on the calibration's own kind of machine, 1.03x, 0.98x and 1.06x."""
    from umprof.measure import strategies
    from umprof.measure.scenario import is_round_of
    from umprof.model.calibration import BORROWS

    ok = frame[frame["status"] == "ok"]
    ratios: dict[str, list[float]] = {f: [] for f in DRIFT_FAMILIES}
    for i, rec in enumerate(recs):
        rows = ok[is_round_of(ok["scenario"].astype(str), verification_name(rec.workload, i))]
        for p in rec.ranked:
            st = strategies.get(p.strategy)
            if st.managed or p.strategy in BORROWS:
                continue
            mine = rows[rows["axis.strategy"] == p.strategy]
            if mine.empty:
                continue
            steady_its = mine["axis.iterations"].astype(int) - 1
            for family, phases in DRIFT_FAMILIES.items():
                for ph in phases:
                    at = mine["phase"] == ph
                    per_it = (mine.loc[at, "time_median_s"] / steady_its[at]).median() if at.any() else math.nan
                    if p.steady.get(ph, 0.0) >= DRIFT_FLOOR_S and per_it > 0:
                        ratios[family].append(per_it / p.steady[ph])
    return {f: {"ratio": float(np.median(v)), "steps": len(v)} for f, v in ratios.items() if v}


def drift_note(drift: dict[str, dict]) -> str | None:
    """A warning where a family of steps ran more than DRIFT_WARN from the calibration (None if none did)."""
    off = {f: d["ratio"] for f, d in drift.items() if abs(d["ratio"] - 1) > DRIFT_WARN}
    if not off:
        return None
    said = ", ".join(f"{f} {r:.2f}x" for f, r in off.items())
    rest = ", ".join(f"{f} {d['ratio']:.2f}x" for f, d in drift.items() if f not in off)
    return (f"the verified steps against the calibration's prediction of them (median, measured / predicted): {said}"
            f"{f' (but {rest})' if rest else ''}: the calibration does not describe this machine as it runs now, and "
            f"its ranking may not either; calibrate here (recommend without --from measures one; --save-calibration "
            f"keeps it), give it to --from beside this one (calibrations pool case by case) and verify again")


def summary_rows(pairs) -> list[dict]:
    """One row per verified (recommendation, verdict): the top pick, the measured fastest, the gap."""
    return [{"workload": rec.workload.label, "top pick": rec.top.strategy, "measured fastest": v["fastest"] or "-",
             "top pick vs fastest": "-" if math.isnan(v["gap"]) else f"+{v['gap']:.1%}",
             "median error": "-" if v["table"].empty else f"{v['table']['error'].abs().median():.1%}",
             "held": "yes" if v["ok"] else "NO",
             "rounds held": f"{v['rounds_held']}/{len(v['round_gaps'])}" if len(v["round_gaps"]) > 1 else "-"}
            for rec, v in pairs if v is not None]
