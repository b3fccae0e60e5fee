"""A trace's NVTX ranges turned into umprof's phase breakdown, and checked against umprof's own timing.

Ranges named after a phase (``h2d``, ``kernel: saxpy``, ... in the ``umprof`` domain, as
:mod:`umprof.nvtx` writes them) are the phases; the nearest enclosing range that is not a
phase names the case (``case <label>`` in umprof's own runs, ``iteration 3`` or whatever an
application calls it), and an enclosing ``scenario <name>`` range names the scenario. Phases
inside an ``untimed`` range (umprof's warm-ups, the sample CUPTI counts) are left out.

A phase's GPU time is Nsight Systems' NVTX projection (first GPU operation launched inside
the range to the end of the last); its CPU time is the range's own duration; its bytes are
those of the memory copies the GPU ran inside the projected window. Unified-memory
migrations inside the window are counted apart, in ``um_htod_bytes`` / ``um_dtoh_bytes``.
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


def phase_of(name: str) -> tuple[str | None, str]:
    """(phase, detail) for a phase range's name, else (None, the name without the domain)."""
    bare = name[len(DOMAIN) + 1:] if name.startswith(DOMAIN + ":") else name
    head, _, detail = bare.partition(":")
    if head.strip() in PHASES:
        return head.strip(), detail.strip()
    return None, bare


def ranges(reports) -> pd.DataFrame:
    """Every push/pop range with its CPU and projected GPU times (one row per range instance)."""
    pp, proj = reports.get("nvtx_pushpop_trace"), reports.get("nvtx_gpu_proj_trace")
    if pp is None and proj is None:
        return pd.DataFrame(columns=["pid", "rangeid", "parentid", "name", "cpu_start", "cpu_s", "gpu_start", "gpu_s", "gpu_ops"])
    if pp is not None:
        out = pd.DataFrame({"pid": pp["pid"], "rangeid": pp["rangeid"], "parentid": pp["parentid"], "name": pp["name"],
                            "cpu_start": pp["start_ns"], "cpu_s": pp["duration_ns"] / 1e9})
    else:
        out = pd.DataFrame({"pid": proj["pid"], "rangeid": proj["rangeid"], "parentid": proj["parentid"],
                            "name": proj["name"], "cpu_start": proj["orig_start_ns"], "cpu_s": proj["orig_duration_ns"] / 1e9})
    if proj is not None:
        g = pd.DataFrame({"pid": proj["pid"], "rangeid": proj["rangeid"], "gpu_start": proj["projected_start_ns"],
                          "gpu_s": proj["projected_duration_ns"] / 1e9, "gpu_ops": proj["numgpuops"]})
        out = out.merge(g, on=["pid", "rangeid"], how="left")
    else:
        out["gpu_start"], out["gpu_s"], out["gpu_ops"] = np.nan, np.nan, np.nan
    out["gpu_ops"] = out["gpu_ops"].fillna(0).astype(int)
    return out


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


def _gpu_bytes(reports):
    """Start times and cumulative bytes of explicit copies and of UM migrations, for window sums."""
    trace = reports.get("cuda_gpu_trace")
    empty = (np.array([]), np.array([0.0]))
    if trace is None or "bytes_mb" not in trace:
        return {"copy": empty, "um_htod": empty, "um_dtoh": empty}
    t = trace[trace["bytes_mb"].notna()]
    names = t["name"].astype(str)
    unified = names.str.contains("Unified")
    kinds = {"copy": ~unified & names.str.contains("memcpy"),
             "um_htod": unified & names.str.contains("Host-to-Device"),
             "um_dtoh": unified & names.str.contains("Device-to-Host")}
    out = {}
    for k, mask in kinds.items():
        sel = t[mask].sort_values("start_ns")
        out[k] = (sel["start_ns"].to_numpy(), np.concatenate([[0.0], np.cumsum(sel["bytes_mb"].to_numpy() * 1e6)]))
    return out


def _window_sum(series, start, duration_s) -> float:
    starts, cum = series
    if not len(starts) or math.isnan(start):
        return 0.0
    lo = np.searchsorted(starts, start, side="left")
    hi = np.searchsorted(starts, start + duration_s * 1e9, side="right")
    return float(cum[hi] - cum[lo])


def breakdown(reports, scenario: str = "trace", merge_numbered: bool = True) -> pd.DataFrame:
    """The phase breakdown as a ResultSet frame: a row per (scenario, range, phase) and a total per range.

    ``scenario`` names ranges outside any ``scenario <name>`` range.
    """
    rs = ranges(reports)
    by_id = {(r.pid, int(r.rangeid)): r for r in rs.itertuples()}
    copies = _gpu_bytes(reports)
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


def um_summary(reports) -> dict:
    """Totals of unified-memory traffic and faults in the trace (empty when it has none)."""
    out = {}
    tot = reports.get("um_total_sum")
    if tot is not None and len(tot):
        r = tot.iloc[0]
        out.update({"htod_bytes": float(r.get("total_htod_migration_size_mb", math.nan)) * 1e6,
                    "dtoh_bytes": float(r.get("total_dtoh_migration_size_mb", math.nan)) * 1e6,
                    "cpu_page_faults": _int(r.get("total_cpu_page_faults")),
                    "gpu_page_faults": _int(r.get("total_gpu_pagefaults", r.get("total_gpu_page_faults")))})
    sizes = reports.get("cuda_gpu_mem_size_sum")
    if sizes is not None:
        for _, r in sizes.iterrows():
            op = str(r.get("operation", ""))
            if "Unified" in op:
                key = "htod" if "Host-to-Device" in op else "dtoh" if "Device-to-Host" in op else "other"
                out[f"{key}_migrations"] = _int(r.get("count"))
                out[f"{key}_migration_avg_bytes"] = float(r.get("avg_mb", math.nan)) * 1e6
                out[f"{key}_migration_min_bytes"] = float(r.get("min_mb", math.nan)) * 1e6
                out[f"{key}_migration_max_bytes"] = float(r.get("max_mb", math.nan)) * 1e6
    return out


def copy_summary(reports) -> pd.DataFrame | None:
    """Time and bytes per kind of GPU memory operation (the two cuda_gpu_mem_* reports joined)."""
    t, s = reports.get("cuda_gpu_mem_time_sum"), reports.get("cuda_gpu_mem_size_sum")
    if t is None:
        return None
    out = pd.DataFrame({"operation": t["operation"], "count": t["count"], "total_s": t["total_time_ns"] / 1e9})
    if s is not None and "total_mb" in s:
        out = out.merge(pd.DataFrame({"operation": s["operation"], "bytes": s["total_mb"] * 1e6}), on="operation", how="left")
        out["bytes_per_s"] = out["bytes"] / out["total_s"]
    return out


def _int(v):
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def import_trace(reports, *, scenario: str, meta: dict | None = None, devices: list | None = None,
                 merge_numbered: bool = True) -> ResultSet:
    """A ResultSet from a trace's reports (see :func:`breakdown`), its notes and UM totals in the metadata."""
    frame = breakdown(reports, scenario, merge_numbered)
    meta = dict(meta or {})
    meta.update({"source": "nsys", "trace": str(reports.source), "report_notes": reports.notes,
                 "um": um_summary(reports)})
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
