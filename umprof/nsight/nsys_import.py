"""A trace's NVTX ranges turned into umprof's phase breakdown, and checked against umprof's own timing.

Read from the trace's tables (:mod:`umprof.nsight.trace_db`: an ``.sqlite`` export directly, an
``.nsys-rep`` exported once with nsys). Ranges named after a phase (``h2d``, ``kernel: saxpy``, ...
in the ``umprof`` domain, as :mod:`umprof.nvtx` writes them) are the phases; the nearest enclosing
range that is not a phase names the case (``case <label>`` in umprof's own runs, ``iteration 3`` or
whatever an application calls it), and an enclosing ``scenario <name>`` range names the scenario.
Phases inside an ``untimed`` range (umprof's warm-ups, the sample CUPTI counts) are left out.

Ranges nest by containment on their thread, as push/pop ranges do. A phase's GPU time is its range's
projection onto the GPU, as Nsight Systems projects it: from the start of the first GPU operation
launched by a call inside the range to the end of the last; its CPU time is the range's own
duration; its bytes are those of the memory copies the GPU ran inside the projected window.
Unified-memory migrations inside the window are counted apart, in ``um_htod_bytes`` /
``um_dtoh_bytes``. On real traces the nesting and the projection are nsys' own, range for range
(tests/fixtures/nsys holds three traces with nsys' reports of them).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from umprof.core.results import AXIS_PREFIX, ResultSet, ordered
from umprof.core.stats import noise, summarize
from umprof.nsight.nvtx import DOMAIN, PHASES, UNTIMED

RANGE_AXIS = AXIS_PREFIX + "range"
TOP_LEVEL = "(top level)"
AGREEMENT_TOLERANCE = 0.05
RANGE_COLUMNS = ["pid", "tid", "rangeid", "parentid", "name", "cpu_start", "cpu_s", "gpu_start", "gpu_s", "gpu_ops"]


def phase_of(name: str) -> tuple[str | None, str]:
    """(phase, detail) for a phase range's name, else (None, the name without the domain)."""
    bare = name[len(DOMAIN) + 1:] if name.startswith(DOMAIN + ":") else name
    head, _, detail = bare.partition(":")
    if head.strip() in PHASES:
        return head.strip(), detail.strip()
    return None, bare


def ranges(t) -> pd.DataFrame:
    """Every NVTX range of the trace (``TraceTables``) with its parent, its CPU time and its projection
    onto the GPU (one row per range instance; ``gpu_start`` / ``gpu_s`` empty where it launched nothing)."""
    r = t.ranges.sort_values(["pid", "tid", "start", "end"], ascending=[True, True, True, False], kind="stable")
    r = r.reset_index(drop=True)
    out = pd.DataFrame({"pid": r["pid"], "tid": r["tid"], "rangeid": np.arange(len(r)), "parentid": _parents(r),
                        "name": r["name"].astype(str), "cpu_start": r["start"], "cpu_s": (r["end"] - r["start"]) / 1e9})
    start, end, count = _projection(t, r)
    out["gpu_start"], out["gpu_s"], out["gpu_ops"] = start, (end - start) / 1e9, count
    return out[RANGE_COLUMNS]


def _parents(r: pd.DataFrame) -> np.ndarray:
    """Each range's parent (its row, NaN for none): the innermost range of its thread that contains it.
    ``r`` is sorted by thread, then start, the longer first."""
    parent = np.full(len(r), np.nan)
    starts, ends = r["start"].to_numpy(), r["end"].to_numpy()
    stack: list[int] = []
    thread = None
    for i, key in enumerate(zip(r["pid"].to_numpy(), r["tid"].to_numpy())):
        if key != thread:
            stack, thread = [], key
        while stack and not (starts[stack[-1]] <= starts[i] and ends[i] <= ends[stack[-1]]):
            stack.pop()
        if stack:
            parent[i] = stack[-1]
        stack.append(i)
    return parent


