"""Intervals on a time line (ns): their union as disjoint intervals, and how much of it lies before given times.

A union is ``(starts, ends, covered_before)``: its disjoint intervals in order, and the covered length before each
(one more entry than intervals: the last is the whole union's length). The time an interval ``(s, e)`` overlaps it
is ``covered(u, [e]) - covered(u, [s])``, for any number of intervals at once."""

from __future__ import annotations

import numpy as np


def union(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Disjoint intervals covering the given ones, and the covered length before each."""
    if len(starts) == 0:
        return np.array([], np.int64), np.array([], np.int64), np.array([0], np.int64)
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    run_end = np.maximum.accumulate(e)
    new = np.ones(len(s), bool)
    new[1:] = s[1:] > run_end[:-1]
    group = np.cumsum(new) - 1
    us = s[new]
    ue = np.zeros(len(us), np.int64)
    np.maximum.at(ue, group, e)
    return us, ue, np.concatenate([[0], np.cumsum(ue - us)])


def covered(u: tuple[np.ndarray, np.ndarray, np.ndarray], t: np.ndarray) -> np.ndarray:
    """How much of the union ``u`` (``union``) lies before each time in ``t``."""
    us, ue, cum = u
    if len(us) == 0:
        return np.zeros(len(t))
    i = np.searchsorted(us, t, side="right") - 1
    inside = np.where(i >= 0, np.minimum(t, ue[np.maximum(i, 0)]) - us[np.maximum(i, 0)], 0)
    return np.where(i >= 0, cum[np.maximum(i, 0)] + inside, 0)


def within(starts: np.ndarray, ends: np.ndarray, outer_starts: np.ndarray, outer_ends: np.ndarray) -> np.ndarray:
    """Which of the intervals lie wholly within the union of the outer ones (within one of them, where they nest as
    one thread's ranges do)."""
    if len(outer_starts) == 0:
        return np.zeros(len(starts), bool)
    u = union(outer_starts, outer_ends)
    return covered(u, ends) - covered(u, starts) >= ends - starts


def latest_open(starts: np.ndarray, ends: np.ndarray, times: np.ndarray) -> np.ndarray:
    """For each time in ``times``, the position of the last of the intervals (``starts`` sorted) that started at or
    before it and had not ended before it (its end at or after it), -1 where none had: of nested intervals open then,
    the innermost. A search from each time's last started interval back to the first still open, in halving strides
    over the intervals' latest ends (``_latest_ends``): every time at once."""
    at = np.searchsorted(starts, times, side="right") - 1
    if ends.dtype.kind == "f":  # an interval without an end is open at no time
        ends = np.where(np.isnan(ends), -np.inf, ends)
    for stride, latest in reversed(list(enumerate(_latest_ends(ends)))):
        looking = np.flatnonzero(at >= 0)
        # the 2**stride intervals up to ``at`` all ended before the time: none of them is open then
        ended = ~(latest[at[looking]] >= times[looking])
        at[looking[ended]] -= 1 << stride
    return np.maximum(at, -1)


def _latest_ends(ends: np.ndarray) -> list[np.ndarray]:
    """For each k from 0 while 2**k is at most the intervals', the latest end of each interval and the 2**k - 1
    before it (fewer at the start)."""
    levels = [ends]
    while (1 << len(levels)) <= len(ends):
        stride, prev = 1 << (len(levels) - 1), levels[-1]
        levels.append(np.concatenate([prev[:stride], np.maximum(prev[stride:], prev[:-stride])]))
    return levels
