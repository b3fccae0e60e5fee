"""The one model of a trace that every reader fills (Nsight Systems' SQLite export, torch.profiler's JSON) and
everything after reading shares: one DataFrame per kind of record, times in nanoseconds on the trace's clock."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

GRAPH_COLUMNS = ["start", "end", "device", "stream", "correlation", "pid"]  # TraceTables.graphs


@dataclass
class TraceTables:
    """What a trace holds, one DataFrame per kind of record (times in ns)."""

    path: Path
    gpus: pd.DataFrame  # device, name, memory_bytes
    processes: pd.DataFrame  # pid, name
    copies: pd.DataFrame  # start, end, pid, device, stream, correlation, bytes, kind, src, dst, cause, address
    kernels: pd.DataFrame  # start, end, pid, device, stream, correlation, name
    memsets: pd.DataFrame  # start, end, pid, device, stream, correlation, bytes
    calls: pd.DataFrame  # start, end, pid, tid, correlation, name (CUDA runtime and driver API calls)
    gpu_faults: pd.DataFrame  # start, end, pid, device, faults, address
    cpu_faults: pd.DataFrame  # start, pid, address
    # start, end, pid, tid, name: NVTX push/pop and start/end ranges; a torch.profiler trace's CPU ops and annotations,
    # with their category in a column ``kind`` ("cpu_op", "user_annotation")
    ranges: pd.DataFrame
    notes: list = field(default_factory=list)
    # start, end, pid, device, stream, correlation: CUDA graph launches traced whole (nsys's default
    # --cuda-graph-trace=graph), whose copies and kernels the trace does not hold
    graphs: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=GRAPH_COLUMNS))
    source: str = "nsys"  # the reader that filled it: "nsys" (SQLite export) or "kineto" (torch.profiler JSON)
    host: str = ""  # the machine it was recorded on, where the trace names it
    rank: int | None = None  # a distributed job's rank and world size, where the trace records them
    world_size: int | None = None
    # where the reader read rank and world size: "trace" (the trace's own record, torch.profiler's distributedInfo)
    # or "environment" (the launcher's variables an Nsight Systems export keeps)
    rank_from: str = "trace"

    @property
    def has_cuda(self) -> bool:
        return bool(len(self.copies) or len(self.kernels) or len(self.memsets))
