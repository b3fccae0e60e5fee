"""Statistics of a case's samples, with the unit in every name."""

from __future__ import annotations

import math

import numpy as np

UNSTABLE_NOISE = 0.10  # pyperf warns at a spread of 10% of the mean; so do we


def summarize(values, prefix: str) -> dict:
    """``prefix``_{median,mean,stdev,min,max,iqr}_s of a list of seconds (NaN-free)."""
    a = np.asarray([v for v in values if v is not None and not math.isnan(v)], dtype=float)
    keys = ("median", "mean", "stdev", "min", "max", "iqr")
    if a.size == 0:
        return {f"{prefix}_{k}_s": math.nan for k in keys}
    q1, q3 = np.percentile(a, [25, 75])
    return {
        f"{prefix}_median_s": float(np.median(a)),
        f"{prefix}_mean_s": float(a.mean()),
        # sample stdev (ddof=1): the spread of the samples, not the standard error of the mean
        f"{prefix}_stdev_s": float(a.std(ddof=1)) if a.size > 1 else 0.0,
        f"{prefix}_min_s": float(a.min()),
        f"{prefix}_max_s": float(a.max()),
        f"{prefix}_iqr_s": float(q3 - q1),
    }


def noise(values) -> float:
    """Relative standard deviation (stdev / mean), nvbench's noise; NaN below two samples."""
    a = np.asarray([v for v in values if v is not None and not math.isnan(v)], dtype=float)
    if a.size < 2 or a.mean() == 0:
        return math.nan
    return float(a.std(ddof=1) / a.mean())
