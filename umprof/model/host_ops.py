"""Torch's operators that ran on host tensors while the GPU sat idle, in a program's loop: host work that the same
operators, run on GPU tensors, take off the host.

From the trace's ranges of torch's operators (torch.profiler's ``cpu_op`` events, or ``emit_nvtx``'s NVTX ranges) on
the thread that makes most CUDA calls: an operator within which no kernel is launched and no copy is called ran on
the host (``aten::stft`` of a host tensor, ``aten::clamp`` of one read back); one within which some are ran on the
GPU, and its host time is what an operator costs the host when it runs there (the dispatch and the launch, as
traced: ``dispatch_s``, the median of those that launch one kernel and call no copy, which they may wait for).
Operators nested in a GPU operator are its own bookkeeping (``aten::empty`` inside ``aten::linear``) and are left
out, as are those that only allocate or view a tensor (``NO_DATA_OPS``) and those within ``exclude`` (a
DataLoader's ranges: its batches' making, which its own choices price).

Each outermost host operator (one not nested in another host operator) saves its time while the GPU was idle less
the dispatch of every operator it holds, itself included: run on the GPU, each of them still costs the host that
(``HostOps.saving_s``). Time the GPU was busy is not saved: the host's work there was hidden already."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from umprof.model.application import Application
from umprof.model.frameworks import TORCH_OP
from umprof.model.intervals import covered, union, within

# operators that allocate a tensor, view one or read its one value, on either device, without launching anything:
# they do no work on its data, and the trace does not say whether it lies on the host or the GPU; and pinning,
# a host copy no GPU operator does, priced by the choices about pinning
NO_DATA_OPS = frozenset("aten::" + n for n in (
    "empty", "empty_strided", "new_empty", "new_empty_strided", "empty_like", "view", "_unsafe_view", "reshape",
    "as_strided", "select", "slice", "t", "transpose", "permute", "expand", "expand_as", "unsqueeze", "squeeze",
    "detach", "detach_", "alias", "lift_fresh", "resize_", "set_", "unbind", "split", "chunk", "narrow", "flatten",
    "contiguous", "result_type", "is_nonzero", "size", "stride", "numel", "dim", "_reshape_alias", "view_as",
    "split_with_sizes", "item", "_local_scalar_dense", "pin_memory", "_pin_memory", "is_pinned"))


class HostOps(NamedTuple):
    """The loop's torch operators on host tensors while the GPU was idle (see the module's docstring)."""
    count: int  # host operators, nested ones counted
    outermost: int  # of them, those not nested in another
    idle_s: float  # their time while the GPU was idle, as traced
    saving_s: float  # that time less each one's dispatch were it run on the GPU, over the outermost, none below 0
    dispatch_s: float  # the host time of an operator that runs on the GPU, as traced (median)
    names: tuple = ()  # the outermost operators that took most of that time, most first


NONE = HostOps(0, 0, 0.0, 0.0, 0.0)
NAMED = 3  # the operators named: enough for the reader to find the code


def host_ops(app: Application, ranges: pd.DataFrame, main_tid: int | None,
             exclude: pd.DataFrame | None = None) -> HostOps:
    """The loop's torch operators that ran on host tensors on thread ``main_tid`` while the GPU was idle (see the
    module's docstring); ``ranges``: the process's ranges with their operator's name (``op``)."""
    loop = app.loop
    if loop is None or ranges.empty or "op" not in ranges:
        return NONE
    lo, hi = loop.span
    ops = ranges[ranges["op"].str.startswith(TORCH_OP) & (ranges["start"] >= lo) & (ranges["end"] <= hi)]
    if main_tid is not None:
        ops = ops[ops["tid"] == main_tid]
    if ops.empty:
        return NONE
    ops = ops.sort_values("start", kind="stable")
    start, end = ops["start"].to_numpy(np.int64), ops["end"].to_numpy(np.int64)
    launches, copies = _calls_within(app.kernels, start, end), _calls_within(app.copies, start, end)
    on_gpu = (launches + copies) > 0
    host = ~on_gpu & ~within(start, end, start[on_gpu], end[on_gpu]) & ~ops["op"].isin(NO_DATA_OPS).to_numpy()
    if exclude is not None and len(exclude):
        host &= ~within(start, end, exclude["start"].to_numpy(np.int64), exclude["end"].to_numpy(np.int64))
    single = (launches == 1) & (copies == 0)  # a kernel launched, not waited for: the host's cost of issuing it
    if not host.any() or not single.any():
        return NONE
    dispatch = float(np.median(end[single] - start[single])) / 1e9
    hs, he = start[host], end[host]
    outer = _outermost(hs, he)
    held = _held(hs, he, outer)
    idle = _idle_ns(app, hs[outer], he[outer]) / 1e9
    saving = float(np.maximum(idle - held * dispatch, 0.0).sum())
    by_name = pd.Series(idle, index=ops["op"].to_numpy()[host][outer]).groupby(level=0).sum()
    names = tuple(by_name.sort_values(ascending=False).index[:NAMED])
    return HostOps(int(host.sum()), int(outer.sum()), float(idle.sum()), saving, dispatch, names)


def _calls_within(work: pd.DataFrame, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """How many of the calls that issued ``work`` (kernels, or copies) each range holds, from its start to before
    its end (a call at its end is the next operator's)."""
    calls = np.sort(work["call_start"].dropna().to_numpy(np.int64)) if "call_start" in work else np.zeros(0, np.int64)
    return np.searchsorted(calls, end, side="left") - np.searchsorted(calls, start, side="left")


def _outermost(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Which of the ranges lie within no other of them: by start, the longest first among those starting together,
    a range is outermost where it ends after every one before it."""
    order = np.lexsort((-end, start))
    ends = end[order]
    before = np.concatenate([[np.iinfo(np.int64).min], np.maximum.accumulate(ends)[:-1]])
    out = np.empty(len(start), bool)
    out[order] = ends > before
    return out


def _held(start: np.ndarray, end: np.ndarray, outer: np.ndarray) -> np.ndarray:
    """How many of the ranges each outermost one holds, itself included (ranges nested in no outermost count for
    none)."""
    os_, oe = start[outer], end[outer]
    k = np.searchsorted(os_, start, side="right") - 1
    ok = (k >= 0) & (end <= oe[np.maximum(k, 0)])
    return np.bincount(k[ok], minlength=len(os_)).astype(float)


def _idle_ns(app: Application, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Of each range, the nanoseconds during which the GPU ran none of the application's kernels or copies."""
    parts = [df for df in (app.kernels, app.copies) if len(df)]
    starts = np.concatenate([df["start"].to_numpy(np.int64) for df in parts] or [np.zeros(0, np.int64)])
    ends = np.concatenate([df["end"].to_numpy(np.int64) for df in parts] or [np.zeros(0, np.int64)])
    u = union(starts, ends)
    return (end - start) - (covered(u, end) - covered(u, start))
