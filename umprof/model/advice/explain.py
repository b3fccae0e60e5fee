"""The advice in words (its last step): what bounds any saving, the tie, and the verdict."""

from __future__ import annotations

from typing import NamedTuple

from umprof.core.units import format_share, format_size, format_time
from umprof.model import ties
from umprof.model.advice import thresholds as th
from umprof.model.advice.changes import is_python
from umprof.model.advice.read import host_s, untouched
from umprof.model.advice.result import Advice, AppAdvice, Limit, first_setup_s, loop_s
from umprof.model.advice.rules.carried import round_trips_s
from umprof.model.application import GRAPH_NODES, Application
from umprof.model.frameworks import PROFILER_RANGE
from umprof.model.predict import Prediction
from umprof.model.workload import Workload


class Moving(NamedTuple):
    """What the trace measured of the time a change could remove, beside copies and migrations: the loop's
    page-locking, the host's copies through a bounce buffer, and the host's and kernels' fault stalls (as priced)."""
    pinning_s: float = 0.0
    staging_s: float = 0.0
    stall_s: float = 0.0
    gpu_stall_s: float = 0.0


def moving_s(app: Application, m: Moving) -> float:
    """Copies (as the program waits on them, as the bounds count them: ``Application.waited_on_copies_s``),
    migrations and the rest of what moving data takes (``m``): the kernels' faults beyond their priced time hold the
    migrations to the GPU that they wait for, so the more of the two counts, not both."""
    return (app.waited_on_copies_s + max(app.um["migration_s"], m.gpu_stall_s) + m.pinning_s + m.staging_s
            + m.stall_s)


def _moving_words(app: Application, m: Moving) -> str:
    parts = ["copies", "migrations"] + (["page-locking in the loop"] if m.pinning_s else []) \
        + (["the host's copies through its bounce buffer"] if m.staging_s else []) \
        + (["the host's stalls on faults (as priced)"] if m.stall_s else []) \
        + (["the kernels' faults beyond their priced time (as priced, the migrations within them)"]
           if m.gpu_stall_s > app.um["migration_s"] else [])
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def _where_the_rest_is(app: Application, rest: float, host_now: float, advised: Prediction) -> str:
    """Where a saving beyond the moving time comes from: the host's accesses, the loop's other steps, or both."""
    by_host = max(0.0, min(rest, host_now - host_s(advised)))
    other = rest - by_host
    host_words = (f"the host's own writes and reads of its buffers (predicted at {format_time(host_now)} over the "
                  f"run as it is, {app.strategy} memory, and {format_time(host_s(advised))} under "
                  f"{advised.strategy})")
    other_words = ("the loop's other steps (the asynchronous copy calls' time, the kernels' reads), "
                   "predicted faster under it")
    if by_host > 0 and other > th.OTHER_SHARE * rest:
        return f": {format_time(by_host)} in {host_words}, and {format_time(other)} in {other_words}"
    return f" is in {host_words if by_host > 0 else other_words}"


def moving_limits(app: Application, saving: float, host_now: float, advised: Prediction, m: Moving) -> list[Limit]:
    """What bounds any strategy's saving: where the advice saves more than the moving time (``moving_s``), whatever
    its share of the run, where the rest comes from (the host's accesses, ``host_now`` over the run as it is and
    ``advised``'s, and the loop's other steps), since the trace measured only the moving; else, where the moving is a
    small share of the run, that share. A Python program may also make new host arrays every step, whose pages fault
    in as no CUDA call: preallocated buffers reused save that too (a pycuda loop of 40 frames of 16 MiB, each in a new
    numpy array, measured 0.22 s faster with pinned buffers reused, its copies 0.13 s of the trace; H200,
    2026-12-06)."""
    if app.wall_s <= 0:
        return []
    moving = moving_s(app, m)
    share = moving / app.wall_s
    taken = f"{_moving_words(app, m)} take {format_time(moving)} of its {format_time(app.wall_s)} ({share:.0%})"
    if saving > th.BEYOND_MOVING * moving:  # however large their share: the rest is a prediction the trace cannot check
        rest = saving - moving
        return [Limit("saving-beyond-moving", f"{taken}; the rest of the predicted saving ({format_time(rest)})"
                                              f"{_where_the_rest_is(app, rest, host_now, advised)}")]
    if share < th.SMALL_MOVING_SHARE:
        fresh = (", beyond the host's own making of new arrays each step, which preallocated buffers reused do away "
                 "with and no trace shows" if is_python(app) else "")
        return [Limit("moving-bounds-saving", f"{taken}: no host-memory strategy can save much more than that{fresh}")]
    return []


