"""Seconds against bytes: a calibration's measured points as a curve, read between and past them.

Log-log between the measured sizes; past the largest, in proportion to the bytes, or (a fitted
tail) as the largest sizes' slope says, for costs that are fixed for one strategy and in
proportion for another; under the smallest, the first segment's slope.
"""

from __future__ import annotations

import math

import numpy as np

TAIL_POINTS = 3  # the largest sizes a fitted tail's slope is taken from


def at_span(curve: "Curve", nbytes: float, span: float) -> float:
    """The host's write or read of ``nbytes`` at the rate of the whole ``span`` it touches each
    iteration, not of this part alone: the calibration's loops write and read all of a buffer, and
    whether a write or read finds its lines in the host's caches depends on all the host touches."""
    return nbytes * curve(span) / span if span > nbytes > 0 else curve(nbytes)


def loglog(xs: np.ndarray, ys: np.ndarray, x: float, tail: float = 1.0) -> float:
    """Piecewise log-log interpolation; past the largest x, as x to the power ``tail`` (1: in
    proportion); under the smallest, the first segment's slope (never below a tenth of the
    smallest measured value)."""
    if x <= 0:
        return 0.0
    order = np.argsort(xs)
    xs, ys = xs[order], np.maximum(ys[order], 1e-9)
    if len(xs) == 1:
        return float(ys[0] * x / xs[0]) if x > xs[0] else float(ys[0])
    if x >= xs[-1]:
        return float(ys[-1] * (x / xs[-1]) ** tail)
    lx, ly = np.log(xs), np.log(ys)
    if x <= xs[0]:
        slope = (ly[1] - ly[0]) / (lx[1] - lx[0])
        return float(max(math.exp(ly[0] + slope * (math.log(x) - lx[0])), ys[0] / 10))
    return float(math.exp(np.interp(math.log(x), lx, ly)))


class Curve:
    """Seconds against bytes, from measured points (bytes → seconds). Past the largest, in
    proportion to the bytes; or, with ``fitted_tail``, as the largest sizes' log-log slope says
    (between 0, a fixed cost, and 1, in proportion)."""

    def __init__(self, points: dict[float, float], fitted_tail: bool = False):
        pts = {float(b): max(float(t), 1e-9) for b, t in points.items() if t is not None and not math.isnan(t)}
        self.xs, self.ys = np.array(list(pts)), np.array(list(pts.values()))
        self.tail = 1.0
        if fitted_tail and len(self.xs) > 1:
            largest = np.argsort(self.xs)[-TAIL_POINTS:]
            fit = np.polyfit(np.log(self.xs[largest]), np.log(self.ys[largest]), 1)[0]
            self.tail = float(np.clip(fit, 0.0, 1.0))

    def __bool__(self):
        return len(self.xs) > 0

    def __call__(self, nbytes: float) -> float:
        if nbytes <= 0 or not len(self.xs):
            return 0.0
        return loglog(self.xs, self.ys, nbytes, self.tail)

