"""Nsight Systems from Python: find ``nsys``, the command line that profiles a command with it, and its
version. Its traces are read with SQL (:mod:`umprof.nsight.trace_db`), not through ``nsys stats``.
"""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

from umprof.core.errors import UsageError
from umprof.nsight.tools import find_tool

ENV_NSYS = "UMPROF_NSYS"
# Where Nsight Systems installs itself, and where Nsight Compute carries its own copy.
_INSTALL_GLOBS = (
    "/opt/nvidia/nsight-systems/*/bin/nsys",
    "/opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys",
    "/usr/local/cuda/bin/nsys",
    "/usr/local/cuda/nsight-systems*/bin/nsys",
)


def find_nsys(explicit: str | None = None) -> str:
    """The nsys executable: ``--nsys PATH``, then $UMPROF_NSYS, then PATH, then usual installs."""
    return find_tool("nsys", explicit, ENV_NSYS, _INSTALL_GLOBS,
                     "Nsight Systems' nsys was not found: put it on PATH, set UMPROF_NSYS or pass --nsys PATH "
                     "(https://developer.nvidia.com/nsight-systems)")


def nsys_version(nsys: str) -> str:
    out = subprocess.run([nsys, "--version"], capture_output=True, text=True, timeout=60)
    return (out.stdout or out.stderr).strip()


# what a trace records: CUDA calls and NVTX ranges; the OS runtime's calls (``osrt``) where asked; CUDA graphs node
# by node, so that the copies and kernels a graph launches are in the trace as any others
TRACED_APIS = ("cuda", "nvtx")
OS_RUNTIME = "osrt"
GRAPH_NODES = "--cuda-graph-trace=node"
# unified memory's page faults: costly to trace, so asked for only where the program uses managed memory
UM_FAULT_OPTIONS = ("--cuda-um-cpu-page-faults=true", "--cuda-um-gpu-page-faults=true")
# torch's operators as NVTX ranges, as torch.autograd.profiler.emit_nvtx names them: nsys injects the annotation
# into a PyTorch program, so that its trace shows what the host runs between the CUDA calls
TORCH_OPS_OPTION = "--pytorch=autograd-nvtx"


def profile_options(um_faults: bool = True, os_runtime: bool = False, torch_ops: bool = False) -> list[str]:
    """``nsys profile``'s tracing options: CUDA and NVTX (and the OS runtime's calls where ``os_runtime``), CUDA
    graphs node by node, unified memory's page faults where ``um_faults``, torch's operators where ``torch_ops``."""
    apis = ",".join(TRACED_APIS + ((OS_RUNTIME,) if os_runtime else ()))
    return ["-t", apis, GRAPH_NODES, *(UM_FAULT_OPTIONS if um_faults else ()),
            *((TORCH_OPS_OPTION,) if torch_ops else ())]


def profile_command(nsys: str, output, command: list[str], um_faults: bool = True,
                    os_runtime: bool = False, torch_ops: bool = False) -> list[str]:
    """The ``nsys profile`` command line that traces ``command`` into ``output`` (a report's path without its
    ``.nsys-rep``) with :func:`profile_options`, overwriting an earlier report of that name; the output last
    before the command."""
    return [nsys, "profile", *profile_options(um_faults, os_runtime, torch_ops), "--force-overwrite", "true",
            "-o", str(output), *command]


@functools.cache
def traces_torch_ops(nsys: str) -> bool:
    """Whether this nsys can annotate a PyTorch program's operators (its ``profile`` takes ``--pytorch``; older
    releases do not)."""
    try:
        out = subprocess.run([nsys, "profile", "--help"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return TORCH_OPS_OPTION.split("=")[0] in out.stdout + out.stderr


def last_line(text: str) -> str:
    """A tool's output's last non-empty line ('no output' where there is none): what went wrong, in one line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else "no output"


def refuse_existing(paths, force: bool) -> None:
    """A UsageError for the first of ``paths`` that exists, unless ``force``."""
    for p in paths:
        if Path(p).exists() and not force:
            raise UsageError(f"{p}: already exists; pass --force to overwrite it or -o to write elsewhere")
