"""An application's loop, read from its trace (:func:`find_loop`): the repeating pattern of the CUDA calls its host
thread makes, and what each iteration does.

* **the period**: each call is named by what it is and, for a copy, its direction and bytes; calls made once or
  twice are left out, and so are calls that only ask the driver something (cudaGetDevice, cuKernelGetName,
  cudaStreamIsCapturing: a framework makes a varying number of them). The period is the shortest that repeats over
  the run (else over its later half, then its earlier one: a run of two phases; then its middle) and holds every
  call that recurs; a loop found in part of the run runs on over the periods around it that repeat its calls.
  The periods tried are the run's length over each call's count, times 1 to 64, and over each divisor of it (a call
  made hundreds of times an iteration). Failing those, the loop is the longest stretch of the run that repeats
  itself one period later (a dozen steps between a long setup and a long ending), where it holds at least half the
  run's calls. Failing those too, all of it again with the periods read from how far apart each call recurs,
  which a setup made of the loop's own calls does not shift. Where no period holds, the copies are named by their
  direction alone: batches padded to their own length each step copy in sizes that differ from step to step.
* **the iterations**: cut at one call of each period, one that moves data or launches work; each gets its copies,
  kernels, unified-memory migrations and wall time. The steady iteration is their median (their mean where they
  move very different amounts), the first kept apart.
* **the lead**: a loop of copies before it (a dataset loaded chunk by chunk, then iterated over), found among the
  calls ahead of its first iteration.
* **the inner loop**: where the iterations come in regular groups (their calls differ every k-th: an epoch's last,
  smaller batch, a request's input and output around its layers), the loop is the groups', the shorter one its
  ``inner``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import pandas as pd

from umprof.model.directions import COPY_DIRECTIONS, UM_DIRECTIONS
from umprof.model.intervals import covered, union

PERIOD_MATCH = 0.9  # the share of a loop's calls that must repeat one period later
# what makes an iteration a loop's: GPU work in it (copies, kernels, migrations)
GPU_WORK = ["h2d_copies", "d2h_copies", "kernels", "um_h2d_bytes", "um_d2h_bytes"]
# the share of a run's calls at each end set aside where its loop is searched in its middle: a framework's first
# iteration (events made, libraries loaded) and last (a checksum read) make calls that, counted over a short loop,
# pass for calls made every iteration
EDGE_SHARE = 0.1
MAX_PERIOD_MULTIPLE = 64  # periods tried: the run's length over a call's count, times 1..this
# a loop found as the longest stretch that repeats (``_stretch``) repeats at least this many periods (two like
# iterations are a pair, not a loop) and holds at least this share of the run's calls (a shorter repeat is a burst
# of like calls, a model's parameters copied one by one, not the program's loop)
STRETCH_ITERATIONS = 3
STRETCH_SHARE = 0.5  # no less: ``_repeats_near_middle`` skips periods by a stretch of half the run holding the middle
# a call's distance to its k-th next one is a period tried (``_spaced_periods``) where this share of those distances
# is one value: a loop over half the run or more makes it so
SPACED_SHARE = 0.5
# and at least this many of them: a few like gaps (three allocations, two copies and their frees in a sample's run)
# are a coincidence, not a loop
SPACED_LEAST = 8
# where a candidate period's windows are looked at, as shares of the loop: no round fractions, which a
# loop of a round number of iterations would meet at its iterations' edges (where every call is near)
WINDOWS = (0.113, 0.287, 0.431, 0.509, 0.673, 0.811, 0.947)


@dataclass
class Loop:
    """An application's loop: how many iterations, and what each does (steady: the median)."""

    iterations: int
    period: int  # CUDA calls per iteration
    anchor: str  # the call each iteration is cut at
    first_s: float  # the first iteration's wall time, with what came before it
    steady_s: float  # the median iteration's wall time
    # h2d_bytes, d2h_bytes, um_h2d_bytes, um_d2h_bytes, kernel_s, h2d_s, d2h_s, copies, busy_s, calls_s
    per_iteration: dict
    first: dict  # the same, for the first iteration
    largest: dict  # the largest of each over the iterations (a first iteration that copies everything)
    span: tuple[int, int]  # ns: the loop's start and end on the trace's clock
    # a loop of copies run before it (a load phase: a dataset copied in chunk by chunk, then iterated over), read on
    # its own; ``first`` and ``largest`` are then of what follows it. None where there is none
    lead: "Loop | None" = None
    # the loop inside it, where its iterations are regular groups of a shorter loop's (batches in epochs, layers in
    # a model's forward pass, blocks in passes over an image): that loop over the whole run. None where there is none
    inner: "Loop | None" = None
    # the same as ``first``, for the last iteration, with what came after it up to the run's last call (a program's
    # results written, its libraries unloaded at exit); empty for a loop of one iteration
    last: dict = field(default_factory=dict)
    after_gpu_s: float = 0.0  # from the run's last GPU work (copies, migrations, kernels) to the loop's end

    @property
    def idle_s(self) -> float:
        """A steady iteration's time its GPU was not busy: the host's own work there."""
        return max(float(self.per_iteration["wall_s"]) - float(self.per_iteration["busy_s"]), 0.0)


