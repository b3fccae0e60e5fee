"""``advise``: the advice on one application of a trace, as read -> adjust -> rank -> choose -> explain.

read (``read``, ``workload``): the application's loop as umprof's workload, ranked by the calibration of its GPU.
adjust (``rules``): what the trace measured corrects the calibration's prices, rule by rule, each in seconds for the
program as it runs now and for the ways it applies to. rank: every way's predicted time, fastest first; its saving is
the time now less it. choose: the fastest way, or among those within the prediction's error of it (a tie) the way
it has where the tie holds it, else the one that changes least code of those whose saving clears the prediction's own
error on a saving; a saving within that error keeps what it has. That error, and
the noise a saving must clear, are shares of the time the ways price (``result.priced_s``: the time now less its
first iteration's one-off setup), not of the whole loop. explain (``explain``, ``changes``, ``flows``): the change in
the program's own calls, each flow's line, what bounds the saving, and the verdict."""

from __future__ import annotations

import math
from typing import NamedTuple

from umprof.core.units import format_time
from umprof.model import frameworks, ties
from umprof.model.advice import explain
from umprof.model.advice import thresholds as th
from umprof.model.advice.bounds import Bounds, bound_limit, bounded_saving, bounds
from umprof.model.advice.changes import change_text, framework_of, is_python
from umprof.model.advice.flows import flow_advice
from umprof.model.advice.framework_choices import add_pytorch_choices, loader_limit
from umprof.model.advice.packing import add_packing
from umprof.model.advice.read import Reading, choose_reading, for_framework
from umprof.model.advice.readback_waits import add_readback_waits
from umprof.model.advice.workload import IN_PLACE
from umprof.model.advice.result import Advice, AppAdvice, Limit, band, loop_s, priced_s
from umprof.model.advice.rules import (Adjustment, allocation, allocations_beyond, carried, gpu_faults, host_faults,
                                       in_place, lead, pageable_copies, pinning, staging, threads, tracing)
from umprof.model.application import Application
from umprof.model.calibration import PARTS_UNMEASURED
from umprof.model.frameworks import Detected
from umprof.model.predict import Calibration, Prediction


class Adjusted(NamedTuple):
    """The reading's prices corrected by every rule: the time now in the model's frame (``now``), each way's predicted
    time (``whole``), the ways ranked fastest first, the rules' adjustments by name, and what later steps read of
    them."""
    now: float
    whole: dict  # each way's predicted time, held within its bounds (``bounds``)
    model_whole: dict  # as the rules priced it, before the bounds
    bounds: Bounds
    ranked: list
    rules: dict
    overlap: float
    carried: bool
    lead_words: str


class Choice(NamedTuple):
    """The way chosen, what it saves, the ways tied with it, the tie's note, and whether the way it has was kept (a
    saving within the prediction's own error, or a program the calibration cannot see well); whether every way is
    priced with the program's memory page-locked once (``pinned_once``), whether the calibration cannot see the
    program (``unseen``: ``cannot_see``), and its time for the program as it runs now (``model_now``)."""
    pick: Prediction
    saving: float
    tied: list
    note: str
    within_noise: bool
    pinned_once: bool
    unseen: bool
    model_now: float


