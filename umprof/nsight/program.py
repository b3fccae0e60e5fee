"""A program run by umprof itself: once under Nsight Systems for its trace, and several times untraced for its wall
time, which the trace (tracing slows a program down) does not give.

The trace records CUDA, NVTX and OS runtime calls (``-t cuda,nvtx,osrt``) and CUDA graphs node by node. Unified
memory's page-fault tracing is costly (a program on managed memory traced with it ran 1.28 s against 0.71 s
untraced), and says nothing of a program that uses no managed memory, so the program is traced without it first;
where that trace shows managed memory (a cudaMallocManaged / cuMemAllocManaged call, or a migration of managed
pages), it is traced again with ``--cuda-um-cpu-page-faults=true --cuda-um-gpu-page-faults=true``, and that is
said. A PyTorch program's first trace shows its CUDA calls but not which of torch's operators the host runs between
them, which pricing its host work on the GPU needs: where nsys can annotate them (``--pytorch``), it is traced again
with ``--pytorch=autograd-nvtx`` (torch's operators as NVTX ranges), and that is said. Each untraced run is timed by
the host's clock, from starting the program to its exit; a run that fails is one error with its exit code and the
last line of its error output.
"""

from __future__ import annotations

import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from umprof.core.errors import UmprofError, UsageError
from umprof.nsight.nsys import find_nsys, last_line, profile_command, profile_options, traces_torch_ops


class ProgramFailed(UmprofError):
    """The program umprof ran exited with an error: its exit code and its last line of error output."""

    exit_code = 1


@dataclass
class ProgramRuns:
    """What running a program gave: its trace (an SQLite export) and its untraced wall times."""

    command: list
    trace: Path | None  # None once a temporary trace is removed
    untraced_s: list = field(default_factory=list)  # each untraced run's wall time, by the host's clock
    traced_clock_s: float = 0.0  # the traced run's wall time by the host's clock, nsys's start and report included
    um_faults: bool = False  # traced again with unified memory's page faults
    managed_why: str = ""  # what in the first trace showed managed memory
    torch_ops: bool = False  # traced again with torch's operators as NVTX ranges
    torch_why: str = ""  # what in the first trace showed a PyTorch program without its operators

    @property
    def wall_s(self) -> float:
        """The program's untraced wall time: the median of its runs."""
        return float(statistics.median(self.untraced_s))

    def to_dict(self) -> dict:
        return {"command": list(self.command), "trace": str(self.trace) if self.trace else None,
                "untraced_s": list(self.untraced_s),
                "wall_s": self.wall_s, "traced_clock_s": self.traced_clock_s, "um_faults": self.um_faults,
                "managed": self.managed_why or None, "torch_ops": self.torch_ops}


def run_program(command: list, *, runs: int = 3, prefix: str | Path | None = None, nsys: str | None = None,
                say: Callable[[str], None] = lambda line: None,
                torch_without_ops: Callable[[Path], str] = lambda trace: "") -> ProgramRuns:
    """Trace ``command`` under nsys (again with unified-memory faults where it uses managed memory, and with torch's
    operators where ``torch_without_ops`` says what in the first trace shows a PyTorch program without them), then
    run it ``runs`` times untraced; ``prefix``: where its report and export are written (``PREFIX.nsys-rep``,
    ``PREFIX.sqlite``; in a new temporary folder, the caller's to remove, where None); ``say``: a progress line at
    each step."""
    if not command:
        raise UsageError("no program to run: give it after `--` (umprof advise -- ./app ARGS)")
    if runs < 1:
        raise UsageError(f"option '--runs': expected 1 or more untraced runs, got {runs}")
    exe = find_nsys(nsys)
    if prefix is None:
        prefix = Path(tempfile.mkdtemp(prefix="umprof-advise-")) / "trace"
    prefix = Path(str(prefix).removesuffix(".nsys-rep").removesuffix(".sqlite"))
    out = ProgramRuns(command=list(command), trace=Path(f"{prefix}.sqlite"))
    out.trace, out.traced_clock_s = _traced(exe, command, Path(prefix), False, False, say)
    out.managed_why = uses_managed_memory(out.trace)
    out.torch_why = torch_without_ops(out.trace)
    if out.torch_why and not traces_torch_ops(exe):
        say(f"the trace shows a PyTorch program ({out.torch_why}) but not its operators, and this nsys cannot "
            "annotate them (no --pytorch): its host work is not priced on the GPU")
        out.torch_why = ""
    if out.managed_why or out.torch_why:
        out.um_faults, out.torch_ops = bool(out.managed_why), bool(out.torch_why)
        shows, records = zip(*_retraced(out))
        say(f"the trace shows {' and '.join(shows)}: tracing it again with {' and '.join(records)}")
        out.trace, out.traced_clock_s = _traced(exe, command, Path(prefix), out.um_faults, out.torch_ops, say)
    for i in range(runs):
        out.untraced_s.append(_untraced(command, i + 1, runs))
        say(f"untraced run {i + 1} of {runs}: {out.untraced_s[-1]:.3f} s")
    return out