def idle_untraced_s(app: Application, out: AppAdvice) -> float:
    """The GPU's idle time over the loop, less what the tracer added to it (``out.tracing_overhead_s``): the most that
    moving the host's own work off the loop's path can save."""
    loop = app.loop
    return max(0.0, loop.iterations * loop.idle_s - out.tracing_overhead_s) if loop is not None else 0.0


def host_bound_limit(app: Application, out: AppAdvice, torch_ops: bool = True) -> list[Limit]:
    """Where no change is advised to a Python program and the loop's GPU is idle past HOST_BOUND_SHARE of a steady
    iteration: the host's own work between CUDA calls paces the loop, which no host-memory change removes. Where that
    work makes the batches from data the host holds, making them once, or on the GPU from the data kept there, saves
    at most the GPU's idle time over the loop less the tracing's overhead; the trace cannot say how much of it is
    theirs. Python programs only: a compiled program's host work is read as its accesses to what it copies, and
    priced under every way already. A PyTorch program's trace that records none of torch's operators (``torch_ops``
    false) is told which trace shows those the host runs, which are priced run on the GPU."""
    loop, advice = app.loop, out.loop_advice
    if loop is None or advice is None or advice.saving_s > 0 or not is_python(app):
        return []
    steady = float(loop.per_iteration.get("wall_s", 0.0))
    if steady <= 0 or loop.idle_s <= th.HOST_BOUND_SHARE * steady:
        return []
    at_most = min(idle_untraced_s(app, out), advice.now_s)
    if at_most <= th.SAVING_ERROR * out.priced_s:  # the idle time is the tracer's, or within the prediction's error
        return []
    return [Limit("host-bound", f"its GPU is idle {format_time(loop.idle_s)} of each {format_time(steady)} step "
                                f"({loop.idle_s / steady:.0%}): the host's own work between CUDA calls paces the loop, "
                                "and no host-memory change removes it. Where that work makes the batches from data "
                                "the host holds (padding, collating, augmenting, converting lists to tensors), making "
                                "them once, or on the GPU from the data kept there, saves at most "
                                f"{format_time(at_most)} (the GPU's idle time over the loop, less the tracing's); the "
                                "trace cannot say how much of that time is theirs" + _ops_unseen(out, torch_ops))]


def _ops_unseen(out: AppAdvice, torch_ops: bool) -> str:
    """For a PyTorch program whose trace records none of torch's operators: the trace that shows those its host runs."""
    if torch_ops or out.framework != "pytorch":
        return ""
    return ("; a torch.profiler trace (`activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]`), or nsys's with "
            "`nsys profile --pytorch=autograd-nvtx` (what `umprof advise -- CMD` traces a PyTorch program with), shows "
            "which of torch's operators the host runs there, and prices running them on the GPU")


def run_limits(app: Application, idle, one_pass: bool, carried: bool) -> list[Limit]:
    """What the trace says of the run as a whole: a loop whose host does not touch what it copies, CUDA graph
    launches traced whole, no loop found."""
    out = host_untouched(app, idle, one_pass, carried) + graphs_traced_whole(app)
    if app.loop is None:
        out.append(Limit("no-loop", "no loop was found in its CUDA calls: the run is read as one iteration"))
    return out