def _projection(t, r: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per range: the first start and last end (ns) of the GPU operations launched by calls made inside
    it on its thread, and how many there were (NaN, NaN, 0 for none)."""
    n = len(r)
    start, end, count = np.full(n, np.nan), np.full(n, np.nan), np.zeros(n, dtype=int)
    launches = [d[["correlation", "start", "end"]] for d in (t.copies, t.kernels, t.memsets) if len(d)]
    calls = t.calls.dropna(subset=["correlation"])[["correlation", "start", "pid", "tid"]]
    if not n or not launches or calls.empty:  # ranges of a trace with no GPU operation project onto nothing
        return start, end, count
    ops = pd.concat(launches).dropna(subset=["correlation"])
    launched = ops.merge(calls.rename(columns={"start": "call"}), on="correlation").sort_values("call", kind="stable")
    rpid, rtid = r["pid"].to_numpy(), r["tid"].to_numpy()
    rstart, rend = r["start"].to_numpy(), r["end"].to_numpy()
    for (pid, tid), g in launched.groupby(["pid", "tid"]):
        mine = np.flatnonzero((rpid == pid) & (rtid == tid))
        call, op_start, op_end = g["call"].to_numpy(), g["start"].to_numpy(), g["end"].to_numpy()
        lo = np.searchsorted(call, rstart[mine], "left")
        hi = np.searchsorted(call, rend[mine], "right")
        for i, a, b in zip(mine, lo, hi):
            if b > a:
                start[i], end[i], count[i] = op_start[a:b].min(), op_end[a:b].max(), b - a
    return start, end, count


def _enclosing(r, by_id, merge_numbered: bool) -> tuple[str, str | None, bool]:
    """(case name, scenario name or None, untimed) from the nearest non-phase ancestor and any
    'scenario' one; untimed when an ancestor is an ``untimed`` range (a warm-up: not a sample).

    With ``merge_numbered``, ranges that differ only by a trailing number (``iteration 0``,
    ``iteration 1``, ...) are one case whose instances are samples.
    """
    case, scenario, untimed = None, None, False
    parent = r.parentid
    while parent is not None and not (isinstance(parent, float) and math.isnan(parent)):
        p = by_id.get((r.pid, int(parent)))
        if p is None:
            break
        ph, bare = phase_of(p.name)
        if ph is None:
            if bare == UNTIMED or bare.startswith(UNTIMED + ":"):
                untimed = True
            elif bare.startswith("scenario "):
                scenario = scenario or bare[len("scenario "):]
            elif case is None:
                if bare.startswith("case "):
                    case = bare[len("case "):]
                else:
                    case = unnumbered(bare) if merge_numbered else bare
        parent = p.parentid
    return case or TOP_LEVEL, scenario, untimed


def unnumbered(name: str) -> str:
    """A range's name without a trailing number: 'iteration 3' and 'iteration 4' are one 'iteration'."""
    return re.sub(r"\s+#?\d+$", "", name) or name


def _gpu_bytes(t):
    """Start times and cumulative bytes of explicit copies and of UM migrations, for window sums."""
    c = t.copies
    kinds = {"copy": ~c["kind"].str.startswith("um_"), "um_htod": c["kind"] == "um_h2d", "um_dtoh": c["kind"] == "um_d2h"}
    out = {}
    for k, mask in kinds.items():
        sel = c[mask].sort_values("start")
        nbytes = pd.to_numeric(sel["bytes"], errors="coerce").fillna(0).to_numpy(float)
        out[k] = (sel["start"].to_numpy(), np.concatenate([[0.0], np.cumsum(nbytes)]))
    return out


def _window_sum(series, start, duration_s) -> float:
    starts, cum = series
    if not len(starts) or math.isnan(start):
        return 0.0
    lo = np.searchsorted(starts, start, side="left")
    hi = np.searchsorted(starts, start + duration_s * 1e9, side="right")
    return float(cum[hi] - cum[lo])


def breakdown(t, scenario: str = "trace", merge_numbered: bool = True) -> pd.DataFrame:
    """The phase breakdown of a trace (``TraceTables``) as a ResultSet frame: a row per (scenario, range,
    phase) and a total per range. ``scenario`` names ranges outside any ``scenario <name>`` range.
    """
    rs = ranges(t)
    by_id = {(r.pid, int(r.rangeid)): r for r in rs.itertuples()}
    copies = _gpu_bytes(t)
    acc: dict = {}
    for r in rs.itertuples():
        phase, detail = phase_of(r.name)
        if phase is None:
            continue
        case, scen, untimed = _enclosing(r, by_id, merge_numbered)
        if untimed:
            continue
        key = (scen or scenario, case, phase)
        d = acc.setdefault(key, {"gpu": [], "cpu": [], "bytes": [], "um_htod": [], "um_dtoh": [], "ops": [], "detail": set()})
        on_gpu = r.gpu_ops > 0 and not math.isnan(r.gpu_s)
        d["gpu"].append(r.gpu_s if on_gpu else math.nan)
        d["cpu"].append(r.cpu_s)
        d["ops"].append(r.gpu_ops)
        for k, dest in (("copy", "bytes"), ("um_htod", "um_htod"), ("um_dtoh", "um_dtoh")):
            d[dest].append(_window_sum(copies[k], r.gpu_start, r.gpu_s) if on_gpu else 0.0)
        if detail:
            d["detail"].add(detail)
    rows, totals = [], {}
    for (scen, case, phase), d in acc.items():
        gpu = [v for v in d["gpu"] if not math.isnan(v)]
        row = {"scenario": scen, "op": "nsys", "case": case, RANGE_AXIS: case, "phase": phase, "status": "ok", "reason": "",
               "samples": len(d["cpu"]), "stop_reason": ""}
        row.update(summarize(gpu, "gpu_time"))
        row.update(summarize(d["cpu"], "cpu_time"))
        row["time_median_s"] = row["gpu_time_median_s"] if gpu else row["cpu_time_median_s"]
        nbytes = float(np.median(d["bytes"]))
        row["bytes"] = int(round(nbytes))
        row["bytes_per_s"] = nbytes / row["time_median_s"] if nbytes and row["time_median_s"] > 0 else math.nan
        row["gpu_ops"] = float(np.mean(d["ops"]))
        row["um_htod_bytes"] = float(np.median(d["um_htod"]))
        row["um_dtoh_bytes"] = float(np.median(d["um_dtoh"]))
        row["detail"] = ", ".join(sorted(d["detail"]))
        times = d["gpu"] if gpu else d["cpu"]
        row["noise_rel"] = noise([t for t in times if not math.isnan(t)])
        row["unstable"] = False
        rows.append(row)
        t = totals.setdefault((scen, case), {"time": 0.0, "n": 0})
        t["time"] += row["time_median_s"]
        t["n"] = max(t["n"], row["samples"])
    for (scen, case), t in totals.items():
        rows.append({"scenario": scen, "op": "nsys", "case": case, RANGE_AXIS: case, "phase": "total", "status": "ok",
                     "reason": "", "samples": t["n"], "stop_reason": "", "time_median_s": t["time"], "bytes": 0})
    if not rows:
        return ordered(pd.DataFrame(columns=["scenario", "op", "case", RANGE_AXIS, "phase"]))
    frame = pd.DataFrame(rows)
    # keep each scenario's ranges in the order they first ran, phases in umprof's order
    order = {p: i for i, p in enumerate((*PHASES, "total"))}
    frame["_p"] = frame["phase"].map(order)
    first = {k: i for i, k in enumerate(dict.fromkeys(zip(frame["scenario"], frame["case"])))}
    frame["_c"] = [first[k] for k in zip(frame["scenario"], frame["case"])]
    frame = frame.sort_values(["_c", "_p"], kind="stable").drop(columns=["_p", "_c"]).reset_index(drop=True)
    return ordered(frame)


def agreement(imported: pd.DataFrame, measured: pd.DataFrame, tolerance: float = AGREEMENT_TOLERANCE) -> pd.DataFrame:
    """Per case and GPU phase: Nsight's projected GPU time beside umprof's event time.

    Nsight's time per phase instance is divided by the copies umprof repeats inside the phase
    (``reps_per_sample``), since umprof reports the time of one. Rows whose relative
    difference exceeds ``tolerance`` have ``agrees`` False.
    """
    m = measured[(measured["status"] == "ok") & (measured["phase"] != "total")].copy()
    m = m[m["gpu_time_median_s"].notna()]
    reps = m["reps_per_sample"].fillna(1) if "reps_per_sample" in m else pd.Series(1.0, index=m.index)
    m = pd.DataFrame({"scenario": m["scenario"], "case": m["case"], "phase": m["phase"], "umprof_s": m["gpu_time_median_s"],
                      "reps": reps, "bytes": m["bytes"]})
    n = imported[imported["gpu_time_median_s"].notna()]
    n = pd.DataFrame({"scenario": n["scenario"], "case": n[RANGE_AXIS], "phase": n["phase"],
                      "nsys_phase_s": n["gpu_time_median_s"], "instances": n["samples"]})
    j = m.merge(n, on=["scenario", "case", "phase"], how="inner")
    j["nsys_s"] = j["nsys_phase_s"] / j["reps"]
    j["diff_rel"] = j["nsys_s"] / j["umprof_s"] - 1
    j["agrees"] = j["diff_rel"].abs() <= tolerance
    return j[["scenario", "case", "phase", "umprof_s", "nsys_s", "diff_rel", "agrees", "reps", "instances", "bytes"]]


def um_summary(t) -> dict:
    """Totals of unified-memory traffic and faults in the trace (``TraceTables``; empty when it has none):
    bytes migrated each way, CPU and GPU page faults, and per direction the migrations' count and sizes."""
    um = t.copies[t.copies["kind"].isin(["um_h2d", "um_d2h"])]
    if um.empty and t.gpu_faults.empty and t.cpu_faults.empty:
        return {}
    out = {}
    for key, kind in (("htod", "um_h2d"), ("dtoh", "um_d2h")):
        nbytes = pd.to_numeric(um.loc[um["kind"] == kind, "bytes"], errors="coerce").dropna()
        out[f"{key}_bytes"] = float(nbytes.sum())
        out[f"{key}_migrations"] = int(len(nbytes))
        if len(nbytes):
            out.update({f"{key}_migration_avg_bytes": float(nbytes.mean()),
                        f"{key}_migration_min_bytes": float(nbytes.min()),
                        f"{key}_migration_max_bytes": float(nbytes.max())})
    out["cpu_page_faults"] = int(len(t.cpu_faults))
    out["gpu_page_faults"] = int(pd.to_numeric(t.gpu_faults["faults"], errors="coerce").fillna(0).sum())
    return out


OPERATIONS = {"h2d": "memcpy Host-to-Device", "d2h": "memcpy Device-to-Host", "d2d": "memcpy Device-to-Device",
              "h2h": "memcpy Host-to-Host", "p2p": "memcpy Peer-to-Peer", "um_h2d": "memcpy Unified Host-to-Device",
              "um_d2h": "memcpy Unified Device-to-Host", "um_d2d": "memcpy Unified Device-to-Device"}


def copy_summary(t) -> pd.DataFrame | None:
    """Count, time and bytes per kind of GPU memory operation in the trace (``TraceTables``; None where it
    has none), named as Nsight Systems names them ('memcpy Host-to-Device', 'memset')."""
    ops = pd.concat([t.copies.assign(operation=t.copies["kind"].map(lambda k: OPERATIONS.get(k, f"memcpy {k}"))),
                     t.memsets.assign(operation="memset")])
    if ops.empty:
        return None
    ops = ops.assign(total_s=(ops["end"] - ops["start"]) / 1e9, bytes=pd.to_numeric(ops["bytes"], errors="coerce"))
    out = ops.groupby("operation", sort=False).agg(count=("start", "size"), total_s=("total_s", "sum"),
                                                    bytes=("bytes", "sum")).reset_index()
    out["bytes_per_s"] = out["bytes"] / out["total_s"]
    return out.sort_values("total_s", ascending=False, kind="stable").reset_index(drop=True)


def import_trace(t, *, scenario: str, devices: list | None = None, merge_numbered: bool = True) -> ResultSet:
    """A ResultSet from a trace (``TraceTables``; see :func:`breakdown`); in its metadata what the trace
    lacked, its unified-memory totals and its memory operations (:func:`um_summary`, :func:`copy_summary`)."""
    frame = breakdown(t, scenario, merge_numbered)
    ops = copy_summary(t)
    meta = {"source": "nsys", "trace": str(t.path), "trace_notes": list(t.notes), "um": um_summary(t),
            "memory_operations": [] if ops is None else ops.to_dict("records")}
    return ResultSet(frame, meta, list(devices or []))


def default_scenario_name(path: str | Path) -> str:
    name = Path(path).name
    for suffix in (".nsys-rep", ".qdrep", ".sqlite"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def attach_agreement(frame: pd.DataFrame, agree: pd.DataFrame) -> pd.DataFrame:
    """The imported frame with umprof's time, the relative difference and the verdict beside each matched phase."""
    cols = agree.rename(columns={"case": RANGE_AXIS, "umprof_s": "umprof_gpu_time_median_s", "diff_rel": "agreement_rel"})
    cols = cols[["scenario", RANGE_AXIS, "phase", "umprof_gpu_time_median_s", "agreement_rel", "agrees"]]
    return frame.merge(cols, on=["scenario", RANGE_AXIS, "phase"], how="left")