def _retraced(out: ProgramRuns) -> list[tuple[str, str]]:
    """Each reason the program is traced again, in words: what the first trace showed, and what the second records
    for it."""
    reasons = [(out.managed_why, f"managed memory ({out.managed_why})", "unified-memory page faults"),
               (out.torch_why, f"a PyTorch program ({out.torch_why}) without its operators",
                "torch's operators as NVTX ranges")]
    return [(shows, records) for why, shows, records in reasons if why]


def _traced(exe: str, command: list, prefix: Path, um_faults: bool, torch_ops: bool, say) -> tuple[Path, float]:
    """Run the program under nsys into ``prefix``.nsys-rep, export it to ``prefix``.sqlite: the export and the
    run's wall time by the host's clock."""
    from umprof.nsight.trace_db import export_sqlite

    report = prefix.with_name(prefix.name + ".nsys-rep")
    options = profile_options(um_faults, os_runtime=True, torch_ops=torch_ops)
    cmd = profile_command(exe, prefix, command, um_faults, os_runtime=True, torch_ops=torch_ops)
    say(f"tracing {' '.join(command)} under nsys ({' '.join(options)})")
    t0 = time.perf_counter()
    proc = _run(cmd, command[0], "its traced run")
    took = time.perf_counter() - t0
    if not report.is_file():
        raise ProgramFailed(f"{command[0]}: nsys wrote no report {report} ({last_line(proc.stderr)})")
    say(f"traced run: {took:.2f} s (nsys's start and its report included)")
    Path(f"{prefix}.sqlite").unlink(missing_ok=True)  # an export of an earlier report of that name
    return export_sqlite(report, exe), took


def _untraced(command: list, run: int, runs: int) -> float:
    t0 = time.perf_counter()
    _run(command, command[0], f"its untraced run {run} of {runs}", output=subprocess.DEVNULL)
    return time.perf_counter() - t0


def _run(cmd: list, program: str, what: str, output=subprocess.PIPE) -> subprocess.CompletedProcess:
    """Run ``cmd``; a ProgramFailed naming the ``program``, ``what`` run, its exit code and last error line where
    it fails, a UsageError where it cannot be started."""
    try:
        proc = subprocess.run(cmd, stdout=output, stderr=subprocess.PIPE, text=True, errors="replace")
    except OSError as e:
        raise UsageError(f"{cmd[0]}: could not be run ({e.strerror or e})") from None
    if proc.returncode != 0:
        raise ProgramFailed(f"{program}: {what} exited with code {proc.returncode}: {last_line(proc.stderr or '')}")
    return proc


def uses_managed_memory(sqlite: Path) -> str:
    """What in an Nsight Systems export shows managed memory: a call that allocates it, or a migration of managed
    pages ('' where nothing does). Asked of the export with SQL, not read whole."""
    import sqlite3

    from umprof.nsight.trace_db import _api_name

    con = sqlite3.connect(f"file:{sqlite}?mode=ro", uri=True)
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if {"CUPTI_ACTIVITY_KIND_RUNTIME", "StringIds"} <= tables:
            hit = con.execute("SELECT s.value FROM StringIds s WHERE (s.value LIKE 'cudaMallocManaged%' OR s.value "
                              "LIKE 'cuMemAllocManaged%') AND EXISTS (SELECT 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
                              "WHERE r.nameId = s.id) LIMIT 1").fetchone()
            if hit:
                return f"{_api_name(hit[0])} calls"
        if "CUPTI_ACTIVITY_KIND_MEMCPY" in tables:
            unified = _unified_copy_kinds(con, tables)
            if unified and con.execute(f"SELECT 1 FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind IN "
                                       f"({', '.join(map(str, unified))}) LIMIT 1").fetchone():
                return "migrations of managed pages"
        return ""
    finally:
        con.close()


def _unified_copy_kinds(con, tables: set) -> list:
    """The copy kinds that are managed memory's migrations, as the export's ENUM table names them, else CUPTI's."""
    if "ENUM_CUDA_MEMCPY_OPER" in tables:
        return [int(i) for i, name in con.execute("SELECT id, name FROM ENUM_CUDA_MEMCPY_OPER")
                if "UNIFIED" in str(name).upper()]
    from umprof.nsight.trace_db import COPY_KINDS

    return [k for k, v in COPY_KINDS.items() if v.startswith("um_")]  # CUPTI's unified-memory kinds
