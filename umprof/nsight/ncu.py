"""Nsight Compute's measured sectors beside the sector model's prediction (``umprof run --ncu``).

After the timed run, umprof runs every case once more under ``ncu`` (a separate process:
Nsight Compute replays each kernel to collect its counters, far too slow to time). That
pass records which case launched which kernel, in launch order; ncu's CSV lists the kernels
in the same order, so each case gets the sum of its kernels' counters:

* ``l1tex__t_sectors_pipe_lsu_mem_global_op_{ld,st}.sum``: 32-byte sectors of global loads / stores;
* ``l1tex__t_requests_pipe_lsu_mem_global_op_{ld,st}.sum``: the warp-level requests.

From them: ``ncu_{ld,st}_sectors_per_req`` and ``ncu_{ld,st}_eff`` = the bytes the case must
move ÷ (sectors × 32), the measured counterpart of ``pred_{ld,st}_eff``. Clocks are left
alone (``--clock-control none``): umprof never changes a GPU's clocks.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

from umprof.nsight.tools import find_tool

ENV_NCU = "UMPROF_NCU"
_INSTALL_GLOBS = ("/opt/nvidia/nsight-compute/*/ncu", "/usr/local/cuda/bin/ncu", "/usr/local/cuda/nsight-compute*/ncu")
METRICS = {
    "ld_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "ld_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "st_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "st_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
}
NOT_COUNTED = ("launch.cu:empty",)  # kernels a case launches beside the one it measures
SECTOR = 32


def find_ncu(explicit: str | None = None) -> str:
    """The ncu executable: ``--ncu PATH``, then $UMPROF_NCU, then PATH, then usual installs."""
    return find_tool("ncu", explicit, ENV_NCU, _INSTALL_GLOBS,
                     "Nsight Compute's ncu was not found: put it on PATH, set UMPROF_NCU or pass --ncu-path PATH "
                     "(https://developer.nvidia.com/nsight-compute)", option="--ncu-path")


def profile_command(ncu: str, log: Path, command: list[str]) -> list[str]:
    """The ncu command line that collects :data:`METRICS` for every kernel of ``command`` as CSV into ``log``."""
    return [ncu, "--metrics", ",".join(METRICS.values()), "--csv", "--page", "raw", "--print-units", "base",
            "--clock-control", "none", "--log-file", str(log), *command]


def parse_csv(text: str) -> list[dict]:
    """ncu's raw-page CSV → one dict per profiled kernel, in launch order: name and the
    :data:`METRICS` (under their short names) as numbers. ncu's own ``==PROF==`` lines and the
    units row are skipped; thousands separators are accepted."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    if not lines:
        return []
    rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    out = []
    for r in rows:
        if not (r.get("ID") or "").strip().isdigit():
            continue  # the units row
        k = {"id": int(r["ID"]), "kernel": r.get("Kernel Name", "")}
        for short, metric in METRICS.items():
            k[short] = _number(r.get(metric))
        out.append(k)
    return sorted(out, key=lambda k: k["id"])


def _number(v) -> float:
    if v is None or str(v).strip() in ("", "n/a"):
        return math.nan
    return float(str(v).replace(",", ""))


def attribute(kernels: list[dict], launches: list[dict]) -> dict[tuple[str, str], dict]:
    """Sum the kernels' counters per case. ``launches`` is the pass' log: per case, in order,
    ``{"scenario", "case", "kernels": [ref, ...]}``; ``kernels`` is :func:`parse_csv`'s list.
    Raises ValueError when the counts disagree (the order would mean nothing)."""
    expected = sum(len(c["kernels"]) for c in launches)
    if expected != len(kernels):
        raise ValueError(f"ncu profiled {len(kernels)} kernels, the cases launched {expected}")
    out, i = {}, 0
    for c in launches:
        acc = {short: 0.0 for short in METRICS}
        for ref in c["kernels"]:
            k = kernels[i]
            i += 1
            symbol = ref.partition(":")[2]
            if symbol and symbol not in k["kernel"]:
                raise ValueError(f"launch {i}: the case launched {symbol}, ncu profiled {k['kernel']}")
            if ref in NOT_COUNTED:
                continue
            for short in METRICS:
                acc[short] += k[short]
        out[(c["scenario"], c["case"])] = acc
    return out


def columns(counts: dict, useful_ld_bytes: float, useful_st_bytes: float) -> dict:
    """Result columns from one case's counters and the bytes its kernel must move."""
    out = {f"ncu_{k}": v for k, v in counts.items()}
    for side, useful in (("ld", useful_ld_bytes), ("st", useful_st_bytes)):
        sectors, requests = counts[f"{side}_sectors"], counts[f"{side}_requests"]
        out[f"ncu_{side}_sectors_per_req"] = sectors / requests if requests else math.nan
        out[f"ncu_{side}_eff"] = useful / (sectors * SECTOR) if sectors and useful else math.nan
    return out


def merge(frame, per_case: dict):
    """Add the ncu columns to the kernel rows of ``frame`` (a ResultSet's frame), in place."""
    for (scenario, case), counts in per_case.items():
        mask = (frame["scenario"] == scenario) & (frame["case"] == case) & (frame["phase"] == "kernel")
        if not mask.any():
            continue
        row = frame[mask].iloc[0]
        cols = columns(counts, _or0(row.get("useful_ld_bytes")), _or0(row.get("useful_st_bytes")))
        for k, v in cols.items():
            frame.loc[mask, k] = v
    return frame


def _or0(v) -> float:
    return 0.0 if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


def write_launches(path: Path, launches: list[dict]) -> None:
    Path(path).write_text(json.dumps(launches, indent=1), encoding="utf-8")


def read_launches(path: Path) -> list[dict]:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def add_counters(rs, ncu: str, child: list[str], output, console=None):
    """Run ``child`` (an untimed `umprof ncu-pass` of the same cases, which logs its launches)
    under Nsight Compute, join its counters to the cases and save them into ``rs`` at ``output``.
    Returns ``rs``; a failed pass raises, naming the log, with the timed results already saved."""
    import subprocess

    from umprof.core.errors import UmprofError

    out = Path(output)
    log, launches = out.with_name(out.stem + "-ncu.csv"), out.with_name(out.stem + "-ncu-launches.json")
    cmd = profile_command(ncu, log, child + ["--launches", str(launches)])
    if console is not None:
        console.print(f"Nsight Compute pass: {' '.join(cmd)}")
    proc = subprocess.run(cmd)
    if proc.returncode != 0 or not log.is_file() or not launches.is_file():
        raise UmprofError(f"the Nsight Compute pass failed (exit {proc.returncode}); see {log}. "
                          f"The timed results are saved in {output}")
    try:
        per_case = attribute(parse_csv(log.read_text(encoding="utf-8", errors="replace")), read_launches(launches))
    except ValueError as e:
        raise UmprofError(f"{log}: {e}; the timed results are saved in {output}") from None
    merge(rs.frame, per_case)
    rs.save(output)
    if console is not None:
        console.print(f"Nsight Compute counters for {len(per_case)} cases added (raw: {log})")
    return rs
