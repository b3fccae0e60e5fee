"""The staging benchmark's table: umprof's staging ring against its ceiling, in the staging scenario
and inside the loop, H2D and D2H, from one run of ``staging``, ``staging-loop`` (and, where measured,
``staging-sweep``):

    umprof run staging staging-loop staging-sweep -o staging.parquet
    python3 benchmarks/staging_table.py staging.parquet [--json OUT.json]

The ceiling of a ring is the slower of the host's parallel copy of the same bytes on the ring's
threads (``host-copy``) and the pinned link (``pinned``), both measured in the same run; the goal
is 85% of it. Each rate is bytes / the median time of its phase.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

import pandas as pd

from umprof.core.results import ResultSet

GOAL = 0.85
GB = 1e9


def _rate(rows: pd.DataFrame) -> float:
    rows = rows[(rows["status"] == "ok") & (rows["bytes"] > 0) & (rows["time_median_s"] > 0)]
    if rows.empty:
        return math.nan
    return float((rows["bytes"] / rows["time_median_s"]).median())


def table(frame: pd.DataFrame) -> list[dict]:
    """A row per (direction, bytes): ceiling parts, the ring in the scenario and in the loop, and the rest."""
    st = frame[frame["scenario"] == "staging"]
    lp = frame[frame["scenario"] == "staging-loop"]
    out = []
    for direction in ("h2d", "d2h"):
        for nbytes in sorted(st["axis.bytes"].dropna().astype(int).unique()):
            s = st[(st["axis.direction"] == direction) & (st["axis.bytes"].astype(float) == nbytes)
                   & (st["phase"] == direction)]
            method = lambda m: s[s["axis.method"] == m]  # noqa: E731
            host, link = _rate(method("host-copy")), _rate(method("pinned"))
            ceiling = min(host, link)
            ring = method("pageable-staged")
            row = {"direction": direction, "bytes": int(nbytes), "host_copy_Bps": host, "pinned_Bps": link,
                   "ceiling_Bps": ceiling, "scenario_Bps": _rate(ring), "pageable_Bps": _rate(method("pageable")),
                   "ring_threads": int(ring["ring_threads"].iloc[0]) if "ring_threads" in ring and len(ring) else None,
                   "ring_slots": int(ring["ring_slots"].iloc[0]) if "ring_slots" in ring and len(ring) else None,
                   "ring_chunk": int(ring["ring_chunk"].iloc[0]) if "ring_chunk" in ring and len(ring) else None}
            lb = lp[(lp["axis.bytes"].astype(float) == nbytes) & (lp["phase"] == direction)]
            for strategy, key in (("pageable-staged", "loop_Bps"), ("pageable-registered", "loop_registered_Bps"),
                                  ("pageable", "loop_pageable_Bps"), ("pinned", "loop_pinned_Bps")):
                row[key] = _rate(lb[lb["axis.strategy"] == strategy])
            reg = lp[(lp["axis.bytes"].astype(float) == nbytes) & (lp["phase"] == "alloc")
                     & (lp["axis.strategy"] == "pageable-registered")]
            row["register_s_per_GiB"] = float(reg["time_median_s"].median() / (nbytes / 2**30)) if len(reg) else math.nan
            row["scenario_share"] = row["scenario_Bps"] / ceiling if ceiling > 0 else math.nan
            row["loop_share"] = row["loop_Bps"] / ceiling if ceiling > 0 else math.nan
            out.append(row)
    return out


def sweep(frame: pd.DataFrame) -> list[dict]:
    """The sweep's staged rate by (direction, threads, chunk), beside the host copy on as many threads."""
    sw = frame[frame["scenario"] == "staging-sweep"]
    out = []
    for direction in ("h2d", "d2h"):
        d = sw[(sw["axis.direction"] == direction) & (sw["phase"] == direction)]
        link = _rate(d[d["axis.method"] == "pinned"])
        for threads in sorted(d["axis.threads"].dropna().astype(int).unique()):
            t = d[d["axis.threads"].astype(float) == threads]
            host = _rate(t[t["axis.method"] == "host-copy"])
            ring = t[t["axis.method"] == "pageable-staged"]
            for chunk in sorted(ring["axis.chunk"].dropna().astype(int).unique()):
                r = _rate(ring[ring["axis.chunk"].astype(float) == chunk])
                out.append({"direction": direction, "threads": int(threads), "chunk": int(chunk), "ring_Bps": r,
                            "host_copy_Bps": host, "pinned_Bps": link, "share": r / min(host, link)})
    return out


def _gb(x) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x / GB:.1f}"


def _pct(x) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.0%}"


def markdown(rows: list[dict], sweep_rows: list[dict]) -> str:
    lines = ["| direction | bytes | host copy GB/s | pinned link GB/s | ceiling GB/s | ring, scenario GB/s | share | "
             "ring, loop GB/s | share | cudaMemcpy pageable GB/s | registered, loop GB/s | register s/GiB | ring |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ring = f"{r['ring_threads']} threads, {r['ring_slots']} x {r['ring_chunk'] // 2**20} MiB" if r["ring_chunk"] else "-"
        reg = r["register_s_per_GiB"]
        lines.append(f"| {r['direction']} | {r['bytes'] // 2**20} MiB | {_gb(r['host_copy_Bps'])} | {_gb(r['pinned_Bps'])} | "
                     f"{_gb(r['ceiling_Bps'])} | {_gb(r['scenario_Bps'])} | {_pct(r['scenario_share'])} | "
                     f"{_gb(r['loop_Bps'])} | {_pct(r['loop_share'])} | {_gb(r['pageable_Bps'])} | "
                     f"{_gb(r['loop_registered_Bps'])} | {'-' if math.isnan(reg) else f'{reg:.3f}'} | {ring} |")
    if sweep_rows:
        lines += ["", "| direction | threads | slot | ring GB/s | host copy GB/s | pinned GB/s | share of ceiling |",
                  "|---|---|---|---|---|---|---|"]
        for r in sweep_rows:
            lines.append(f"| {r['direction']} | {r['threads']} | {r['chunk'] // 2**20} MiB | {_gb(r['ring_Bps'])} | "
                         f"{_gb(r['host_copy_Bps'])} | {_gb(r['pinned_Bps'])} | {_pct(r['share'])} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="+", help="result files of the staging scenarios")
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args(argv)
    sets = [ResultSet.load(p) for p in args.results]
    frame = pd.concat([rs.frame for rs in sets], ignore_index=True)
    rows, sweep_rows = table(frame), sweep(frame)
    device = sets[0].devices[0]["name"] if sets[0].devices else "?"
    date = str(sets[0].meta.get("time", ""))[:10]
    print(f"{device}, {date}: goal {GOAL:.0%} of min(host copy, pinned link)")
    print(markdown(rows, sweep_rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": device, "date": date, "goal": GOAL, "rows": rows, "sweep": sweep_rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