def setup_limit(app: Application, framework: str, tracer: str) -> list[Limit]:
    """Where the first iteration's setup (``result.first_setup_s``) is more than SETUP_SHARE of the loop's traced
    time: that it is, and how to trace the steady loop alone (``tracer``: "nsys" or "kineto")."""
    setup, traced = first_setup_s(app.loop), loop_s(app)
    if not traced or setup <= th.SETUP_SHARE * traced:
        return []
    if tracer == "kineto":
        how = ("profile the steps after the first ones: `torch.profiler.profile(..., schedule=torch.profiler."
               "schedule(wait=1, warmup=1, active=5))`, with `prof.step()` at each step's end")
    else:
        how = (f"{PROFILER_RANGE.get(framework, PROFILER_RANGE['cuda'])} around it, and `nsys profile "
               "--capture-range=cudaProfilerApi ...`")
    return [Limit("setup-in-loop", f"its first iteration takes {format_time(setup)} more than a steady one with the "
                                   f"GPU no busier ({format_share(setup / traced)} of the loop's {format_time(traced)} "
                                   "traced): setup (CUDA's and its libraries' first use, its data made or loaded), "
                                   "set aside where a saving is weighed against the prediction's error, but a trace "
                                   f"of the steady loop alone prices it better: {how}")]


def host_untouched(app: Application, idle: tuple[float, float] | None, one_pass: bool,
                   carried: bool) -> list[Limit]:
    """Where the loop's one host thread spends far less time outside its CUDA calls than writing and reading
    the bytes it moves would take (``untouched``): a line saying so (data copied again unchanged, an
    asynchronous loop whose host touches its results after it), how it was priced (``one_pass``: as one pass
    over everything it copies), and, read as its iterations, what copying its input once would save at most
    (``_copied_once``; read as one pass, its copies are of data written once, each part its own); where it was read
    as one dataset carried out and back (``carried``: ``round_trip``), that the ways that keep pages on the GPU were
    priced moving it once; else none."""
    if not untouched(idle):
        return []
    own, priced = idle
    if carried:
        per = app.loop.per_iteration
        text = (f"{_idle_words(own, priced)}, and each iteration copies out as much as it copies in "
                f"({format_size(per['h2d_bytes'])} in, {format_size(per['d2h_bytes'])} out): read as one dataset that "
                "the loop carries out and back unchanged (passes over data too large for the GPU, as written), which "
                "managed memory would move once each way: so the ways that keep its pages on the GPU are priced, and "
                f"the copy ways with the program's copies as they are; copied once, its copies would take at most "
                f"{format_time(round_trips_s(app))} less, where it is one dataset")
        return [Limit("dataset-carried", text)]
    if one_pass:
        text = (f"{_idle_words(own, priced)}: its data is written before the loop and read after it, so the run is "
                "priced as one pass over everything it copies; data copied again unchanged is better copied once")
        return [Limit("read-as-one-pass", text)]
    text = (f"{_idle_words(own, priced, ', as the prediction assumes it does,')}: it does not touch them all every "
            "iteration (data copied again unchanged, or results read after the loop), so the savings may differ; data "
            f"copied again unchanged is better copied once{copied_once(app)}")
    return [Limit("host-untouched", text)]


def _idle_words(own: float, priced: float, assumed: str = "") -> str:
    """How the loop's host thread spends far less time outside its CUDA calls (``own``) than touching the bytes it
    moves would take (``priced``), in words; ``assumed``: a clause on that touching."""
    return (f"its loop's host thread spends {format_time(own)} an iteration outside CUDA calls, where writing and "
            f"reading the bytes it moves{assumed} would take {format_time(priced)} at the calibration's rates")


def copied_once(app: Application) -> str:
    """What copying the loop's input once, before it, would save at most, as the trace measured it: its copies
    in after the first iteration (the steady iteration's, times the iterations after the first); a clause
    (empty where it copies nothing in). At most: copies that overlap kernels or other copies take less than
    their time from the run. Which copies carry unchanged data the trace cannot say."""
    loop = app.loop
    each = float(loop.per_iteration.get("h2d_s", 0.0)) if loop is not None else 0.0
    if each <= 0 or loop.iterations < 2:
        return ""
    b = float(loop.per_iteration.get("h2d_bytes", 0.0))
    return (f" (its copies in, {format_size(b)} an iteration, took {format_time(each)} an iteration as traced: "
            f"copied once before the loop, at most {format_time(each * (loop.iterations - 1))} less over its "
            f"{loop.iterations} iterations, where none of it changes between them)")


