"""Intervals' union and the time it covers before given times."""

import numpy as np

from umprof.model.intervals import covered, latest_open, union, within


def test_overlapping_intervals_are_one_and_the_time_before_each_point_counts_them_once():
    u = union(np.array([50, 0, 10, 100]), np.array([60, 20, 30, 110]))
    assert u[0].tolist() == [0, 50, 100] and u[1].tolist() == [30, 60, 110] and u[2].tolist() == [0, 30, 40, 50]
    assert covered(u, np.array([-5, 0, 15, 40, 55, 200])).tolist() == [0, 0, 15, 30, 35, 50]


def test_an_empty_union_covers_nothing():
    u = union(np.array([], np.int64), np.array([], np.int64))
    assert covered(u, np.array([0, 10])).tolist() == [0, 0]


def _latest_open_by_definition(starts, ends, times):
    return [max((j for j in range(len(starts)) if starts[j] <= t and ends[j] >= t), default=-1) for t in times]


def test_the_latest_open_interval_is_the_last_started_of_those_not_yet_ended():
    """Nested, overlapping, equal and zero-length intervals, times on their edges and outside them all."""
    rng = np.random.default_rng(0)
    for n in (0, 1, 2, 3, 7, 40):
        starts = np.sort(rng.integers(0, 50, n))
        ends = starts + rng.integers(0, 30, n)
        times = np.concatenate([rng.integers(-5, 90, 50), starts, ends])
        assert latest_open(starts, ends, times).tolist() == _latest_open_by_definition(starts, ends, times)


def test_an_interval_without_an_end_is_open_at_no_time():
    starts, ends = np.array([0, 10]), np.array([100.0, np.nan])
    assert latest_open(starts, ends, np.array([5, 20, 200])).tolist() == [0, 0, -1]


def test_an_interval_is_within_where_the_outer_ones_cover_it_whole():
    a = np.array([[0, 5], [2, 4], [6, 12], [20, 21]])
    outer = np.array([[0, 10], [10, 15]])
    assert within(a[:, 0], a[:, 1], outer[:, 0], outer[:, 1]).tolist() == [True, True, True, False]
    assert not within(a[:, 0], a[:, 1], outer[:0, 0], outer[:0, 1]).any()
