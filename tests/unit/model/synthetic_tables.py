"""TraceTables of one process and thread built in memory from rows of calls, copies and kernels: the small loops the
advice's rules are tested on, without a trace file."""

from pathlib import Path

import pandas as pd

from umprof.nsight.tables import TraceTables


def _empty(cols: list[str]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype="int64") for c in cols})


def tables(calls: list[tuple], copies: list[tuple], kernels: list[tuple], nbytes: int, direction: str) -> TraceTables:
    """One process's (pid 1, thread 1, GPU 0, stream 7) trace: ``calls`` as (start, end, correlation, name),
    ``copies`` and ``kernels`` as (start, end, correlation) in ns; every copy of ``nbytes`` in ``direction``
    ("h2d" or "d2h") to or from pageable memory."""
    call = pd.DataFrame(calls, columns=["start", "end", "correlation", "name"]).assign(pid=1, tid=1)
    src, dst = ("pageable", "device") if direction == "h2d" else ("device", "pageable")
    cp = pd.DataFrame(copies, columns=["start", "end", "correlation"]).assign(
        pid=1, device=0, stream=7, bytes=nbytes, kind=direction, src=src, dst=dst, cause=0, address=0)
    k = pd.DataFrame(kernels, columns=["start", "end", "correlation"]).assign(pid=1, device=0, stream=7, name="k")
    return TraceTables(path=Path("synthetic"), gpus=pd.DataFrame([{"device": 0, "name": "GPU", "memory_bytes": 0}]),
                       processes=pd.DataFrame([{"pid": 1, "name": "app", "program": "app"}]), copies=cp,
                       kernels=k if kernels else _empty(["start", "end", "pid", "device", "stream", "correlation"]),
                       memsets=_empty(["start", "end", "pid", "device", "stream", "correlation", "bytes"]),
                       calls=call, gpu_faults=_empty(["start", "end", "pid", "device", "faults", "address"]),
                       cpu_faults=_empty(["start", "pid", "address"]), ranges=_empty(["start", "end", "pid", "tid"]))
