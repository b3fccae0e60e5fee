"""Nsight Systems from Python: find ``nsys``, profile a command, export and read its reports.

``nsys stats --format csv --output PREFIX`` writes one ``PREFIX_<report>.csv`` per report.
Report names changed between nsys versions (``gpukernsum`` became ``cuda_gpu_kern_sum`` in
2023), and so did some column headers; :data:`REPORTS` lists every name a report has had
and :func:`normalize_columns` gives columns one spelling. A report that comes back empty
(nsys prints "SKIPPED: ... does not contain ..." when the trace has no such data) is kept
as ``None`` with a note saying so, never silently dropped.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from umprof.core.errors import ToolUnavailable, UsageError
from umprof.nsight.tools import find_tool

ENV_NSYS = "UMPROF_NSYS"
# Where Nsight Systems installs itself, and where Nsight Compute carries its own copy.
_INSTALL_GLOBS = (
    "/opt/nvidia/nsight-systems/*/bin/nsys",
    "/opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys",
    "/usr/local/cuda/bin/nsys",
    "/usr/local/cuda/nsight-systems*/bin/nsys",
)

# Logical report → the names it has had, newest first.
REPORTS: dict[str, tuple[str, ...]] = {
    "cuda_gpu_mem_time_sum": ("cuda_gpu_mem_time_sum", "gpumemtimesum"),
    "cuda_gpu_mem_size_sum": ("cuda_gpu_mem_size_sum", "gpumemsizesum"),
    "cuda_gpu_kern_sum": ("cuda_gpu_kern_sum", "gpukernsum"),
    "cuda_gpu_trace": ("cuda_gpu_trace", "gputrace"),
    "nvtx_sum": ("nvtx_sum", "nvtxsum"),
    "nvtx_pushpop_trace": ("nvtx_pushpop_trace", "nvtxpptrace"),
    "nvtx_gpu_proj_sum": ("nvtx_gpu_proj_sum",),
    "nvtx_gpu_proj_trace": ("nvtx_gpu_proj_trace",),
    "um_sum": ("um_sum",),
    "um_total_sum": ("um_total_sum",),
    "um_cpu_page_faults_sum": ("um_cpu_page_faults_sum",),
}
# What umprof reads for a phase breakdown; the others are shown as they are.
IMPORT_REPORTS = tuple(REPORTS)

# Older headers → today's, after normalisation (see normalize_columns).
COLUMN_ALIASES = {
    "average": "avg_ns", "minimum": "min_ns", "maximum": "max_ns", "stddev": "stddev_ns", "median": "med_ns",
    "total_time": "total_time_ns", "calls": "count", "operations": "count", "num_calls": "count",
}


def find_nsys(explicit: str | None = None) -> str:
    """The nsys executable: ``--nsys PATH``, then $UMPROF_NSYS, then PATH, then usual installs."""
    return find_tool("nsys", explicit, ENV_NSYS, _INSTALL_GLOBS,
                     "Nsight Systems' nsys was not found: put it on PATH, set UMPROF_NSYS or pass --nsys PATH "
                     "(https://developer.nvidia.com/nsight-systems)")


def nsys_version(nsys: str) -> str:
    out = subprocess.run([nsys, "--version"], capture_output=True, text=True, timeout=60)
    return (out.stdout or out.stderr).strip()


def profile_command(nsys: str, output: Path, command: list[str], um_faults: bool = True) -> list[str]:
    """The ``nsys profile`` command line that traces CUDA and NVTX (and UM faults) into ``output``."""
    cmd = [nsys, "profile", "-t", "cuda,nvtx", "-o", str(output), "--force-overwrite", "true"]
    if um_faults:
        cmd += ["--cuda-um-gpu-page-faults=true", "--cuda-um-cpu-page-faults=true"]
    return cmd + list(command)


def parse_help_reports(text: str) -> set[str]:
    """Report names from ``nsys stats --help-reports`` (lines like ``  name[:arg] -- Title``)."""
    names = set()
    for line in text.splitlines():
        m = re.match(r"^\s{1,8}([a-z][a-z0-9_]*)(?:\[[^\]]*\])*\s+--\s", line)
        if m:
            names.add(m.group(1))
    return names


def available_reports(nsys: str) -> set[str]:
    """Report names this nsys knows (empty when it would not say)."""
    try:
        out = subprocess.run([nsys, "stats", "--help-reports"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return set()
    return parse_help_reports(out.stdout + "\n" + out.stderr)


def resolve_names(wanted, available: set[str]) -> dict[str, str | None]:
    """Logical report → the name this nsys uses (None when it has none of them).

    With no list of available reports, today's names are assumed.
    """
    out = {}
    for logical in wanted:
        names = REPORTS.get(logical, (logical,))
        out[logical] = next((n for n in names if n in available), None) if available else names[0]
    return out


def normalize_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """One spelling for every header: ``Total Time (ns)`` → ``total_time_ns``, ``Time(%)`` → ``time_pct``."""
    def norm(c: str) -> str:
        s = str(c).strip().lower().replace("%", "pct")
        s = re.sub(r"[^a-z0-9]+", "_", s).strip("_")
        return COLUMN_ALIASES.get(s, s)

    return frame.rename(columns={c: norm(c) for c in frame.columns})


def read_csv_report(path: Path) -> pd.DataFrame | None:
    """One exported report as a DataFrame with normalised columns; None when it has no rows."""
    path = Path(path)
    if not path.is_file() or path.stat().st_size == 0:
        return None
    try:
        frame = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        return None
    except Exception as e:
        raise UsageError(f"{path}: could not read it as an nsys CSV report: {e}") from None
    if frame.empty:
        return None
    return normalize_columns(frame)


@dataclass
class Reports:
    """Reports of one trace: logical name → DataFrame (None: empty or not available), with notes."""

    source: str
    frames: dict = field(default_factory=dict)
    notes: dict = field(default_factory=dict)

    def get(self, name: str) -> pd.DataFrame | None:
        return self.frames.get(name)

    def note_lines(self) -> list[str]:
        return [f"{name}: {why}" for name, why in self.notes.items()]


def load_reports(prefix: str | Path, wanted=IMPORT_REPORTS) -> Reports:
    """Reports already exported as ``PREFIX_<name>.csv`` (under any of the names they have had)."""
    prefix = str(prefix)
    reports = Reports(source=prefix)
    for logical in wanted:
        paths = [Path(f"{prefix}_{name}.csv") for name in REPORTS.get(logical, (logical,))]
        path = next((p for p in paths if p.is_file()), None)
        if path is None:
            reports.frames[logical] = None
            reports.notes[logical] = "not exported"
            continue
        reports.frames[logical] = frame = read_csv_report(path)
        if frame is None:
            reports.notes[logical] = "empty: the trace has no data for it (nsys skipped it)"
    if all(f is None for f in reports.frames.values()) and not any(Path(prefix).parent.glob(Path(prefix).name + "_*.csv")):
        raise UsageError(f"{prefix}: no exported reports found (expected files named {Path(prefix).name}_<report>.csv)")
    return reports


def export_reports(nsys: str, trace: str | Path, prefix: str | Path, wanted=IMPORT_REPORTS) -> Reports:
    """Run ``nsys stats`` once for every wanted report this nsys has, then read the CSVs."""
    trace = Path(trace)
    if not trace.is_file():
        raise UsageError(f"{trace}: no such trace file")
    names = resolve_names(wanted, available_reports(nsys))
    runnable = [n for n in names.values() if n]
    prefix = Path(prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    for old in prefix.parent.glob(prefix.name + "_*.csv"):
        old.unlink()
    cmd = [nsys, "stats", "--force-export=true", "--format", "csv", "--output", str(prefix)]
    for n in runnable:
        cmd += ["--report", n]
    proc = subprocess.run(cmd + [str(trace)], capture_output=True, text=True)
    log = proc.stdout + proc.stderr
    if proc.returncode != 0 and not any(prefix.parent.glob(prefix.name + "_*.csv")):
        raise ToolUnavailable(f"nsys stats failed on {trace} (exit {proc.returncode}): {last_line(log)}")
    reports = load_reports(prefix, wanted)
    reports.source = str(trace)
    for logical, actual in names.items():
        if actual is None:
            reports.notes[logical] = "this nsys has no such report (under any name umprof knows)"
        elif reports.frames.get(logical) is None and "not exported" in reports.notes.get(logical, ""):
            reports.notes[logical] = f"nsys wrote nothing for {actual}: {last_line(log)}"
    return reports


def last_line(text: str) -> str:
    """A tool's output's last non-empty line ('no output' where there is none): what went wrong, in one line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else "no output"


