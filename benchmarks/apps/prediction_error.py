"""The advice's own error on a saving, measured: how far each advised change's predicted saving missed the saving
measured by wall clock, as a share of the program's measured time as written, over every judged program on the H100
and the H200 (results/advise/tie-policy.json.xz's rows: each program's modes timed by wall clock on one machine, and the
time umprof predicted for each way from that machine's trace).

    python3 benchmarks/apps/prediction_error.py [results/advise/tie-policy.json.xz]

Prints the median and the 75th percentile over the advised changes (and per GPU) and over every measured pair of
ways; umprof.model.advice.thresholds.SAVING_ERROR is the advised changes' 75th percentile: a predicted saving is
within it of the measured one in three cases of four.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from benchmarks.apps.rows_json import read_kept  # noqa: E402


def error(row: dict, way: str, measured_as: str) -> float | None:
    """|predicted saving - measured saving| / the measured time as written, for one change of one row; None where
    the row lacks a figure."""
    w, p, own = row["walls"], row["predicted_s"], row["own"]
    if own not in w or own not in p or way not in p or measured_as not in w or measured_as == own:
        return None
    return abs((p[own] - p[way]) - (w[own] - w[measured_as])) / w[own]


def quantile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[int(q * (len(xs) - 1))]


def errors(rows: list[dict]) -> tuple[list[float], dict, list[float]]:
    """The advised changes' errors (the advice as applied: judge.py's mode), per GPU, and every pair's."""
    advised, by_gpu, pairs = [], {}, []
    for r in rows:
        e = error(r, r["advised"], r.get("applied") or r["advised"]) if r["advised"] != r["own"] else None
        if e is not None:
            advised.append(e)
            by_gpu.setdefault(r["gpu"], []).append(e)
        pairs += [x for m in r["walls"] if (x := error(r, m, m)) is not None]
    return advised, by_gpu, pairs


def main(path: Path) -> None:
    advised, by_gpu, pairs = errors(read_kept(path)["rows"])
    for name, xs in [("advised changes", advised), *((f"  {g.upper()}", x) for g, x in sorted(by_gpu.items())),
                     ("every measured pair", pairs)]:
        print(f"{name}: {len(xs)}, median {statistics.median(xs):.3f}, 75th percentile {quantile(xs, 0.75):.3f} "
              "of the time as written")
    print(f"SAVING_ERROR = {quantile(advised, 0.75):.3f}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "results" / "advise" / "tie-policy.json.xz")
