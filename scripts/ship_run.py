"""Add a measured run to a shipped calibration, as a run of its own: a calibration scenario measured alone,
or an earlier full calibration of the same GPU model (another machine).

    python3 scripts/ship_run.py SHIPPED.parquet MEASURED.parquet "2026-11-26: calibration-loop-copies"
    python3 scripts/ship_run.py SHIPPED.parquet OLD.parquet "2026-11-23, another machine: 0.1.0's calibration" \
        --without pageable-staged
    python3 scripts/ship_run.py SHIPPED.parquet NEW.parquet "2026-11-26: the new staging ring" \
        --drop pageable-staged --only pageable-staged

A scenario added to the calibration group after a GPU's shipped calibration was measured is measured
alone (`umprof run calibration-loop-copies -o FILE` on a GPU of that model) and joined here. An earlier
calibration joins the same way, less the rows of any strategy whose plan has changed since (``--without``:
the staging ring of 0.1.0 and 0.2.0 is not this release's). A strategy whose plan has changed since the
shipped calibration was measured takes its rows from a new full calibration alone: ``--drop`` takes the
shipped file's rows of it out, and ``--only`` brings the new run's rows of it and no other strategy's,
so that every other strategy is priced as before (a run on another machine would move them all). The
memory such a plan borrows comes along as its reference alone (column ``reference``): the staged plan's
host steps are its ratio to pageable memory's in the same run. The rows are numbered as a run after the file's
own (column ``run``; a case measured in several runs pools their samples, case by case), and the run is
described in the file's calibration metadata beside the others. A step of a loop measured anew after the loop
changed how it measures that step (``--supersede PHASE``: the setup loop's ``free`` since it gives malloc'd pages
back) takes the shipped file's rows of that phase out of the scenarios the measured run holds, and says so in the
description of each run that loses them: the other steps pool the earlier runs with the new one, that step is
the new runs' alone. The file's first run stays its own (the time estimates come from it). Refuses a file of
another GPU.

    python3 scripts/ship_run.py SHIPPED.parquet NEW.parquet "2026-11-27: calibration-loop-setup-malloc" \
        --supersede free
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _gpu(rs) -> str | None:
    """The GPU model a result set was measured on."""
    return rs.devices[0].get("name") if rs.devices else None


def main() -> None:
    from umprof.core.results import ResultSet
    from umprof.measure.scenario import round_base
    from umprof.model.calibration import BORROWS, REFERENCE, RUN

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("shipped", type=Path, help="the shipped calibration (umprof/calibrations/*.parquet), rewritten")
    ap.add_argument("measured", type=Path, help="the measured run to add (a result file of the same GPU model)")
    ap.add_argument("about", help="the run in words: its date, what it measured")
    ap.add_argument("--without", action="append", default=[], metavar="STRATEGY",
                    help="leave out the measured run's rows of this strategy (repeatable)")
    ap.add_argument("--drop", action="append", default=[], metavar="STRATEGY",
                    help="leave out the shipped file's rows of this strategy, whose plan the measured run "
                         "measures anew (repeatable)")
    ap.add_argument("--only", action="append", default=[], metavar="STRATEGY",
                    help="bring the measured run's rows of this strategy alone (repeatable), with those of the "
                         "memory it borrows as its reference")
    ap.add_argument("--supersede", action="append", default=[], metavar="PHASE",
                    help="leave out the shipped file's rows of this phase in the scenarios the measured run holds, "
                         "which measures it anew (repeatable)")
    a = ap.parse_args()
    ship, new = ResultSet.load(a.shipped), ResultSet.load(a.measured)
    if _gpu(ship) != _gpu(new):
        sys.exit(f"{a.measured}: measured on {_gpu(new)!r}, the shipped calibration is of {_gpu(ship)!r}")
    frame = ship.frame
    if RUN not in frame.columns:
        frame = frame.assign(**{RUN: 0})
    rows = new.frame
    strategies = set(frame["axis.strategy"].dropna().astype(str)) | set(rows["axis.strategy"].dropna().astype(str))
    for option, names in (("--without", a.without), ("--drop", a.drop), ("--only", a.only)):
        unknown = sorted(set(names) - strategies)
        if unknown:  # a misspelt strategy would leave every row where it was, silently
            ap.error(f"option '{option}': no strategy {', '.join(unknown)} in either file "
                     f"(they have: {', '.join(sorted(strategies))})")
    phases = set(rows["phase"].dropna().astype(str))
    unknown = sorted(set(a.supersede) - phases)
    if unknown:
        ap.error(f"option '--supersede': no phase {', '.join(unknown)} in {a.measured} "
                 f"(it has: {', '.join(sorted(phases))})")
    superseded = frame.iloc[:0]
    if a.supersede:
        measured = set(round_base(rows["scenario"].astype(str)))
        in_measured = round_base(frame["scenario"].astype(str)).isin(measured).to_numpy()
        gone = in_measured & frame["phase"].isin(a.supersede).to_numpy()
        superseded, frame = frame[gone], frame[~gone]
    if a.drop:
        frame = frame[~frame["axis.strategy"].astype(str).isin(a.drop)]
    if a.only:
        refs = {BORROWS[s] for s in a.only if s in BORROWS} - set(a.only)
        strategy = rows["axis.strategy"].astype(str)
        rows = rows[strategy.isin(a.only) | strategy.isin(refs)]
        rows = rows.assign(**{REFERENCE: rows["axis.strategy"].astype(str).isin(refs)})
    if a.without:
        rows = rows[~rows["axis.strategy"].astype(str).isin(a.without)]
    rows = rows.drop(columns=[RUN], errors="ignore").assign(**{RUN: int(frame[RUN].max()) + 1})
    cal = dict(ship.meta.get("calibration") or {})
    runs = list(cal.get("runs") or [ship.meta.get("time", "")[:10] + ": the calibration"])
    for run in sorted(int(r) for r in superseded[RUN].unique()):
        runs[run] += f" (its {', '.join(sorted(a.supersede))} rows left out: run {len(runs)} measured them anew)"
    cal["runs"] = runs + [a.about]
    before = ship.frame  # a case replaced is no case new to the file
    known = set(zip(round_base(before["scenario"].astype(str)), before["case"]))
    totals = rows[rows["phase"] == "total"]
    fresh = {k for k in zip(round_base(totals["scenario"].astype(str)), totals["case"]) if k not in known}
    cal["cases"] = int(cal.get("cases") or 0) + len(fresh)  # cases new to the file
    ResultSet(pd.concat([frame, rows], ignore_index=True), dict(ship.meta, calibration=cal), ship.devices).save(
        a.shipped)
    scenarios = sorted(set(round_base(rows["scenario"].astype(str))))
    print(f"{a.shipped}: {len(rows)} rows of {len(scenarios)} scenario(s) added as run {int(rows[RUN].iloc[0])}"
          f" ({len(fresh)} cases new to it)")


if __name__ == "__main__":
    main()
