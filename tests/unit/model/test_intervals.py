"""Intervals' union and the time it covers before given times."""

import numpy as np

from umprof.model.intervals import covered, union


def test_overlapping_intervals_are_one_and_the_time_before_each_point_counts_them_once():
    u = union(np.array([50, 0, 10, 100]), np.array([60, 20, 30, 110]))
    assert u[0].tolist() == [0, 50, 100] and u[1].tolist() == [30, 60, 110] and u[2].tolist() == [0, 30, 40, 50]
    assert covered(u, np.array([-5, 0, 15, 40, 55, 200])).tolist() == [0, 0, 15, 30, 35, 50]


def test_an_empty_union_covers_nothing():
    u = union(np.array([], np.int64), np.array([], np.int64))
    assert covered(u, np.array([0, 10])).tolist() == [0, 0]