# A call that asks the driver something and does no work (cudaGetDevice, cudaGetLastError, cuKernelGetName,
# cuGetProcAddress, cuCtxGetCurrent, cudaStreamIsCapturing, cudaEventQuery): a framework makes a varying number of
# them an iteration (PyTorch's device guards, its caching allocator's capture checks), so the period is searched
# without them, and none cuts a loop.
QUERY_CALL = re.compile(r"^cu(?:da)?\w*?(?:Get|Peek|Query|IsCapturing)")
# A call that moves data or launches work on the GPU: what a loop's iterations are cut at, where its window has one.
WORK_CALL = re.compile(r"Memcpy|Memset|Launch|Prefetch")
SETUP_COUNT = 3  # calls made fewer times than this are setup, not a loop's
# A call that the loop's iterations make this share fewer times than its other calls is made by some iterations
# only (a copy of 16 MiB where each epoch's last batch is smaller), and cut at it, those iterations would join the
# next: it cuts no loop.
ANCHOR_SHORT = 0.01
# of a loop's odd iterations, at most this share of the regular ones may fall off their interval and the rest still
# be read as an outer loop's edges: one-offs, not a pattern
ONE_OFF_SHARE = 0.5
# An iteration this many times the median's wall time, at a regular interval, ends an outer loop's iteration (an
# epoch's first batch waits for its data loader's workers to start) as a different set of calls does.
OUTER_SLOW = 3.0
# whole groups (of as many iterations as the gap between odd ones) an outer loop needs: one is a gap, not a pattern
MIN_GROUPS = 2


class Activity(NamedTuple):
    """What a loop is read from: the process's CUDA calls, and its copies and kernels, each with when the host issued
    it (``call_start``)."""

    calls: pd.DataFrame
    copies: pd.DataFrame
    kernels: pd.DataFrame


class _Iterations(NamedTuple):
    """A loop's iterations: their edges (ns, one more than them) and what each does (``_per_iteration``'s rows)."""

    edges: np.ndarray
    per: pd.DataFrame


class _Tokens(NamedTuple):
    """The calls of the thread that makes most of them (``calls``), each as a code (``codes``) of what it is
    (``labels``: its name, and for a copy its direction and bytes)."""

    calls: pd.DataFrame
    codes: np.ndarray
    labels: list


def _tokens(calls: pd.DataFrame, copies: pd.DataFrame, sized: bool = True) -> _Tokens:
    """The calls of the thread that makes most of them as ``_Tokens``; ``sized``: a copy's size part of its label
    (else its direction alone)."""
    busiest = calls["tid"].value_counts()
    mine = calls[calls["tid"] == busiest.index[0]] if len(busiest) else calls  # no thread named: all one thread
    what = copies.dropna(subset=["correlation"]).drop_duplicates("correlation").set_index("correlation")
    corr = mine["correlation"]
    direction = corr.map(what["direction"]).astype(object).fillna("") if len(what) else pd.Series("", index=mine.index)
    nbytes = corr.map(what["bytes"]).fillna(-1).astype(np.int64) if len(what) and sized \
        else pd.Series(-1, index=mine.index)
    # one label a distinct call, direction and size, not one a call: each part numbered, the numbers combined
    parts = [pd.factorize(col) for col in (mine["name"], direction, nbytes)]
    combined = np.zeros(len(mine), np.int64)
    for codes, uniques in parts:
        combined = combined * len(uniques) + codes
    codes, distinct = pd.factorize(combined)
    labels = []
    for key in distinct:
        d, b = divmod(int(key), len(parts[2][1]))
        n, d = divmod(d, len(parts[1][1]))
        name, way = str(parts[0][1][n]), str(parts[1][1][d])
        size = int(parts[2][1][b])
        labels.append(name + (f":{way}" if way else "") + (f":{size}" if way and size >= 0 else ""))
    return _Tokens(mine, codes.astype(np.int64), labels)


