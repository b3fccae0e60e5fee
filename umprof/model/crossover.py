"""Crossovers: where, along one axis (size, reuse count, touched fraction), the faster of two
strategies changes, found from measured lifecycles (``umprof run crossovers``, or any result
file whose lifecycle cases sweep one of those axes).

Between two neighbouring measured points where the sign of log(t_a / t_b) flips, the
crossing is interpolated linearly in (log x, log ratio). A crossing closer than the two
sides' measured noise is flagged as such: the lines touch there rather than cross.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from umprof.core.results import AXIS_PREFIX, axis_text
from umprof.core.units import format_size

AXES = ("bytes", "reuse", "touched", "iterations")  # lifecycle axes a crossover is sought along


def sweeps(frame: pd.DataFrame):
    """(scenario, axis, fixed-axes text, table strategy × axis value of total seconds, noise table)
    for every lifecycle sweep of one axis with at least two strategies."""
    if "op" not in frame.columns or "axis.strategy" not in frame.columns:
        return
    tot = frame[(frame["op"] == "lifecycle") & (frame["phase"] == "total") & (frame["status"] == "ok")]
    for scenario, g in tot.groupby("scenario", sort=False):
        axes = [c for c in g.columns if c.startswith(AXIS_PREFIX) and c != "axis.strategy" and g[c].notna().any()]
        for name in AXES:
            col = AXIS_PREFIX + name
            if col not in axes or g[col].nunique() < 2:
                continue
            others = [c for c in axes if c != col and g[c].nunique() > 1]
            groups = g.groupby(others, dropna=False) if others else [((), g)]
            for key, sub in groups:
                key = key if isinstance(key, tuple) else (key,)
                fixed = ", ".join(f"{c[len(AXIS_PREFIX):]}={axis_text(c, v)}" for c, v in zip(others, key))
                t = sub.pivot_table(index="axis.strategy", columns=col, values="time_median_s", aggfunc="median")
                n = sub.pivot_table(index="axis.strategy", columns=col, values="noise_rel", aggfunc="median",
                                    dropna=False).reindex(index=t.index, columns=t.columns)
                if len(t) >= 2 and t.shape[1] >= 2:
                    yield scenario, name, fixed, t, n


def format_value(axis: str, v: float) -> str:
    """A crossing's position: a size for bytes, three significant digits otherwise."""
    return format_size(round(v)) if axis == "bytes" else f"{v:.3g}"


def find(frame: pd.DataFrame, pair: tuple[str, str] | None = None, axis: str | None = None) -> pd.DataFrame:
    """Every crossing of two strategies' total time along a swept axis; one row each."""
    rows = []
    for scenario, name, fixed, t, noise in sweeps(frame):
        if axis and name != axis:
            continue
        names = sorted(t.index)
        pairs = [tuple(sorted(pair))] if pair else itertools.combinations(names, 2)
        for a, b in pairs:
            if a not in t.index or b not in t.index:
                continue
            xs = np.array(t.columns, dtype=float)
            ta, tb = t.loc[a].to_numpy(float), t.loc[b].to_numpy(float)
            ok = ~(np.isnan(ta) | np.isnan(tb))
            xs, ta, tb = xs[ok], ta[ok], tb[ok]
            na, nb = noise.loc[a].to_numpy(float)[ok], noise.loc[b].to_numpy(float)[ok]
            r = np.log(ta / tb)
            for i in range(len(xs) - 1):
                if r[i] == 0 or np.sign(r[i]) == np.sign(r[i + 1]):
                    continue
                lx0, lx1 = math.log(xs[i]), math.log(xs[i + 1])
                x = math.exp(lx0 + (lx1 - lx0) * r[i] / (r[i] - r[i + 1]))
                below = b if r[i] > 0 else a  # the faster one left of the crossing
                above = a if below == b else b
                margin = max(abs(r[i]), abs(r[i + 1]))
                spread = float(np.nanmax([na[i], nb[i], na[i + 1], nb[i + 1], 0.0]))
                rows.append({
                    "scenario": scenario, "axis": name, "fixed": fixed, "a": a, "b": b, "crossing": x,
                    "between": f"{format_value(name, xs[i])} .. {format_value(name, xs[i + 1])}",
                    "faster_below": below, "faster_above": above,
                    "gap_below": abs(math.expm1(r[i])), "gap_above": abs(math.expm1(r[i + 1])),
                    "within_noise": margin < 2 * spread,
                })
    return pd.DataFrame(rows, columns=["scenario", "axis", "fixed", "a", "b", "crossing", "between", "faster_below",
                                       "faster_above", "gap_below", "gap_above", "within_noise"])