def advise(app: Application, cal: Calibration, source: str = "", wall_s: float | None = None,
           framework: Detected | None = None, ranges=None, tracer: str = "nsys") -> AppAdvice:
    """What the application should use, and what that saves (see the module's docstring). ``wall_s``: the program's
    untraced wall time (measured by the user or a runner), from which the tracing's overhead is measured; without
    it, the overhead is estimated from what the trace recorded (``rules.tracing``). ``framework``: what the program
    allocates and copies with, told from its trace (:func:`umprof.model.frameworks.evidence`; else
    ``framework_of``), in whose calls every change is said; ``ranges``: the trace's ranges, from which a PyTorch
    program's own choices are priced (``framework_choices``); ``tracer``: what recorded the trace ("nsys" or
    "kineto"), in whose terms a limit says how to trace again."""
    fw = framework or Detected(framework_of(app), "a Python process" if is_python(app) else "a native process")
    out = AppAdvice(app=app, calibration=source or cal.source, workload=None, mapping="",
                    link_bytes_per_s=float(cal.device.get("pcie_bytes_per_s") or math.nan), wall_s=wall_s,
                    framework=fw.framework, framework_why=fw.why, tracer=tracer)
    n_threads = app.explicit_copies["tid"].nunique()
    traced_s = loop_s(app)
    r, idle = choose_reading(app, cal, traced_s, n_threads)
    if r.workload is None:
        return _nothing_to_price(app, r, out)
    r = for_framework(r, fw.framework)
    out.mapping, out.workload, out.excluded = r.how, r.workload, r.excluded
    tracer = tracing.overhead(app, traced_s, wall_s, tracing.recorded_ops(app, ranges))
    out.traced_s, out.tracing_overhead_s, out.overhead_from = traced_s, tracer.seconds, tracer.basis
    out.limits += tracer.limits
    now_s = traced_s - tracer.seconds  # the time now, untraced: every saving is priced against it
    a = adjust(app, cal, r, idle, n_threads, now_s, out.link_bytes_per_s, tracer.in_removable)
    out.priced_s = priced_s(app.loop, now_s, setup_priced_s(app, r.base))
    out.mapping += a.lead_words
    if r.current is None:
        out.limits.append(Limit("current-way-unpriced", f"its current way ({app.strategy}) is not one umprof predicts "
                                                        "here: savings are against the slowest strategy that applies, "
                                                        "not against it"))
    out.ranking = rank(a, now_s, out.priced_s)
    c = choose(app, r, a, now_s, out.priced_s)
    _explain(app, cal, r, a, c, out, idle, n_threads, now_s)
    if out.framework == "pytorch":
        add_pytorch_choices(app, cal, ranges, out)
        out.limits += loader_limit(app, ranges, out)
    add_packing(app, cal, out)
    add_readback_waits(app, out)
    out.limits += explain.host_bound_limit(app, out, frameworks.records_ops(ranges, app.pid))
    if _advised_for_setup(out, now_s):
        out.verdict += " " + explain.priced_sentence(out.priced_s, now_s)
    return out


def _advised_for_setup(out: AppAdvice, now_s: float) -> bool:
    """Whether the loop's change is advised only because its error is a share of the time the ways price: the figure
    of its saving that was weighed would not clear its share of the whole loop's time now."""
    loop = out.loop_advice
    if loop is None or loop.saving_s <= 0 or out.priced_s >= now_s:
        return False
    return loop.weighed_s <= loop.must_clear * now_s


def setup_priced_s(app: Application, base: Prediction) -> float:
    """The setup the ways price that a loop's first iteration may hold (``result.priced_s``): the program's
    allocation calls as traced, and its current way's first write and first-iteration extra as predicted."""
    return app.allocation_s + base.setup.get("host_init", 0.0) + max(0.0, base.setup.get("first_extra", 0.0))


def _nothing_to_price(app: Application, r: Reading, out: AppAdvice) -> AppAdvice:
    """No workload to price (nothing moves, or kernels that read host memory in place): said, and bounded."""
    out.mapping = r.how
    out.verdict = f"{app.name}: {r.how}."
    if app.strategy in IN_PLACE:
        in_place.bound_in_place(app, out)
    out.limits += explain.graphs_traced_whole(app)
    return out


def adjust(app: Application, cal: Calibration, r: Reading, idle, n_threads: int, now_s: float,
           link_bytes_per_s: float, tracer_s: float) -> Adjusted:
    """Every rule's adjustment of the reading's prices, summed: the time now and each way's predicted time, held
    within its physical bounds (``bounds``; ``tracer_s``: the tracing's own time, never removable)."""
    by_threads, overlap = threads.adjust(app, r, n_threads)
    by_lead, lead_ways, lead_words = lead.adjust(app, cal, r)
    pin = pinning.adjust(app, r)
    stalls = host_faults.adjust(app, r)
    rules = {"allocation": allocation.adjust(app, cal, r), "staging": staging.adjust(app, r), "lead": by_lead,
             "host_faults": stalls, "gpu_faults": gpu_faults.adjust(app, r, stalls.seconds),
             "pageable_copies": pageable_copies.adjust(app, r, overlap, now_s),
             "allocations_beyond": allocations_beyond.adjust(app, r, pin.seconds), "pinning": pin}
    now = r.as_made_s()
    for adj in rules.values():
        now += adj.now_s
    ranked = [p for p in r.ranked if lead_ways is None or p.strategy in lead_ways]
    priced = {p.strategy: _summed(p.whole_s, p.strategy, rules, ("lead", "allocations_beyond")) for p in ranked}
    rules["carried"], is_carried = carried.adjust(app, cal, r, idle, now, priced)
    rules["threads"] = by_threads
    order = ("lead", "allocations_beyond", "carried", "threads", "host_faults", "gpu_faults", "pinning")
    model_whole = {p.strategy: _summed(now if p is r.base else p.whole_s, p.strategy, rules, order) for p in ranked}
    b = bounds(app, r, rules, list(model_whole), link_bytes_per_s, now_s, tracer_s)
    whole = {s: now - bounded_saving(now - t, s, b, now_s) for s, t in model_whole.items()}
    # ways held to the same bound keep the calibration's order among them
    ranked = sorted(ranked, key=lambda p: (whole[p.strategy], model_whole[p.strategy]))
    return Adjusted(now, whole, model_whole, b, ranked, rules, overlap, is_carried, lead_words)