def reports_from(trace: str | Path, nsys_path: str | None = None) -> tuple[Reports, str | None]:
    """The reports of a .nsys-rep / .sqlite trace (exported through nsys into a temporary
    folder), or of CSVs already exported under a PREFIX; with the nsys version used (None for CSVs)."""
    import tempfile

    path = Path(trace)
    if path.suffix in (".nsys-rep", ".qdrep", ".sqlite"):
        if not path.is_file():
            raise UsageError(f"{path}: no such trace file")
        nsys = find_nsys(nsys_path)
        with tempfile.TemporaryDirectory(prefix="umprof-nsys-") as tmp:
            reports = export_reports(nsys, path, Path(tmp) / "r")
        return reports, nsys_version(nsys)
    if list(path.parent.glob(path.name + "_*.csv")):
        return load_reports(path), None
    raise UsageError(f"{trace}: expected a .nsys-rep or .sqlite trace, or the prefix of CSV reports "
                     f"exported by `nsys stats --format csv --output PREFIX` (no {path.name}_*.csv found)")


def refuse_existing(paths, force: bool) -> None:
    """A UsageError for the first of ``paths`` that exists, unless ``force``."""
    for p in paths:
        if Path(p).exists() and not force:
            raise UsageError(f"{p}: already exists; pass --force to overwrite it or -o to write elsewhere")
