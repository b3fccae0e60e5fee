"""Which host and which rank of a job wrote a trace, and whether its ranks synchronise.

Each reader sets ``host``, ``rank`` and ``world_size`` on its tables where the trace says them, and ``rank_from``,
where it read them: torch.profiler's JSON names its rank and world size (``distributedInfo``) and the host
('trace'); an Nsight Systems export keeps the host's name and the profiled process's environment in
``TARGET_INFO_SYSTEM_ENV`` (its ``Hostname`` row and the launcher's ``RANK`` / ``OMPI_COMM_WORLD_RANK`` /
``PMI_RANK`` / ``SLURM_PROCID`` variables: 'environment', read by :func:`launcher_of` as the export is read).
Failing both, the number a per-rank file name ends in (``nsys profile -o report_%q{RANK}`` writes
``report_3.nsys-rep``). ``LOCAL_RANK`` is not a rank of the job: each host's ranks count from 0 again.
"""

from __future__ import annotations

import re
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
    """The host and rank of the trace ``tables`` were read from, as its reader read them, else its file name's
    rank (see the module's docstring)."""
    host, size = str(tables.host or ""), tables.world_size
    size = None if size is None else int(size)
    if tables.rank is not None:
        return RankInfo(host, int(tables.rank), size, tables.rank_from)
    m = FILE_RANK.search(Path(tables.path).name.split(".")[0])
    return RankInfo(host, int(m.group(1)) if m else None, size, "file name" if m else "")


def launcher_of(env: dict[str, str]) -> tuple[str, int | None, int | None]:
    """The host, rank and world size an Nsight Systems export's system environment (``TARGET_INFO_SYSTEM_ENV``, name
    → value) names; "" or None for what it does not."""
    host = next((v for k, v in env.items() if k.lower() in HOST_KEYS), "")
    variables = _variables(env)
    rank = next((int(variables[k]) for k in RANK_VARIABLES if variables.get(k, "").isdigit()), None)
    size = next((int(variables[k]) for k in SIZE_VARIABLES if variables.get(k, "").isdigit()), None)
    return str(host), rank, size


def collective_kernels(tables) -> int:
    """How many kernels of the trace are collectives (NCCL's and the like)."""
    names = tables.kernels["name"] if "name" in tables.kernels else []
    return int(sum(1 for n in names if isinstance(n, str) and COLLECTIVE_KERNEL.search(n)))


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