def _summed(start: float, strategy: str, rules: dict[str, Adjustment], names: tuple) -> float:
    for name in names:
        start += rules[name].ways.get(strategy, 0.0)
    return start


def rank(a: Adjusted, now_s: float, priced: float) -> list[dict]:
    """Every way's predicted time and saving, fastest first: the saving is the time now less its predicted time, its
    band the prediction's own error on a saving (a share of the time the ways price, ``priced``) either side."""
    out = []
    for p in a.ranked:
        saving = a.now - a.whole[p.strategy]
        low, high = band(saving, priced, a.bounds.removable[p.strategy])
        out.append({"strategy": p.strategy, "predicted_s": now_s - saving, "saving_s": saving,
                    "saving_low_s": low, "saving_high_s": high,
                    "model_saving_s": a.now - a.model_whole[p.strategy], "floor_s": a.bounds.floor[p.strategy],
                    "removable_s": a.bounds.removable[p.strategy], "model_whole_s": p.whole_s,
                    "model_steady_s": p.steady_s})
    return out


def choose(app: Application, r: Reading, a: Adjusted, now_s: float, priced: float) -> Choice:
    """The fastest way, or among those within the prediction's error of it the current way, else the one that
    changes least code of those whose saving clears the prediction's own error on a saving (of all of them where none
    does); a saving within that error (SAVING_ERROR of the time the ways price,
    ``priced``), or any saving where the calibration prices the program as it runs above its measured time by more
    than that (``cannot_see``), keeps the way it has.

    The tie is taken on the model's figures of the loop as it runs: several threads' iterations overlapped as the
    loop measured, not one after another (four host threads copying: priced at 1.36 s one after another, its loop
    measured 0.69 s; within 10% of the first, registering's 0.08 s saving tied with keeping pageable memory, and
    registered memory measured 15% faster)."""
    base, current, whole = r.base, r.current, a.whole
    overlapped = overlapped_s(a, r)
    level = {name: t - overlapped for name, t in whole.items()}
    tied_names = ties.tied([(p.strategy, level[p.strategy]) for p in a.ranked], th.PREDICTION_ERROR)
    tied = [p for p in a.ranked if p.strategy in tied_names]
    python = is_python(app)
    # the least change among the tied ways whose saving clears the prediction's error, where the way it has is not
    # one of them (a tied way within the error would be kept, though a faster one in the tie clears it)
    clear = [p for p in tied if a.now - whole[p.strategy] > th.SAVING_ERROR * priced]
    pool = clear if clear and current not in tied_names else tied
    pick = min(pool, key=lambda p: (p.strategy != current, ties.change_cost(p.strategy, python, current),
                                     whole[p.strategy]))
    saving = a.now - whole[pick.strategy]
    note = explain.tie_note(tied, pick, level)
    pinned_once = a.rules["pinning"].ways.get(base.strategy, 0.0) < 0
    model_now = a.now - overlapped
    unseen = cannot_see(model_now, now_s)
    kept = current is not None and (pick.strategy != current or pinned_once) \
        and (saving <= th.SAVING_ERROR * priced or unseen)
    if kept:  # do no harm: a change whose saving the prediction's own error (or its miss of the run) can explain
        note = explain.unseen_note(model_now, now_s) if unseen else _within_error_note(a, r, now_s, priced,
                                                                                        pinned_once)
        pick, saving = base, 0.0
    return Choice(pick, saving, tied, note, kept, pinned_once, unseen, model_now)


def overlapped_s(a: Adjusted, r: Reading) -> float:
    """What the model counts of the current way's steady iterations beyond the loop's host threads running them at
    once (``rules.threads``' overlap): taken off every way's time where the tie and the time now are judged."""
    return (1.0 - a.overlap) * r.base.iterations * r.base.steady_s


def cannot_see(model_now: float, now_s: float) -> bool:
    """Whether the calibration prices the program as it runs now (``model_now``, its host threads' iterations
    overlapped as measured) above its measured time by more than the prediction's own error: it prices work the
    program does not do, and no saving from its prices can be bounded (below it, the rest of the run is the
    program's own work, which every way keeps)."""
    return model_now > (1 + th.SAVING_ERROR) * now_s