def find_period(codes: np.ndarray, periods: list[int] | None = None) -> tuple[int, int, int] | None:
    """The loop in a sequence of call codes: ``(period, first, last)``, the shortest period that
    PERIOD_MATCH of the calls between ``first`` and ``last`` (the span of the calls that recur about
    once an iteration or more) equal one period later, and whose windows each hold every such call;
    None if there is none. Calls made once or twice (setup) are the caller's to leave out. ``periods``: those
    tried, shortest first (else ``_candidate_periods``)."""
    if len(codes) < 4:
        return None
    counts = np.bincount(codes)
    for p in _tried(codes, periods):
        held = _holds(codes, p, counts)
        if held is not None:
            return p, *held
    return None


def _holds(codes: np.ndarray, p: int, counts: np.ndarray | None = None) -> tuple[int, int] | None:
    """Whether period ``p`` holds in ``codes`` (see ``find_period``; ``counts``: their ``np.bincount``, where the
    caller has it): the span it holds over, ``(first, last)``, or None."""
    n = len(codes)
    counts = np.bincount(codes) if counts is None else counts
    recurring = np.flatnonzero(counts >= 2)
    wanted = recurring[counts[recurring] >= n / p / 2]
    if not len(wanted):
        return None
    is_wanted = np.zeros(len(counts), bool)
    is_wanted[wanted] = True
    where = np.flatnonzero(is_wanted[codes])
    first, last = int(where[0]), int(where[-1]) + 1
    span = codes[first:last]
    if len(span) < 2 * p or np.mean(span[:-p] == span[p:]) < PERIOD_MATCH:
        return None
    starts = [int(f * (len(span) - p)) for f in WINDOWS]
    if all(len(np.intersect1d(wanted, span[i:i + p])) == len(wanted) for i in starts):
        return first, last
    return None