def graphs_traced_whole(app: Application) -> list[Limit]:
    """What the trace could not count: CUDA graph launches traced whole (nsys's default), a line, or none."""
    if not app.graph_launches:
        return []
    text = (f"{app.graph_launches} CUDA graph launches were traced whole: the copies and kernels inside them are not "
            f"counted here; {GRAPH_NODES}")
    return [Limit("graphs-traced-whole", text)]


def passes_limit(w: Workload) -> list[Limit]:
    """What reading the kernels' launches as passes over the copied data assumes (``read.kernel_passes``)."""
    if w.reuse <= 1:
        return []
    text = (f"its kernels are read as {w.reuse} passes an iteration over what it copies in: the ways that leave the "
            f"data in host memory are priced as reading it across the link {w.reuse} times; where some launches work "
            "on buffers of their own on the GPU, those ways read it fewer times than priced")
    return [Limit("kernel-passes", text)]


def tie_note(tied: list[Prediction], pick: Prediction, whole: dict) -> str:
    if len(tied) < 2:
        return ""
    names = ", ".join(p.strategy for p in tied)
    first, last = whole[tied[0].strategy], whole[tied[-1].strategy]
    spread = last / first - 1 if first > 0 else 0.0
    fastest = tied[0].strategy
    # what the least change gives up, as predicted: on every judged run the fastest prediction measured within
    # 5% of the fastest way a little more often than the tie's pick (benchmarks/apps/tie_policy.py)
    given_up = (f" ({fastest}, predicted fastest, saves {format_time(whole[pick.strategy] - first)} more)"
                if pick.strategy != fastest and whole[pick.strategy] > first else "")
    return (f"{names}: {ties.within(spread, ' of each other')}, predicted (under the prediction's own error, "
            f"{th.PREDICTION_ERROR:.0%}); {pick.strategy} changes the least code{given_up}")


def verdict(app: Application, out: AppAdvice, tied: list[Prediction], now_s: float, base: Prediction,
            within_noise: bool) -> str:
    """One paragraph: what it does now, its loop as read, and the advice (or why to keep it)."""
    current, loop = app.strategy, out.loop_advice
    already = "It already uses the strategy predicted fastest" \
        + (" or one within the prediction's error of it" if len(tied) > 1 else "")
    lines = [f"{app.name} on {app.gpu}: {current} now ({app.strategy_why})."]
    if app.loop is not None:
        lines.append(f"Its loop: {app.loop.iterations} iterations of {format_time(app.loop.steady_s)} "
                     f"({_measured(out, now_s)}); read as {out.workload.describe()}.")
    if within_noise:
        lines.append(f"{loop.note}: keep it.")
    elif loop.strategy == current and loop.saving_s > 0:  # the way it has, its memory page-locked once
        lines.append(f"{already}, but page-locks and releases its memory every iteration: keep {current}, pinned once, "
                     f"predicted {format_time(loop.predicted_s)} instead of {format_time(now_s)} (saves "
                     f"{format_time(loop.saving_s)}, {loop.saving_s / now_s:.0%}).")
    elif loop.strategy == current:
        lines.append(f"{already}: keep it.")
    else:
        lines.append(f"Use {loop.strategy}: predicted {format_time(loop.predicted_s)} instead of {format_time(now_s)} "
                     f"(saves {format_time(loop.saving_s)}, {format_time(loop.saving_low_s)}-"
                     f"{format_time(loop.saving_high_s)}, {loop.saving_s / now_s:.0%})"
                     + (f"; a tie: {loop.note}" if loop.tie else "") + ".")
    model_now = base.whole_s
    if model_now > 0 and abs(model_now / now_s - 1) > th.MODEL_MISS and base.strategy == current:
        lines.append(f"(The calibration predicts its loop as it runs now at {format_time(model_now)} against "
                     f"{format_time(now_s)} measured: savings are its differences, the rest of the run is its own.)")
    return " ".join(lines)