def _within_error_note(a: Adjusted, r: Reading, now_s: float, priced: float, pinned_once: bool) -> str:
    """The ways predicted to save something, all within the prediction's own error: named, with the most they save."""
    saving = {p.strategy: a.now - a.whole[p.strategy] for p in a.ranked}
    names = [s for s, x in saving.items() if x > 0 and s != r.base.strategy]
    if pinned_once and saving[r.base.strategy] > 0:
        names.insert(0, f"{r.base.strategy}, page-locked once,")
    if not names:
        return f"no way is predicted faster than {r.base.strategy} as it runs"
    most = max(saving.values())
    said = (f"{', '.join(names)}: predicted to save at most {format_time(most)} ({most / priced:.1%} of "
            f"{explain.priced_words(priced, now_s)})")
    if most > th.SAVING_ERROR * priced:  # kept by the tie (its memory page-locked once): within the error of them
        return (f"{said}, but {r.base.strategy} as it runs is predicted within the prediction's own error "
                f"({th.PREDICTION_ERROR:.0%}) of the fastest: a tie, which keeps the way it has")
    return f"{said}, within the prediction's own error on a saving ({th.SAVING_ERROR:.1%} of it)"


def _change(app: Application, r: Reading, a: Adjusted, c: Choice, framework: str) -> str:
    """The chosen way's change in the program's own calls."""
    text = change_text(c.pick.strategy, r.workload, r.current, framework)
    if c.pinned_once and c.pick is r.base and not c.within_noise:
        return frameworks.change_for(framework, "pinned") or pinning.pin_once_change(app)
    if a.rules["staging"].seconds and c.pick is not r.base:
        return f"{_unstaged(app, framework)}: {text}"
    return text


def _unstaged(app: Application, framework: str) -> str:
    """How the change leaves the current way's host copies out: its bounce buffer, or the pool's buffer a framework
    copies each array through (said in the framework's call, where it has one)."""
    if not app.host_staging.pooled:
        return "copy the data's own buffers, without the bounce buffer"
    how = frameworks.change_for(framework, "unpooled")
    return "copy the data's own buffers, not through a pool's pinned buffer" + (f" ({how})" if how else "")


def _explain(app: Application, cal: Calibration, r: Reading, a: Adjusted, c: Choice, out: AppAdvice, idle,
             n_threads: int, now_s: float) -> None:
    """The advice's lines, limits and verdict."""
    rules, w, base = a.rules, r.workload, r.base
    low, high = band(c.saving, out.priced_s, a.bounds.removable[c.pick.strategy])
    out.advice.append(Advice("loop", c.pick.strategy, _change(app, r, a, c, out.framework), now_s, now_s - c.saving,
                             c.saving, tie=len(c.tied) > 1, note=c.note, saving_low_s=low, saving_high_s=high,
                             weighed_s=c.saving, must_clear=th.SAVING_ERROR))
    out.advice += flow_advice(app, cal, out.framework, out.priced_s)
    keeping = [p.strategy for p in a.ranked if host_faults.keeps_stalls(p.strategy)]
    stall_s, gpu_s = rules["host_faults"].seconds, rules["gpu_faults"].seconds
    moving = explain.Moving(rules["pinning"].seconds, rules["staging"].seconds, stall_s, gpu_s)
    out.limits += (rules["pinning"].limits + rules["staging"].limits + rules["pageable_copies"].limits
                   + host_faults.stall_limit(app, stall_s, keeping, rules["host_faults"].ways)
                   + host_faults.touches_unseen_limit(app, w, stall_s, r.one_pass)
                   + gpu_faults.gpu_stall_limit(app, base, gpu_s, keeping)
                   + explain.moving_limits(app, c.saving, r.host_now, c.pick, moving)
                   + bound_limit(c.pick.strategy, a.now - a.model_whole[c.pick.strategy], c.saving, a.bounds)
                   + explain.run_limits(app, idle, r.one_pass, a.carried)
                   + explain.setup_limit(app, out.framework, out.tracer)
                   + explain.passes_limit(w)
                   + threads.threads_limit(app, base, n_threads, a.overlap, c.saving)
                   + rules["allocations_beyond"].limits)
    if c.unseen:
        out.limits.append(explain.unseen_limit(c.model_now, now_s))
    if any(PARTS_UNMEASURED in p.notes for p in a.ranked):
        out.limits.append(Limit("parts-unmeasured", PARTS_UNMEASURED))
    out.verdict = explain.verdict(app, out, c.tied, now_s, base, c.within_noise)
