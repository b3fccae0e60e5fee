"""Which host and which rank of a job wrote a trace, and whether its ranks synchronise.

A reader that knows (torch.profiler's JSON names its rank and world size, and the host) sets ``host``,
``rank`` and ``world_size`` on its tables; an Nsight Systems export keeps the host's name and the
profiled process's environment in ``TARGET_INFO_SYSTEM_ENV`` (its ``Hostname`` row and the launcher's
``RANK`` / ``OMPI_COMM_WORLD_RANK`` / ``PMI_RANK`` / ``SLURM_PROCID`` variables); failing both, the
number a per-rank file name ends in (``nsys profile -o report_%q{RANK}`` writes ``report_3.nsys-rep``).
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import NamedTuple

# what launchers export, in the order they are trusted: torchrun, Open MPI, MPICH / Intel MPI, Slurm
RANK_VARIABLES = ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID")
SIZE_VARIABLES = ("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS")
HOST_KEYS = ("hostname", "host name", "host")
FILE_RANK = re.compile(r"(\d+)$")  # report_3, rank-12, trace.7
# a collective's kernel (NCCL's, RCCL's): where ranks run them, each step waits for the slowest rank
COLLECTIVE_KERNEL = re.compile(r"nccl|rccl|allreduce|all_reduce|allgather|reducescatter", re.IGNORECASE)


class RankInfo(NamedTuple):
    host: str  # "" where the trace does not say
    rank: int | None
    world_size: int | None
    how: str  # where rank and host were read: 'trace', 'environment', 'file name', ''


def rank_info(tables) -> RankInfo:
    """The host and rank of the trace ``tables`` were read from (see the module's docstring)."""
    host, rank, size = getattr(tables, "host", None), getattr(tables, "rank", None), getattr(tables, "world_size", None)
    if rank is not None:
        return RankInfo(str(host or ""), int(rank), None if size is None else int(size), "trace")
    path = Path(tables.path)
    env = _system_env(path) if path.suffix == ".sqlite" else {}
    host = host or next((v for k, v in env.items() if k.lower() in HOST_KEYS), "")
    variables = _variables(env)
    rank = next((int(variables[k]) for k in RANK_VARIABLES if variables.get(k, "").isdigit()), None)
    size = next((int(variables[k]) for k in SIZE_VARIABLES if variables.get(k, "").isdigit()), None)
    if rank is not None:
        return RankInfo(str(host), rank, size, "environment")
    m = FILE_RANK.search(path.name.split(".")[0])
    return RankInfo(str(host), int(m.group(1)) if m else None, size, "file name" if m else "")


def collective_kernels(tables) -> int:
    """How many kernels of the trace are collectives (NCCL's and the like)."""
    names = tables.kernels["name"] if "name" in tables.kernels else []
    return int(sum(1 for n in names if isinstance(n, str) and COLLECTIVE_KERNEL.search(n)))


def _system_env(path: Path) -> dict[str, str]:
    """``TARGET_INFO_SYSTEM_ENV`` as name → value (its text columns, or string ids through ``StringIds``)."""
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error:
        return {}
    try:
        cols = [r[1] for r in con.execute("PRAGMA table_info(TARGET_INFO_SYSTEM_ENV)")]
        if {"name", "value"} <= set(cols):
            rows = con.execute("SELECT name, value FROM TARGET_INFO_SYSTEM_ENV").fetchall()
        elif {"nameId", "valueId"} <= set(cols):
            rows = con.execute("SELECT n.value, v.value FROM TARGET_INFO_SYSTEM_ENV e JOIN StringIds n ON "
                               "n.id = e.nameId JOIN StringIds v ON v.id = e.valueId").fetchall()
        else:
            rows = []
        return {str(k): str(v) for k, v in rows if k is not None and v is not None}
    except sqlite3.Error:
        return {}
    finally:
        con.close()


def _variables(env: dict[str, str]) -> dict[str, str]:
    """The launcher's variables: rows named as one, and those inside the process's whole environment."""
    out = {k: v.strip() for k, v in env.items() if k in RANK_VARIABLES + SIZE_VARIABLES}
    for text in env.values():
        if "=" not in text:
            continue
        for line in re.split(r"[\n\x00;]", text):
            k, _, v = line.partition("=")
            if k.strip() in RANK_VARIABLES + SIZE_VARIABLES:
                out.setdefault(k.strip(), v.strip())
    return out