def priced_words(priced: float, now_s: float) -> str:
    """What a saving is a share of, in words: the loop, or the part of it the ways price where its first iteration
    held setup of the program's own, or its last an ending (``result.priced_s``)."""
    return "the loop" if priced >= now_s else f"the {format_time(priced)} of the loop the ways price"


def priced_sentence(priced: float, now_s: float) -> str:
    """The verdict's sentence where the program's own setup, left out of what the prediction's error is a share of,
    is what lets a change be advised."""
    return (f"Its {format_time(now_s - priced)} of setup and ending (its first iteration's time beyond a steady one, "
            f"and what follows its last) is the program's own, which no way changes: the prediction's own error is a "
            f"share of the {format_time(priced)} the ways price.")


def unseen_note(model_now: float, now_s: float) -> str:
    """The advice's note where the calibration cannot see the program well (``pipeline.cannot_see``)."""
    return (f"the calibration prices the program as it runs now at {format_time(model_now)}, "
            f"{model_now / now_s - 1:.0%} above the {format_time(now_s)} measured: beyond the prediction's own error "
            f"({th.SAVING_ERROR:.1%}), it cannot see this program well enough to bound a saving")


def unseen_limit(model_now: float, now_s: float) -> Limit:
    """The limit said where the calibration cannot see the program well: no change is advised."""
    return Limit("cannot-see-program", unseen_note(model_now, now_s) + "; no change is advised from its prices")


def _measured(out: AppAdvice, now_s: float) -> str:
    """The loop's time now in words: as traced, and untraced where the tracing's overhead was taken out."""
    if not out.tracing_overhead_s:
        return f"{format_time(now_s)} measured"
    how = "measured untraced" if out.overhead_from == "wall" else "the tracing's overhead estimated"
    return f"{format_time(out.traced_s)} traced, {format_time(now_s)} untraced, {how}"


# limits that bound only a change of host memory: a change the ways do not price (packing, a framework's choice)
# removes time they do not count (the host's calls and waits, a data loader's work)
WAYS_ONLY = ("moving-bounds-saving",)


def beats_way(way: Advice, low_s: float) -> bool:
    """Whether a change umprof's ways do not price, the low end of its saving's band ``low_s``, is surer than the
    loop's advice (``way``): its band's low end is above the way's (nothing, where the way saves nothing)."""
    return low_s > (way.saving_low_s if way.saving_s > 0 else 0.0)


def advise_instead(app: Application, out: AppAdvice, chosen: Advice, why: Limit | None = None,
                   condition: str = "") -> None:
    """The loop's advice replaced by a change umprof's ways do not price (``chosen``, its ``idiom`` the change's
    code): the verdict says it (``condition`` first, where its saving rests on one) beside what the ways alone
    would do; the limits that bound only the ways are left out, and ``why`` said where given."""
    way = out.loop_advice
    out.advice[out.advice.index(way)] = chosen
    out.limits = [x for x in out.limits if getattr(x, "code", "") not in WAYS_ONLY]
    if why is not None:
        out.limits.append(why)
    head = f"{app.name} on {app.gpu}: {app.strategy} now ({app.strategy_why})."
    cond = f"Where this holds ({condition}): " if condition else ""
    out.verdict = (f"{head} {cond}{chosen.change} ({chosen.idiom}): predicted {format_time(chosen.predicted_s)} "
                   f"instead of {format_time(chosen.now_s)} (saves {format_time(chosen.saving_s)}, "
                   f"{format_time(chosen.saving_low_s)}-{format_time(chosen.saving_high_s)}, "
                   f"{chosen.saving_s / chosen.now_s:.0%}); umprof's ways alone: "
                   + (f"{way.strategy}, saves {format_time(way.saving_s)}." if way.saving_s > 0 else "keep it."))