def _tried(codes: np.ndarray, periods: list[int] | None) -> list[int]:
    """The periods tried in ``codes``: ``periods`` (those of at most half of it), else ``_candidate_periods``."""
    return _candidate_periods(codes) if periods is None else [p for p in periods if p <= len(codes) // 2]


def _spaced_periods(codes: np.ndarray) -> list[int]:
    """Periods read from how far apart each call recurs, shortest first: for a call made k times an iteration (k up
    to MAX_PERIOD_MULTIPLE), the distance from each of its calls to its k-th next one, where SPACED_SHARE of those
    distances are one value. Unlike ``_candidate_periods``, no setup or ending shifts them: 10 iterations of 263 calls
    after a setup of 285 make a run of 2915, over which no call's count, times 1 to MAX_PERIOD_MULTIPLE, gives 263."""
    order = np.argsort(codes, kind="stable")
    bounds = np.flatnonzero(np.diff(codes[order])) + 1
    found = set()
    for where in np.split(order, bounds):
        for k in range(1, min(MAX_PERIOD_MULTIPLE, len(where) - SPACED_LEAST) + 1):
            gaps = where[k:] - where[:-k]
            gap = int(np.median(gaps))
            same = np.count_nonzero(gaps == gap)
            if same >= SPACED_SHARE * len(gaps) and same >= SPACED_LEAST:
                found.add(gap)
    return sorted(p for p in found if 1 <= p <= len(codes) // 2)


def _candidate_periods(codes: np.ndarray) -> list[int]:
    """The periods a loop in ``codes`` may have, shortest first, at most half the run: the run's length over each
    recurring call's count, times 1 to MAX_PERIOD_MULTIPLE (a call made k times an iteration); and the run's length
    over each divisor of a call's count (a call made exactly k times every iteration, k beyond MAX_PERIOD_MULTIPLE:
    a model's 256 parameters copied one by one each step)."""
    n = len(codes)
    counts = np.bincount(codes) if n else np.zeros(0, np.int64)
    candidates = set()
    for c in np.unique(counts[counts >= 2]).tolist():
        base = n / c
        for k in range(1, MAX_PERIOD_MULTIPLE + 1):
            candidates.add(int(round(base * k)))
        # only where the multiples above fall short: a call made more than MAX_PERIOD_MULTIPLE times an iteration
        candidates.update(int(round(n / i)) for i in _divisors(c) if 2 <= i < c / MAX_PERIOD_MULTIPLE)
    return sorted(p for p in candidates if 1 <= p <= n // 2)


def _divisors(c: int) -> list[int]:
    """Every divisor of ``c`` (a positive integer)."""
    small = [i for i in range(1, int(c ** 0.5) + 1) if c % i == 0]
    return small + [c // i for i in small if c // i != i]


def _stretch(codes: np.ndarray, periods: list[int] | None = None) -> tuple[int, int, int] | None:
    """The loop in the longest stretch of ``codes`` that repeats itself one period later, for a short loop between a
    long setup and ending (a dozen training steps after a model is built and checked): ``(period, first, last)``
    as ``find_period`` gives it over that stretch. Of the candidate periods, the stretch is the longest that
    PERIOD_MATCH of every period-long window repeats, at least STRETCH_ITERATIONS periods and STRETCH_SHARE of the
    run; a period's multiples repeat over nearly the same stretch, so the shortest period within a period of the
    longest stretch is taken. ``periods``: those tried (else ``_candidate_periods``)."""
    n = len(codes)
    found = []  # (first, last, period)
    for p in _tried(codes, periods):
        if STRETCH_ITERATIONS * p > n:
            break
        if not _repeats_near_middle(codes, p):
            continue
        first, last = _longest_run(_repeating_windows(codes, p, 0, n - p))
        if last > first:
            found.append((first, last - 1 + 2 * p, p))
    found = [f for f in found if f[1] - f[0] >= max(STRETCH_ITERATIONS * f[2], STRETCH_SHARE * n)]
    if not found:
        return None
    longest = max(f[1] - f[0] for f in found)
    first, last, p = min((f for f in found if f[1] - f[0] >= longest - f[2]), key=lambda f: f[2])
    if last - first >= (STRETCH_ITERATIONS + 2) * p:  # its edges may hold a setup's or an ending's calls still
        first, last = first + p, last - p
    stretch = codes[first:last]
    counts = np.bincount(stretch)
    for d in sorted(_divisors(p)):  # the period, where a divisor of p repeats too
        held = _holds(stretch, d, counts)
        if held is not None:
            return (d, *_extended(codes, d, held[0] + first, held[1] + first))
    return None


def _repeats_near_middle(codes: np.ndarray, p: int) -> bool:
    """Whether a period-long window starting within 2p before the run's middle repeats one period later
    (PERIOD_MATCH of it): a stretch of half the run or more holds one (it starts at or before the middle and its
    windows run to 2p before its end, at or after the middle), so a period without one need not be searched."""
    mid = len(codes) // 2
    lo, hi = max(0, mid - 2 * p), min(mid + p, len(codes) - p)
    return hi - lo >= p and bool(_repeating_windows(codes, p, lo, hi).any())


def _repeating_windows(codes: np.ndarray, p: int, lo: int, hi: int) -> np.ndarray:
    """For each period-long window of calls starting at ``lo`` and after, whose calls up to ``hi`` (at most the run's
    length less p) are compared with those one period later: whether PERIOD_MATCH of it repeats there."""
    repeats = np.concatenate([[0], np.cumsum(codes[lo:hi] == codes[lo + p:hi + p])])
    return (repeats[p:] - repeats[:-p]) >= PERIOD_MATCH * p


def _longest_run(flags: np.ndarray) -> tuple[int, int]:
    """The longest run of True in ``flags``: ``(start, end)``, end exclusive; (0, 0) where there is none."""
    edges = np.diff(np.concatenate([[0], flags.astype(np.int8), [0]]))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    if not len(starts):
        return 0, 0
    i = int(np.argmax(ends - starts))
    return int(starts[i]), int(ends[i])


def _recurring(codes: np.ndarray) -> np.ndarray:
    """Which calls may be a loop's: those made SETUP_COUNT times or more, less those made only in one burst, one
    after another (streams or events created before a loop, destroyed after it), where calls that recur apart remain:
    a burst is setup, and counted among a loop's calls it passes for one (six streams created before a loop of eight
    iterations of four calls had made its period look twice as long). A run made of one call alone keeps it."""
    counts = np.bincount(codes)
    keep = counts[codes] >= SETUP_COUNT
    pos = np.flatnonzero(keep)
    kept = codes[pos]
    order = np.arange(len(kept))
    first = np.full(len(counts), len(kept))
    np.minimum.at(first, kept, order)
    last = np.full(len(counts), -1)
    np.maximum.at(last, kept, order)
    spread = last - first + 1 > counts  # between its first and last, other calls: it recurs apart
    if spread[kept].any():
        keep[pos] = spread[kept]
    return keep


def _cut_offsets(span: np.ndarray, p: int, labels: list) -> tuple[int, np.ndarray]:
    """The call a loop's iterations are cut at (``_anchor``, read in a window of one period in the loop's middle) and
    where in ``span`` they are cut: a call made k times an iteration cuts at every k-th."""
    middle = (len(span) - p) // 2
    window = span[middle:middle + p]
    anchor = _anchor(span, window, labels)
    return anchor, np.flatnonzero(span == anchor)[::int((window == anchor).sum())]


def _anchor(span: np.ndarray, window: np.ndarray, labels: list) -> int:
    """The call a loop's iterations are cut at: of the calls in ``window`` (one period of ``span``), one that moves
    data or launches work (WORK_CALL) where there is one, and of those one that every iteration makes
    (``ANCHOR_SHORT``), the least made over the loop, the earliest in the window of those."""
    counts = np.bincount(span, minlength=len(labels))
    present = list(dict.fromkeys(window.tolist()))  # in the order of their first position in the window
    pool = [c for c in present if WORK_CALL.search(labels[c].split(":", 1)[0])] or present
    made = {c: counts[c] / int((window == c).sum()) for c in pool}  # the iterations that make each
    typical = float(np.median(list(made.values())))
    pool = [c for c in pool if made[c] >= (1 - ANCHOR_SHORT) * typical]
    return min(pool, key=lambda c: counts[c])  # min keeps the earliest of equals


def _loop_period(codes: np.ndarray) -> tuple[int, int, int] | None:
    """``_period_in_parts`` with the periods the run's length over its calls' counts gives, else with those how far
    apart its calls recur gives (``_spaced_periods``)."""
    found = _period_in_parts(codes)
    if found is None:
        spaced = _spaced_periods(codes)
        found = _period_in_parts(codes, spaced) if spaced else None
    return found


def _period_in_parts(codes: np.ndarray, periods: list[int] | None = None) -> tuple[int, int, int] | None:
    """``find_period`` over the run, else over its later half, then its earlier one, then its middle, else its longest
    repeating stretch (``_stretch``): a run of two phases (a warm-up loop, then the loop it times) repeats in each
    half, the later one's the loop an application usually times; a short loop whose first and last iterations make
    calls of their own (a framework's libraries loaded, a checksum read) repeats in its middle (EDGE_SHARE).
    ``periods``: those tried (else each part's ``_candidate_periods``)."""
    whole = _tried(codes, periods)  # the whole run's, for find_period and _stretch alike
    found = find_period(codes, whole)
    n, edge = len(codes), int(len(codes) * EDGE_SHARE)
    parts = ((n // 2, n), (0, n // 2), (edge, n - edge))
    for lo, hi in parts if found is None else ():
        part = find_period(codes[lo:hi], periods)
        if part is not None:
            return (part[0], *_extended(codes, part[0], part[1] + lo, part[2] + lo))
    return found if found is not None else _stretch(codes, whole)


def _extended(codes: np.ndarray, p: int, first: int, last: int) -> tuple[int, int]:
    """A loop found in part of the run, grown by whole periods at each end while the calls there repeat its own
    (PERIOD_MATCH of them): the part only cuts where the search looked, not where the loop starts or ends (a training
    loop of 46 like steps after a first one of a thousand calls of its own was found in the run's later half, 26
    steps, its earlier ones read as a loop before it)."""
    while first >= p and np.mean(codes[first - p:first] == codes[first:first + p]) >= PERIOD_MATCH:
        first -= p
    while last + p <= len(codes) and np.mean(codes[last:last + p] == codes[last - p:last]) >= PERIOD_MATCH:
        last += p
    return first, last


def find_loop(calls: pd.DataFrame, copies: pd.DataFrame, kernels: pd.DataFrame, with_lead: bool = True) -> Loop | None:
    """The application's loop (see the module's docstring), or None where its calls do not repeat; ``with_lead``:
    with the loop of copies run before it, where there is one (``Loop.lead``). Where the shortest loop's iterations
    come in regular groups (batches in epochs, layers in requests), the loop is the groups', the shortest one its
    ``inner``."""
    if calls.empty:
        return None
    t = _tokens(calls, copies)
    keep, where, seq, found = _searched(t)
    if found is None:  # copies whose size changes step by step (batches padded to their own length): by direction
        t = _tokens(calls, copies, sized=False)
        keep, where, seq, found = _searched(t)
    if found is None:
        return None
    p, first, last = found
    anchor, offsets = _cut_offsets(seq[first:last], p, t.labels)
    cut_at = first + offsets
    if len(cut_at) < 2:
        return None
    starts = t.calls["start"].to_numpy()
    activity = Activity(calls, copies, kernels)
    edges = _edges(starts[where[cut_at]], activity)
    per = _per_iteration(edges, activity)
    # whether the GPU works in half its iterations: the first counts where there are only two (``_loop_of`` prices
    # such a loop by its second alone)
    steady = per.iloc[1:] if len(per) > 2 else per
    if (steady[GPU_WORK].sum(axis=1) > 0).mean() < 0.5:
        # calls repeated in its setup (streams, events created one by one), the GPU's work after the last
        return None
    # calls an iteration, the queries among them: what the loop's kept calls between its first and last cut make
    kept = np.flatnonzero(keep)
    period = int(round((np.searchsorted(kept, where[cut_at[-1]]) - np.searchsorted(kept, where[cut_at[0]]))
                       / (len(cut_at) - 1)))
    # a loop before it ends a period before the first cut: the first iteration's calls ahead of its cut are its own
    ahead = int(starts[where[max(0, cut_at[0] - p + 1)]])
    lead = _lead_loop(ahead, activity) if with_lead else None
    ahead = ahead if lead is not None else None
    iterations = _Iterations(edges, per)
    loop = _loop_of(iterations, period, t.labels[anchor], ahead, activity)
    # where its iterations come in regular groups, the loop is the groups' (a pass over one dataset, an epoch, a
    # request), the shorter one inside it
    outer = _outer_loop(seq, np.concatenate([cut_at, [last]]), iterations, loop, ahead, activity)
    if outer is not None:
        outer.inner, loop = loop, outer
    loop.lead = lead
    return loop


def _searched(t: _Tokens) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, int, int] | None]:
    """The calls a loop may be made of (``_recurring``: ``keep``, over ``t``'s calls), those the period is searched
    on, less queries (``where``: their positions in ``t.calls``; ``seq``: their codes), and the period found there
    (``_loop_period``), or None."""
    keep = _recurring(t.codes)
    query = np.array([bool(QUERY_CALL.match(label)) for label in t.labels], dtype=bool)
    where = np.flatnonzero(keep & ~query[t.codes])
    seq = t.codes[where]
    return keep, where, seq, _loop_period(seq) if len(seq) >= 4 else None


def _edges(cuts: np.ndarray, activity: Activity) -> np.ndarray:
    """The iterations' edges (ns) from the times the loop is cut at: the first iteration keeps what came before it
    (from the first call on), the last runs to the end of the last call or GPU work."""
    calls, copies, kernels = activity
    begin = int(calls["start"].min())
    end = int(max(calls["end"].max(), copies["end"].max() if len(copies) else 0,
                  kernels["end"].max() if len(kernels) else 0))
    return np.concatenate([[begin], cuts[1:], [end]])


def _loop_of(iterations: _Iterations, period: int, anchor: str, ahead: int | None, activity: Activity) -> Loop:
    """The Loop of the ``iterations``, its steady iteration their typical one; ``ahead``: where a loop before it ended
    (its first iteration is then what follows that)."""
    edges, per = iterations
    steady = per.iloc[1:] if len(per) > 1 else per  # not the first, which holds what came before the loop
    med = _typical_iteration(steady)
    first = per.iloc[0]
    if ahead is not None:
        # the first iteration less the loop before it, whose buffers its own reading prices
        first = _per_iteration(np.concatenate([[ahead], edges[1:]]), _issued_from(ahead, activity)).iloc[0]
    largest = pd.concat([per.iloc[1:], pd.DataFrame([first.to_dict()])]).max(numeric_only=True).to_dict()
    return Loop(iterations=len(per), period=period, anchor=anchor, first_s=float(per["wall_s"].iloc[0]),
                steady_s=float(med["wall_s"]), per_iteration=med, first=first.to_dict(), largest=largest,
                span=(int(edges[0]), int(edges[-1])), last=per.iloc[-1].to_dict() if len(per) > 1 else {},
                after_gpu_s=_after_gpu_s(int(edges[-1]), activity))


def _after_gpu_s(end: int, activity: Activity) -> float:
    """Seconds from the run's last GPU work (copies, migrations, kernels) to ``end`` (ns), where the host alone ran
    on."""
    ends = [int(f["end"].max()) for f in (activity.copies, activity.kernels) if len(f)]
    return max(0, end - max(ends)) / 1e9 if ends else 0.0


def _odd_iterations(seq: np.ndarray, bounds: np.ndarray, wall_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The iterations (between consecutive ``bounds``, positions in ``seq``) whose calls differ from the most common
    iteration's; and those whose wall time is OUTER_SLOW times the median's or more."""
    rng = np.random.default_rng(0)  # a random 64-bit value a call: a set of calls sums to one value
    value = rng.integers(1, 2**62, size=int(seq.max()) + 1, dtype=np.int64).astype(np.uint64)
    sums = np.add.reduceat(value[seq], bounds[:-1])
    key = sums * np.uint64(1_000_003) + np.diff(bounds).astype(np.uint64)
    _, of, counts = np.unique(key, return_inverse=True, return_counts=True)
    steady = float(np.median(wall_s[1:])) if len(wall_s) > 1 else 0.0
    slow = np.flatnonzero(wall_s >= OUTER_SLOW * steady) if steady > 0 else np.array([], np.int64)
    return np.flatnonzero(of != np.argmax(counts)), slow


def _group_starts(odd: np.ndarray, n: int) -> np.ndarray | None:
    """Where the groups of a loop of ``n`` iterations start, where its odd iterations (its first and last aside) come
    every k >= 2 iterations: every k iterations where k divides n, else after each odd one (an epoch's last batch)
    or at each (an epoch's first); None where they do not come regularly."""
    odd = _regular(odd[(odd > 0) & (odd < n - 1)], n)
    if not len(odd):
        return None
    gaps = np.diff(odd)
    k = int(gaps[0]) if len(gaps) else next((int(g) for g in (odd[0] + 1, odd[0]) if 2 * g == n), 0)
    if k < 2 or (gaps != k).any():
        return None
    if n % k == 0:  # groups of k: an odd iteration is cut mid-group where the loop's cut falls inside an epoch's end
        return np.arange(k, n, k)
    starts = odd + 1 if (odd[0] + 1) % k == 0 else odd
    groups = np.diff(np.concatenate([[0], starts, [n]]))
    # a trace may start or stop inside an outer iteration (its first and last groups shorter), but two odd iterations
    # one gap apart (slow ones: a garbage collection) are a pattern only where the groups they cut are whole
    whole = int((np.abs(groups - k) <= 1).sum())
    return starts if whole >= MIN_GROUPS and (groups <= k + 1).all() else None


def _regular(odd: np.ndarray, n: int) -> np.ndarray:
    """Of a loop's odd iterations, those a regular interval apart (every k-th, k the commonest gap between them) over
    the loop, where they are most of them (ONE_OFF_SHARE): the few others are one-offs (the caching allocator growing
    its pool in one iteration), not an outer loop's edges; else all of them."""
    if len(odd) < 3:
        return odd
    k = int(np.bincount(np.diff(odd)).argmax())
    if k < 2:
        return odd
    phase = np.bincount(odd % k).argmax()
    grid = odd[odd % k == phase]
    spans = grid[0] < k and grid[-1] >= n - 1 - k and (np.diff(grid) == k).all()
    return grid if spans and len(odd) - len(grid) <= ONE_OFF_SHARE * len(grid) else odd


def _outer_loop(seq: np.ndarray, bounds: np.ndarray, iterations: _Iterations, inner: Loop, ahead: int | None,
                activity: Activity) -> Loop | None:
    """The loop around the loop ``inner`` (its ``iterations``, between ``bounds``: positions in ``seq``, its calls):
    where its iterations whose calls differ from the others (else those that take OUTER_SLOW times the others' time)
    come at a regular interval (``_group_starts``), each group of iterations between them is an outer iteration
    (batches in epochs, layers in requests). None where there is none."""
    edges, per = iterations
    n = len(per)
    differ, slow = _odd_iterations(seq, bounds, per["wall_s"].to_numpy())
    starts = _group_starts(differ, n)
    starts = _group_starts(slow, n) if starts is None else starts
    if starts is None:
        return None
    outer_edges = np.concatenate([[edges[0]], edges[starts], [edges[-1]]])
    k = int(starts[1] - starts[0]) if len(starts) > 1 else int(starts[0])
    outer = _Iterations(outer_edges, _per_iteration(outer_edges, activity))
    return _loop_of(outer, inner.period * k, inner.anchor, ahead, activity)


# the spread (standard deviation over mean) of the bytes the steady iterations move beyond which they are read by
# their mean, not their median
VARIED_BYTES = 0.5


def _typical_iteration(steady: pd.DataFrame) -> dict:
    """The steady iteration: the median of each column, which no odd iteration moves; where the iterations move very
    different amounts (their bytes' spread over VARIED_BYTES), their mean, so that the iterations times it make the
    loop's bytes and time. A loop whose iterations repeat a pattern is cut at its period and moves the same each
    iteration (a copy back every 8th step is in every iteration of 8 steps); a loop whose copies change size every
    iteration is cut at a call that recurs (a launch a request), where its median iteration can move far less than
    its mean (2.7 MiB in against 6.2 MiB for requests of 284 KiB to 30 MiB)."""
    moved = steady[["h2d_bytes", "d2h_bytes", "um_h2d_bytes", "um_d2h_bytes"]].sum(axis=1)
    mean = float(moved.mean())
    varied = len(steady) > 1 and mean > 0 and float(moved.std(ddof=0)) > VARIED_BYTES * mean
    return (steady.mean(numeric_only=True) if varied else steady.median(numeric_only=True)).to_dict()


def _issued_from(t0: int, activity: Activity, before: bool = False) -> Activity:
    """The calls, copies and kernels issued from ``t0`` on (or, ``before``, ahead of it)."""
    side = np.less if before else np.greater_equal

    def keep(df, col):
        return df[side(df[col].to_numpy(np.int64), t0)]
    return Activity(keep(activity.calls, "start"), keep(activity.copies, "call_start"),
                    keep(activity.kernels, "call_start"))


def _lead_loop(t0: int, activity: Activity) -> Loop | None:
    """The loop of copies the host ran before ``t0`` (the main loop's first iteration), where one moved data in three
    iterations or more (a dataset loaded chunk by chunk before the loop over it: its copies are the run's largest
    part, and no iteration of the main loop holds them)."""
    lead = find_loop(*_issued_from(t0, activity, before=True), with_lead=False)
    if lead is None or lead.iterations < 3 or lead.per_iteration["h2d_bytes"] + lead.per_iteration["d2h_bytes"] <= 0:
        return None
    return lead


def _per_iteration(edges: np.ndarray, activity: Activity) -> pd.DataFrame:
    """Per iteration (between consecutive edges, by when the host called): bytes each way, copy
    and kernel time, unified-memory migrations, GPU busy time, the time inside CUDA calls (calls_s: the
    rest of the iteration is the host's own) and wall time."""
    calls, copies, kernels = activity
    n = len(edges) - 1

    def bin_of(df):  # by when the host issued it (``call_start``)
        return np.clip(np.searchsorted(edges, df["call_start"].to_numpy(np.int64), side="right") - 1, 0, n - 1)

    rows = pd.DataFrame({"wall_s": np.diff(edges) / 1e9})
    # every column, in the order `advise --json` shows them
    for name in ("h2d_bytes", "d2h_bytes", "um_h2d_bytes", "um_d2h_bytes", "h2d_s", "d2h_s", "kernel_s", "busy_s",
                 "calls_s", "h2d_copies", "d2h_copies", "h2d_largest", "d2h_largest", "kernels"):
        rows[name] = 0.0
    if len(copies):
        b = bin_of(copies)
        for d in COPY_DIRECTIONS + UM_DIRECTIONS:
            m = (copies["direction"] == d).to_numpy()
            rows[f"{d}_bytes"] += np.bincount(b[m], weights=copies["bytes"].to_numpy(float)[m], minlength=n)
            if d in COPY_DIRECTIONS:
                rows[f"{d}_s"] += np.bincount(b[m], weights=copies["dur_s"].to_numpy(float)[m], minlength=n)
                rows[f"{d}_copies"] += np.bincount(b[m], minlength=n)
                largest = np.zeros(n)
                np.maximum.at(largest, b[m], copies["bytes"].to_numpy(float)[m])
                rows[f"{d}_largest"] = largest
    if len(kernels):
        b = bin_of(kernels)
        rows["kernel_s"] += np.bincount(b, weights=kernels["dur_s"].to_numpy(float), minlength=n)
        rows["kernels"] += np.bincount(b, minlength=n)
    rows["busy_s"] = _covered_s(pd.concat([copies[["start", "end"]], kernels[["start", "end"]]]), edges)
    rows["calls_s"] = _covered_s(calls, edges)
    return rows


def _covered_s(intervals: pd.DataFrame, edges: np.ndarray) -> np.ndarray:
    """Seconds between consecutive ``edges`` (ns) that the intervals (``start``, ``end``) cover, overlaps once."""
    u = union(intervals["start"].to_numpy(np.int64), intervals["end"].to_numpy(np.int64))
    return np.diff(covered(u, edges.astype(np.int64))) / 1e9
