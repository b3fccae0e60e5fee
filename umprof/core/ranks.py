"""Runs of several processes (``mpirun -n N umprof run ...`` or ``srun``): which rank this
process is, which GPU it takes, where it writes, and how rank 0 merges the ranks' files.

A launcher is recognised by its environment (Open MPI, MPICH/Hydra, PMIx, Slurm, MVAPICH)
with more than one process; then mpi4py (the ``mpi`` extra) is needed, and its absence is one
line saying so. Each rank writes ``<output stem>.rank<R><suffix>`` as its cases finish (nothing
measured is lost if another rank dies); at the end rank 0 merges them into the output, every
row tagged with its host, rank and device. The merge itself needs no MPI.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass, field
from pathlib import Path

from umprof.core.errors import UmprofError

# (rank, size, local rank) variables of each launcher, first match wins
LAUNCHERS = (
    ("Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"),
    ("MPICH (Hydra)", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"),
    ("PMIx", "PMIX_RANK", "PMIX_SIZE", "PMIX_LOCAL_RANK"),
    ("MVAPICH", "MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_LOCAL_RANK"),
    ("Slurm (srun)", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"),
)
MPI_HINT = "pip install 'umprof[mpi]' (mpi4py; with an MPI library such as Open MPI, or pip install mpich)"


class MpiUnavailable(UmprofError):
    """Launched by an MPI launcher (or asked for with --mpi) but mpi4py cannot be used."""

    exit_code = 3


def launcher(environ=None) -> tuple[str, int, int, int | None] | None:
    """(launcher name, rank, size, local rank or None) when this process is one of several a
    launcher started; None for a lone process."""
    env = os.environ if environ is None else environ
    for name, rank_var, size_var, local_var in LAUNCHERS:
        if rank_var in env and size_var in env:
            try:
                rank, size = int(env[rank_var]), int(env[size_var])
                local = int(env[local_var]) if local_var in env else None
            except ValueError:
                continue
            if size > 1:
                return name, rank, size, local
    return None


@dataclass
class World:
    """This process among the run's processes; a lone process is rank 0 of 1, no MPI."""

    rank: int = 0
    size: int = 1
    local_rank: int = 0
    host: str = field(default_factory=platform.node)
    launcher: str | None = None
    comm: object = None  # mpi4py's COMM_WORLD when size > 1

    @property
    def several(self) -> bool:
        return self.size > 1

    def barrier(self) -> None:
        if self.comm is not None:
            self.comm.Barrier()

    def gather(self, obj) -> list | None:
        """Every rank's ``obj`` at rank 0 (None elsewhere); a lone process gets ``[obj]``."""
        return [obj] if self.comm is None else self.comm.gather(obj, root=0)

    def bcast(self, obj):
        return obj if self.comm is None else self.comm.bcast(obj, root=0)


def join(mode: str = "auto", environ=None) -> World:
    """This process' World. ``mode``: 'auto' (MPI when a launcher started several processes),
    'on' (MPI required), 'off' (a lone process whatever the environment says)."""
    found = launcher(environ)
    if mode == "off" or (mode == "auto" and found is None):
        return World()
    try:
        from mpi4py import MPI
    except ImportError as e:
        why = f"started by {found[0]} as rank {found[1]} of {found[2]}" if found else "--mpi was given"
        raise MpiUnavailable(f"{why}, but mpi4py cannot be imported ({e}): {MPI_HINT}") from None
    except Exception as e:  # mpi4py present, its MPI library missing or broken
        raise MpiUnavailable(f"mpi4py could not start MPI ({type(e).__name__}: {e}): {MPI_HINT}") from None
    comm = MPI.COMM_WORLD
    # the ranks sharing this node, whatever the launcher calls them: the GPU each one takes
    local = comm.Split_type(MPI.COMM_TYPE_SHARED).Get_rank()
    return World(rank=comm.Get_rank(), size=comm.Get_size(), local_rank=local, host=MPI.Get_processor_name(),
                 launcher=found[0] if found else "MPI", comm=comm)


def rank_path(output: str | Path, rank: int) -> Path:
    """Where rank ``rank`` writes: ``out.parquet`` → ``out.rank1.parquet``."""
    p = Path(output)
    return p.with_name(f"{p.stem}.rank{rank}{p.suffix}")
