"""Add a calibration scenario measured on its own to a shipped calibration, as a run of its own.

    python3 scripts/ship_scenario.py SHIPPED.parquet MEASURED.parquet "2026-11-26: calibration-loop-copies"

A scenario added to the calibration group after a GPU's shipped calibration was measured is measured
alone (`umprof run calibration-loop-copies -o FILE` on a GPU of that model) and joined here: its rows,
of the same GPU, numbered as a run after the file's own (column ``run``; a scenario measured again on
another lease pools with its earlier runs, case by case), and the run is described in the file's
calibration metadata beside the others.
Refuses a file of another GPU, or one that measured other scenarios too.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    from umprof.core.results import ResultSet
    from umprof.measure.scenario import round_base
    from umprof.model.calibration import RUN

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("shipped", type=Path)
    ap.add_argument("measured", type=Path)
    ap.add_argument("about", help="the run in words: its date, what it measured")
    a = ap.parse_args()
    ship, new = ResultSet.load(a.shipped), ResultSet.load(a.measured)
    name = lambda rs: (rs.devices[0].get("name") if rs.devices else None)  # noqa: E731
    if name(ship) != name(new):
        sys.exit(f"{a.measured}: measured on {name(new)!r}, the shipped calibration is of {name(ship)!r}")
    scenarios = set(round_base(new.frame["scenario"].astype(str)))
    if len(scenarios) != 1:
        sys.exit(f"{a.measured}: one scenario expected, got {sorted(scenarios)}")
    frame = ship.frame
    if RUN not in frame.columns:
        frame = frame.assign(**{RUN: 0})
    rows = new.frame.assign(**{RUN: int(frame[RUN].max()) + 1})
    cal = dict(ship.meta.get("calibration") or {})
    cal["runs"] = list(cal.get("runs") or [ship.meta.get("time", "")[:10] + ": the calibration"]) + [a.about]
    if not round_base(frame["scenario"].astype(str)).isin(scenarios).any():  # cases new to the file
        cal["cases"] = int(cal.get("cases") or 0) + int(rows.loc[rows["phase"] == "total", "case"].nunique())
    ResultSet(pd.concat([frame, rows], ignore_index=True), dict(ship.meta, calibration=cal), ship.devices).save(
        a.shipped)
    print(f"{a.shipped}: {len(rows)} rows of {scenarios.pop()} added as run {int(rows[RUN].iloc[0])}")


if __name__ == "__main__":
    main()
