"""What an application does with its data, read from its trace: transfer flows, its loop, its
unified memory, and the host-memory strategy it uses now.

From :class:`~umprof.nsight.trace_db.TraceTables`, per process and GPU:

* **flows**: its copies grouped by direction, host memory kind, size (a size made fewer than three times joins
  the others of its power-of-two range), stream, synchronous or not,
  and the enclosing NVTX range where there is one: count, bytes, time, achieved GB/s, and how
  much of their time overlapped kernels or copies the other way;
* **the loop**: the repeating pattern of the CUDA calls its host thread makes, and what each iteration
  does (:mod:`umprof.model.loops`);
* **unified memory**: migrations each way, GPU fault groups and faults, CPU faults, and whether
  prefetch or advice calls were made;
* **the strategy**: the one of umprof's that the application's data movement matches (pageable
  or pinned copies, those copies asynchronous over several streams (chunks over streams), managed
  memory on demand or prefetched, mapped host memory that kernels read in place).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

import numpy as np
import pandas as pd

from umprof.core.units import format_size
from umprof.model.directions import COPY_DIRECTIONS, HOST_ARRAY, UM_DIRECTIONS
from umprof.model.intervals import covered, latest_open, union
from umprof.model.loops import QUERY_CALL, Loop, find_loop
from umprof.nsight.nsys_import import unnumbered

# what a trace of CUDA graphs traced whole needs for their copies and kernels to be in it
GRAPH_NODES = "trace it again with `nsys profile --cuda-graph-trace=node -t cuda,nvtx ...`"
ZERO_COPY_CALLS = ("cudaHostGetDevicePointer", "cuMemHostGetDevicePointer", "cudaHostAlloc", "cuMemHostAlloc")
REGISTER_CALLS = ("cudaHostRegister", "cuMemHostRegister")
PREFETCH_CALLS = ("cudaMemPrefetchAsync", "cuMemPrefetchAsync")
ADVICE_CALLS = ("cudaMemAdvise", "cuMemAdvise")
MANAGED_CALLS = ("cudaMallocManaged", "cuMemAllocManaged")
PINNED_ALLOC_CALLS = ("cudaMallocHost", "cudaHostAlloc", "cuMemAllocHost", "cuMemHostAlloc")
# the calls that page-lock host memory or release what they locked
PIN_CALLS = PINNED_ALLOC_CALLS + REGISTER_CALLS + ("cudaFreeHost", "cuMemFreeHost", "cudaHostUnregister",
                                                   "cuMemHostUnregister")
SYNC_CALL = r"Synchronize"  # cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize, cuCtxSynchronize
# the driver's unit of managed memory (a VA block): its allocations are aligned to it
MANAGED_BLOCK = 2 << 20


class LoopPinning(NamedTuple):
    """A loop's calls that page-lock or release host memory: their seconds, count and names (sorted)."""

    seconds: float
    calls: int
    names: tuple


NO_PINNING = LoopPinning(0.0, 0, ())


class HostStaging(NamedTuple):
    """A loop's copies of pinned memory that its host fills or drains chunk by chunk: its copies through a bounce
    buffer (``host_staging_in_loop``)."""

    seconds: float  # the host's copies into and out of the buffer over the loop, estimated
    chunks: int  # the copies of the buffer in the loop
    chunk_bytes: int  # the largest chunk
    pooled: bool = False  # each copy a pool's buffer, filled just before it (``_pooled``), not a program's own


NO_STAGING = HostStaging(0.0, 0, 0)


class HostFaults(NamedTuple):
    """A loop's host stalls on managed pages that it faults back from the GPU (``host_fault_stalls``)."""

    seconds: float  # over the loop, as traced: in each stretch without GPU work, its first fault to its last
    stretches: int  # the stretches without GPU work that hold such faults


NO_HOST_FAULTS = HostFaults(0.0, 0)


@dataclass
class Application:
    """One process's work on one GPU, as its trace shows it."""

    pid: int
    name: str
    device: int
    gpu: str
    memory_bytes: int
    wall_s: float  # its first CUDA call to the end of its last GPU work or call
    copies: pd.DataFrame
    kernels: pd.DataFrame
    flows: pd.DataFrame
    loop: Loop | None
    um: dict
    calls: dict  # call name → count
    strategy: str  # what umprof calls its current way of moving data
    strategy_why: str
    allocation_s: float = 0.0  # its calls that allocate, pin, register and free memory
    allocation_calls: int = 0  # how many of them it made
    notes: list = field(default_factory=list)
    graph_launches: int = 0  # CUDA graph launches traced whole: their copies and kernels are not in the trace
    # its calls that page-lock and release host memory inside its loop, where it makes them every iteration
    # (``pinning_in_loop``; part of allocation_s and allocation_calls)
    loop_pinning: LoopPinning = NO_PINNING
    # its copies of pinned memory that its host fills or drains chunk by chunk, a bounce buffer between the data's
    # own memory and the GPU (``host_staging_in_loop``)
    host_staging: HostStaging = NO_STAGING
    # its host's stalls on managed pages faulting back from the GPU inside its loop (``host_fault_stalls``)
    host_faults: HostFaults = NO_HOST_FAULTS
    # the executable its main thread runs, where the trace names it and it differs from ``name`` (a Python script
    # started by its #! line is named as the script, its main thread as the interpreter)
    program: str = ""

    @property
    def pinning_in_loop_s(self) -> float:
        """Seconds of its calls that page-lock and release host memory every iteration of its loop."""
        return self.loop_pinning.seconds

    @property
    def pinning_in_loop_calls(self) -> int:
        """How many calls that page-lock and release host memory its loop makes."""
        return self.loop_pinning.calls

    @property
    def explicit_copies(self) -> pd.DataFrame:
        """Its copies each way (not unified memory's migrations)."""
        return self.copies[self.copies["direction"].isin(COPY_DIRECTIONS)]

    def explicit_copies_within(self, span: tuple[int, int] | None = None,
                               without: tuple[int, int] | None = None) -> pd.DataFrame:
        """Its copies each way starting within ``span`` (ns; all where None), not those starting within ``without``
        (a loop's lead, read on its own)."""
        c = self.explicit_copies
        if span is not None:
            c = c[(c["start"] >= span[0]) & (c["start"] <= span[1])]
        if without is not None:
            c = c[(c["start"] < without[0]) | (c["start"] > without[1])]
        return c

    def copies_issued_in_loop(self) -> pd.DataFrame:
        """Its copies each way whose call the host issued within its loop (all of them without a loop)."""
        c = self.explicit_copies
        if self.loop is None:
            return c
        return c[(c["call_start"] >= self.loop.span[0]) & (c["call_start"] <= self.loop.span[1])]

    def copies_waits_s(self, copies: pd.DataFrame) -> np.ndarray:
        """Seconds each of the given copies of its (``explicit_copies_within``) took, in their order: a synchronous
        copy from its call's start to the later of its call's end and its transfer's (the host waits that long: a
        pageable copy's staging and a small copy's latency lie outside the transfer itself), an asynchronous one its
        transfer; each less the time kernels ran within it (a copy queued behind a kernel waits for it: that is the
        kernel's time). Summed, they are the copies' time as the model prices it (several host threads' copies at
        once priced apart, by their overlap)."""
        c = copies
        start, end = c["start"].to_numpy(np.int64), c["end"].to_numpy(np.int64)
        if "call_start" in c:
            sync = c["sync"].to_numpy(bool)
            start = np.where(sync, np.minimum(start, c["call_start"].to_numpy(np.int64)), start)
            end = np.where(sync, np.maximum(end, c["call_end"].to_numpy(np.int64)), end)
        k = union(self.kernels["start"].to_numpy(np.int64), self.kernels["end"].to_numpy(np.int64))
        kernel_ns = covered(k, end) - covered(k, start)
        return np.clip(end - start - kernel_ns, 0, None) / 1e9

    @cached_property
    def totals(self) -> dict:
        """Over the whole run: its copies' bytes each way, time and count, its kernels' time and count, its wall time
        and unified memory's migrations each way. Worked out once: the copies, kernels and unified memory it is read
        from are the trace's, never changed."""
        explicit, k = self.explicit_copies, self.kernels
        return {"h2d_bytes": int(explicit.loc[explicit["direction"] == "h2d", "bytes"].sum()),
                "d2h_bytes": int(explicit.loc[explicit["direction"] == "d2h", "bytes"].sum()),
                "copy_s": float(explicit["dur_s"].sum()), "copies": int(len(explicit)),
                "kernel_s": float(k["dur_s"].sum()), "kernels": int(len(k)), "wall_s": self.wall_s,
                "um_h2d_bytes": int(self.um["h2d_bytes"]), "um_d2h_bytes": int(self.um["d2h_bytes"])}

    @cached_property
    def waited_on_copies_s(self) -> float:
        """Its copies' time as it waits on them (``copies_waits_s`` of all its copies each way: a synchronous copy its
        call's, whose staging and latency lie outside the transfer, an asynchronous one its transfer), or their
        transfers' where that is more. Worked out once, as ``totals``."""
        c = self.explicit_copies
        return max(self.totals["copy_s"], float(self.copies_waits_s(c).sum()) if len(c) else 0.0)


def applications(t) -> list[Application]:
    """Every process × GPU of the trace that ran CUDA work, the one with the most GPU time first."""
    gpu_ops = pd.concat([t.copies[["pid", "device", "start", "end"]], t.kernels[["pid", "device", "start", "end"]],
                         t.memsets[["pid", "device", "start", "end"]]], ignore_index=True)
    if gpu_ops.empty:
        return []
    busy = (gpu_ops["end"] - gpu_ops["start"]).groupby([gpu_ops["pid"], gpu_ops["device"]]).sum()
    return [_application(t, int(pid), int(dev)) for (pid, dev) in busy.sort_values(ascending=False).index]


def advised(apps: list[Application], all_processes: bool) -> list[Application]:
    """Of a trace's applications (:func:`applications`, the busiest first), those to advise: every one, or every GPU
    of the busiest process (a program that drives several GPUs is advised on each). The notes say which processes
    are left out, and for a process on several GPUs whether each one's copies ran beside another GPU's: where they
    never did, the program saves the sum of the GPUs' savings."""
    shown = apps if all_processes else [a for a in apps if a.pid == apps[0].pid]
    left = [] if all_processes else [a for a in apps if a.pid != apps[0].pid]
    if left:
        named = ", ".join(f"{a.name} (pid {a.pid}) on GPU {a.device}" for a in left[:4]) + (", ..." if len(left) > 4 else "")
        shown[0].notes.append(f"the trace holds {len(left)} more process{'es' if len(left) > 1 else ''} with CUDA work, "
                              f"less busy: {named}; `--all` (all_processes=True) advises them too")
    by_pid: dict[int, list[Application]] = {}
    for a in shown:
        by_pid.setdefault(a.pid, []).append(a)
    for same in by_pid.values():
        if len(same) > 1:
            _note_gpus_of_one_process(same)
    return shown


def _note_gpus_of_one_process(same: list[Application]) -> None:
    """Each GPU's note: how many GPUs its process drives, and how much of its copies' time ran beside theirs."""
    devices = ", ".join(str(a.device) for a in sorted(same, key=lambda a: a.device))
    for a in same:
        mine = a.explicit_copies
        theirs = pd.concat([b.explicit_copies for b in same if b is not a])
        dur = (mine["end"] - mine["start"]).to_numpy()
        shared = float((overlap_share(mine, theirs) * dur).sum() / dur.sum()) if dur.sum() > 0 else 0.0
        # copies that never ran beside another GPU's save their own time whatever the others do: the GPUs' copies,
        # issued one after another from one host thread, each wait for none of the others'
        how = ("; its copies ran beside no other GPU's, so the program's saving is the sum of the GPUs'"
               if shared < 0.05 else f"; {shared:.0%} of its copies' time ran beside another GPU's copies, so the "
               "program's saving may be less than the sum of the GPUs'")
        a.notes.append(f"its process drives {len(same)} GPUs ({devices}), each advised on its own copies and "
                       f"kernels{how}")


# the fields torch.autograd.profiler.emit_nvtx (and nsys's --pytorch=autograd-nvtx) writes after an operator's name
# in its range: 'aten::copy_, seq = 3, op_id = 6'
EMIT_NVTX_FIELDS = re.compile(r",\s*(?:seq|op_id|stashed seq|sizes|input_op_ids)\s*=.*$")


def range_label(name: str) -> str:
    """A range's name as the copies in it are grouped by: an operator's emit_nvtx range as its operator, any other
    without a trailing number ('iteration 3' and 'iteration 4' are one 'iteration')."""
    operator = EMIT_NVTX_FIELDS.sub("", name)
    return operator if operator != name else unnumbered(name)


def _application(t, pid: int, device: int) -> Application:
    copies = t.copies[(t.copies["pid"] == pid) & (t.copies["device"] == device)].copy()
    kernels = t.kernels[(t.kernels["pid"] == pid) & (t.kernels["device"] == device)].copy()
    calls = t.calls[t.calls["pid"] == pid].sort_values("start", kind="stable")
    for df in (copies, kernels):
        df["dur_s"] = (df["end"] - df["start"]) / 1e9
    copies = _with_calls(copies, calls)
    kernels["call_start"] = _call_starts(kernels, calls)
    copies["direction"] = copies["kind"].replace(HOST_ARRAY)
    copies["host_kind"] = np.where(copies["direction"].isin(["h2d", "um_h2d"]), copies["src"],
                                   np.where(copies["direction"].isin(["d2h", "um_d2h"]), copies["dst"], "device"))
    ranges = pd.Series(_enclosing_ranges(copies, t.ranges[t.ranges["pid"] == pid]), index=copies.index, dtype=object)
    copies["range"] = ranges.map({r: range_label(r) for r in ranges.unique()})
    gpus = t.gpus.set_index("device") if len(t.gpus) else pd.DataFrame()
    gpu = str(gpus.loc[device, "name"]) if device in gpus.index else "unknown GPU"
    memory = int(gpus.loc[device, "memory_bytes"]) if device in gpus.index and pd.notna(gpus.loc[device, "memory_bytes"]) else 0
    procs = t.processes.drop_duplicates("pid").set_index("pid")
    name, program = (str(procs.at[pid, "name"]), str(procs.at[pid, "program"] or "")) if pid in procs.index \
        else (f"pid {pid}", "")
    starts = [x for x in (calls["start"].min(), copies["start"].min(), kernels["start"].min()) if pd.notna(x)]
    ends = [x for x in (calls["end"].max(), copies["end"].max(), kernels["end"].max()) if pd.notna(x)]
    wall = (max(ends) - min(starts)) / 1e9 if starts and ends else 0.0
    cpu_faults = t.cpu_faults[t.cpu_faults["pid"] == pid]
    um = _unified_memory(t, pid, device, copies, calls, cpu_faults)
    counts = calls["name"].value_counts().to_dict()
    app = Application(pid=pid, name=name, device=device, gpu=gpu, memory_bytes=memory, wall_s=wall, copies=copies,
                      kernels=kernels, flows=flows(copies, kernels), loop=None, um=um, calls=counts,
                      strategy="", strategy_why="", allocation_s=allocation_s(calls),
                      allocation_calls=int(calls["name"].isin(ALLOCATION_CALLS).sum()),
                      graph_launches=int(((t.graphs["pid"] == pid) & (t.graphs["device"] == device)).sum()),
                      program=program if program != name else "")
    app.loop = find_loop(calls, copies, kernels)
    app.loop_pinning = pinning_in_loop(calls, app.loop)
    app.host_staging = host_staging_in_loop(calls, copies, kernels, app.loop)
    app.host_faults = host_fault_stalls(copies, kernels, cpu_faults, app.loop)
    app.strategy, app.strategy_why = current_strategy(app)
    return app


def _with_calls(copies: pd.DataFrame, calls: pd.DataFrame) -> pd.DataFrame:
    """Each copy with the call that made it (name, host thread, when): synchronous unless an Async call or
    a CUDA graph's launch (traced node by node, a graph's copies carry its launch's correlation)."""
    c = calls[["correlation", "name", "tid", "start", "end"]].rename(columns={"name": "call", "start": "call_start",
                                                                              "end": "call_end"})
    c = c.dropna(subset=["correlation"]).drop_duplicates("correlation")
    out = copies.merge(c, on="correlation", how="left")
    out["call"] = out["call"].fillna("")
    out["sync"] = ~out["call"].str.contains("Async|GraphLaunch") & (out["call"] != "")
    out["call_start"] = out["call_start"].fillna(out["start"])
    out["call_end"] = out["call_end"].fillna(out["end"])
    waited = out["correlation"].map(_waits_ended(calls)).fillna(out["call_end"]).astype(np.int64)
    out["waited_end"] = np.maximum(out["call_end"].astype(np.int64), waited)
    return out


def _waits_ended(calls: pd.DataFrame) -> pd.Series:
    """By a call's correlation: the end of the synchronisation its thread called next, where the next call (queries
    aside) is one: the host waited from the call's start to then (PyTorch's copy from pageable memory is a
    cudaMemcpyAsync and a cudaStreamSynchronize)."""
    c = calls[~calls["name"].str.match(QUERY_CALL)].sort_values(["tid", "start"], kind="stable")
    nxt = c.groupby("tid", sort=False)[["name", "end"]].shift(-1)
    ended = nxt["end"].where(nxt["name"].str.contains(SYNC_CALL, na=False))
    by = pd.Series(ended.to_numpy(), index=c["correlation"].to_numpy()).dropna()
    return by[~by.index.isna() & ~by.index.duplicated()]


def _call_starts(ops: pd.DataFrame, calls: pd.DataFrame) -> pd.Series:
    """When the host issued each kernel (its launch call's start; its own start where no call is traced), as
    ``_with_calls`` gives each copy (``call_start``)."""
    issued = calls.dropna(subset=["correlation"]).drop_duplicates("correlation").set_index("correlation")["start"]
    return ops["correlation"].map(issued).fillna(ops["start"])


def waited_on(copies: pd.DataFrame) -> np.ndarray:
    """Whether the host waited on each copy: a synchronous one, or one its thread synchronised on next (its
    ``waited_end`` past its call's end)."""
    return copies["sync"].to_numpy(bool) | (copies["waited_end"].to_numpy(np.int64)
                                             > copies["call_end"].to_numpy(np.int64))


def wait_calls(copies: pd.DataFrame) -> np.ndarray:
    """How many traced CUDA calls the host spent on each copy it waited on: the copy's, and a synchronisation of its
    own where it waited past the copy's call (each lengthened by the tracer: thresholds.TRACED_CALL_S)."""
    return 1 + (copies["waited_end"].to_numpy(np.int64) > copies["call_end"].to_numpy(np.int64))


def _enclosing_ranges(copies: pd.DataFrame, ranges: pd.DataFrame) -> list[str]:
    """The innermost NVTX range around each copy's call on its thread ('' where none is): of the ranges open at the
    call, the latest to start (``intervals.latest_open``)."""
    out = np.full(len(copies), "", dtype=object)
    if ranges.empty or copies.empty:
        return out.tolist()
    call_starts = copies["call_start"].to_numpy()
    for tid, rs in ranges.groupby("tid"):
        rs = rs.sort_values("start")
        mine = np.flatnonzero((copies["tid"] == tid).fillna(False).to_numpy(bool))  # a copy without its call: none
        at = latest_open(rs["start"].to_numpy(), rs["end"].to_numpy(), call_starts[mine])
        inside = at >= 0
        out[mine[inside]] = rs["name"].to_numpy()[at[inside]]
    return out.tolist()


def overlap_share(ops: pd.DataFrame, others: pd.DataFrame) -> np.ndarray:
    """For each op, the share of its time during which one of ``others`` ran."""
    if ops.empty:
        return np.array([])
    u = union(others["start"].to_numpy(np.int64), others["end"].to_numpy(np.int64))
    s, e = ops["start"].to_numpy(np.int64), ops["end"].to_numpy(np.int64)
    dur = np.maximum(e - s, 1)
    return (covered(u, e) - covered(u, s)) / dur


# what makes copies one flow: the same direction, host memory, size class (``size_classes``), stream, call
# (synchronous or not) and range
FLOW_KEYS = ["direction", "host_kind", "size_class", "stream", "sync", "range"]
# the keys a copy carries itself (``size_class`` is worked out from the copies that share these)
COPY_KEYS = [k for k in FLOW_KEYS if k != "size_class"]
RECURRING = 3  # copies of one size that make it a flow's own (fewer join the other sizes of their power-of-two range)
# ... and the share of the copies beside it (the same direction, host memory, stream, call and range) they must be: a
# loop over samples of many sizes (point clouds, sequences unpadded) repeats each size once an epoch, and a flow
# apiece would list thousands of flows of a few copies each
RECURRING_SHARE = 0.01


def size_classes(copies: pd.DataFrame) -> np.ndarray:
    """Each copy's size class, within the copies of its direction, host memory, stream, call and range: its size where
    at least RECURRING copies there, and RECURRING_SHARE of them, have that size, else its power-of-two range, as the
    negative of the range's lower bound, which no size is. A program whose copies change size every iteration (a
    server's loop over requests of many sizes) has a flow of each range rather than a flow for every one or two
    copies; a program's recurring sizes, and a copy alone in its range, keep their flows."""
    if copies.empty:
        return np.zeros(0, np.int64)
    nbytes = copies["bytes"].fillna(0).to_numpy(np.int64)  # a trace that does not give a copy's size: none
    made = copies.groupby(COPY_KEYS + ["bytes"], dropna=False, sort=False)["bytes"].transform("size").to_numpy()
    beside = copies.groupby(COPY_KEYS, dropna=False, sort=False)["bytes"].transform("size").to_numpy()
    recurs = (made >= RECURRING) & (made >= RECURRING_SHARE * beside)
    floor = np.left_shift(np.int64(1), np.floor(np.log2(np.maximum(nbytes, 1))).astype(np.int64))
    return np.where(recurs, nbytes, -floor)


def flow_ids(copies: pd.DataFrame) -> np.ndarray:
    """Each copy's flow (``FLOW_KEYS``), numbered in the order the flows first appear."""
    keyed = copies.assign(size_class=size_classes(copies))
    return keyed.groupby(FLOW_KEYS, dropna=False, sort=False).ngroup().to_numpy()


def flow_size(flow) -> str:
    """A flow's size in words: its copies' size, or their range where they differ (``flows``' min and max)."""
    lo, hi = int(flow["min_bytes"]), int(flow["max_bytes"])
    return format_size(lo) if lo == hi else f"{format_size(lo)}-{format_size(hi)}"


def flows(copies: pd.DataFrame, kernels: pd.DataFrame) -> pd.DataFrame:
    """The copies grouped into flows (see the module's docstring), the largest time first: each flow's keys, its
    copies' mean size (``bytes``) and their least and largest (``min_bytes``, ``max_bytes``: the same where every
    copy of the flow has one size), count, total bytes, time, rate and the share of its time overlapped."""
    cols = COPY_KEYS + ["bytes", "min_bytes", "max_bytes", "count", "total_bytes", "time_s", "bytes_per_s", "overlap"]
    c = copies[copies["direction"].isin(COPY_DIRECTIONS)]
    if c.empty:
        return pd.DataFrame(columns=cols)
    share = np.zeros(len(c))
    for d in COPY_DIRECTIONS:
        mine = (c["direction"] == d).to_numpy()
        other = c[c["direction"] != d]
        busy = pd.concat([kernels[["start", "end"]], other[["start", "end"]]], ignore_index=True)
        share[mine] = overlap_share(c[mine], busy)
    c = c.assign(overlapped_s=share * c["dur_s"].to_numpy(), size_class=size_classes(c))
    g = c.groupby(FLOW_KEYS, dropna=False)
    f = g.agg(count=("bytes", "size"), total_bytes=("bytes", "sum"), min_bytes=("bytes", "min"),
              max_bytes=("bytes", "max"), time_s=("dur_s", "sum"), overlapped_s=("overlapped_s", "sum")).reset_index()
    f["bytes"] = (f["total_bytes"] // f["count"]).astype(np.int64)
    f["bytes_per_s"] = f["total_bytes"] / f["time_s"].where(f["time_s"] > 0)
    f["overlap"] = f["overlapped_s"] / f["time_s"].where(f["time_s"] > 0)
    return f.sort_values("time_s", ascending=False, kind="stable")[cols].reset_index(drop=True)


ALLOCATION_CALLS = ("cudaMalloc", "cudaFree", "cuMemAlloc", "cuMemFree") + PIN_CALLS + MANAGED_CALLS


def allocation_s(calls: pd.DataFrame) -> float:
    """The host's time in the calls that allocate, pin, register and free memory. The process's first
    such call often creates its CUDA context too (140-160 ms on an H100 of 16 cores, 2026-11, where the same call
    next took 0.1 ms): where a later call of that name was made, the first is counted at its time."""
    mine = calls[calls["name"].isin(ALLOCATION_CALLS)].sort_values("start", kind="stable")
    times = ((mine["end"] - mine["start"]) / 1e9).to_numpy(float).copy()
    if len(mine) >= 2:
        later = np.flatnonzero(mine["name"].to_numpy()[1:] == mine["name"].iloc[0])
        if len(later):
            times[0] = min(times[0], times[1 + later[0]])
    return float(times.sum())


def pinning_in_loop(calls: pd.DataFrame, loop: Loop | None) -> LoopPinning:
    """The host's calls that page-lock or release host memory (``PIN_CALLS``) inside the loop, where there is about
    one or more an iteration (a helper that registers the buffer around each copy, a pinned buffer allocated for
    each frame); ``NO_PINNING`` where there are fewer (memory pinned once, before the loop). The calls before and
    after the loop are not among them, nor their names."""
    if loop is None or calls.empty:
        return NO_PINNING
    lo, hi = loop.span
    mine = calls[calls["name"].isin(PIN_CALLS) & (calls["start"] >= lo) & (calls["end"] <= hi)]
    # the loop's span starts at its first cut, which may come after the first iteration's first calls
    if len(mine) < max(2, loop.iterations - 1):
        return NO_PINNING
    return LoopPinning(float(((mine["end"] - mine["start"]) / 1e9).sum()), int(len(mine)),
                       tuple(sorted(set(mine["name"]))))


# A host's copy of memory into or out of a page-locked buffer on one thread: 8.2-10.2 GB/s on the H100's and
# H200's hosts (16 cores each, 2026-11-26: 10.2 GB/s from pageable into pinned memory, 8.4 GB/s in 8 MiB chunks
# of a bounce buffer). The host's time between two chunks of a bounce buffer is taken for such a copy where it
# moves the chunk at a rate within a factor of four of them: slower is a program computing each chunk (its work
# stays under any way), faster is no host copy at all.
HOST_COPY_RATES = (2.5e9, 40e9)
# A pool's buffer filled before its one copy: the host's time before the copy holds the program's own work too (a
# Python loop's indexing and calls), which stays under any way, so the fill is priced at most at the rate of a host
# copy into a pinned buffer chunk by chunk (8.4 GB/s on the H100's and H200's hosts, 2026-11-26)
POOL_FILL_RATE = 8.4e9


# the share of a loop's pinned bytes that must go through its runs of chunks for them to be how it moves its data (a
# bounce buffer); fewer are side copies beside copies from the data's own pinned memory (a PyTorch trainer's four
# chunks of 144 KiB beside 131 MiB of pinned batches)
STAGED_SHARE = 0.5


def host_staging_in_loop(calls: pd.DataFrame, copies: pd.DataFrame, kernels: pd.DataFrame,
                         loop: Loop | None) -> HostStaging:
    """A library helper that copies a caller's pageable buffer through a small pinned bounce buffer: for each chunk,
    the host copies it in (to the GPU) or out (from it), and the copy of the buffer waits for it. The trace shows
    pinned copies, one direction at a time, of one chunk's size, each over before the next is issued, with the host
    busy outside CUDA calls between them; what it does not show is the host's copy (memcpy is no CUDA call). Each
    run of two or more such chunks in the loop counts as one, where the host's time between its chunks
    (``_host_time_before``) moves a chunk at a host copy's rate (``HOST_COPY_RATES``) and there is about one run or
    more an iteration: the median time between its chunks for each of its chunks (the run's first chunk to the GPU,
    or last from it, has its host copy beside the program's other work; a chunk whose pages the host touches first
    takes longer, once, under any way).

    A run of one chunk (a buffer filled, then sent, a kernel between one and the next) is not counted: the host's
    time before it is all its work there, and a program that computes its batch into its own pinned memory fills
    it at a host copy's rate too (a table lookup and an add a word: 7.5 GB/s on the H100 of 2026-12-06, where a
    memcpy into pinned memory took 8.2-10.2 GB/s), which no trace tells from a copy out of other memory. Unless
    the copy's buffer is a pool's (``_pooled``): then the host's time before it is counted as its fill, at most the
    chunk at ``POOL_FILL_RATE``.
    Where the runs carry less than STAGED_SHARE of the loop's pinned bytes, they are not how it moves its data.
    ``NO_STAGING`` where there is no such pattern."""
    if loop is None or copies.empty:
        return NO_STAGING
    lo, hi = loop.span
    c = copies[copies["direction"].isin(COPY_DIRECTIONS) & (copies["call_start"] >= lo)
               & (copies["call_start"] <= hi)].sort_values(["tid", "call_start"], kind="stable")
    if not (c["host_kind"] == "pinned").any():
        return NO_STAGING
    cont = _continues_run(c, kernels)
    run = np.cumsum(~cont)
    alone = ~cont & np.append(~cont[1:], True) & _pooled(calls, c)  # a run of one chunk, a pool's buffer
    runs = pd.DataFrame({"run": run, "cont": cont, "gap": _host_time_before(calls, c, cont | alone),
                         "bytes": c["bytes"].to_numpy()})
    between = runs[runs["cont"] | alone].groupby("run")["gap"].median()
    if between.empty:
        return NO_STAGING
    per_run = runs.groupby("run").agg(chunks=("bytes", "size"), first=("bytes", "first"), largest=("bytes", "max"),
                                      total=("bytes", "sum"))
    per_run = per_run.loc[between.index].assign(median=between)
    rate = per_run["first"] / per_run["median"].where(per_run["median"] > 0)
    staged = per_run[(rate >= HOST_COPY_RATES[0]) & (rate <= HOST_COPY_RATES[1])]
    pinned_bytes = float(c.loc[c["host_kind"] == "pinned", "bytes"].sum())
    if len(staged) < max(2, loop.iterations - 1) or staged["total"].sum() < STAGED_SHARE * pinned_bytes:
        return NO_STAGING
    pool_fill = np.minimum(staged["median"], staged["first"] / POOL_FILL_RATE)
    fill = staged["median"].where(staged["chunks"] > 1, pool_fill)
    return HostStaging(float((fill * staged["chunks"]).sum()), int(staged["chunks"].sum()),
                       int(staged["largest"].max()), pooled=bool((staged["chunks"] == 1).all()))


# A pool's transfer buffer, watched until its copy has read it: the copy's thread creates an event and records it on
# the copy's stream right after the copy's call (CuPy's cupy.asarray / cupy.array of a numpy array fills a buffer of
# its pinned memory pool from the array, copies it, and records a new event to know when the buffer is free again)
POOLED_AFTER = (re.compile(r"^cu(?:da)?EventCreate"), re.compile(r"^cu(?:da)?EventRecord"))


def _pooled(calls: pd.DataFrame, c: pd.DataFrame) -> np.ndarray:
    """Whether each copy (pinned, to the GPU) is of a pool's transfer buffer that the host has just filled: its
    thread's next calls, queries aside, create an event and record it (``POOLED_AFTER``). A program's own pinned
    buffer needs no new event for each copy: it waits on its stream, or on events made once."""
    out = np.zeros(len(c), dtype=bool)
    tid, cs = c["tid"].to_numpy(), c["call_start"].to_numpy()
    eligible = ((c["host_kind"] == "pinned") & (c["direction"] == "h2d")).to_numpy()
    if not eligible.any():
        return out
    work = calls[~calls["name"].str.match(QUERY_CALL)].sort_values("start", kind="stable")  # once, for every thread
    for t in np.unique(tid[eligible]):
        th = work[work["tid"] == t]
        mine = np.flatnonzero(eligible & (tid == t))
        k = np.searchsorted(th["start"].to_numpy(), cs[mine], "left")  # each copy's own call
        follows = np.ones(len(mine), dtype=bool)
        for step, pattern in enumerate(POOLED_AFTER, start=1):
            matches = np.append(th["name"].str.match(pattern).to_numpy(bool), False)  # past the last call: none
            follows &= matches[np.minimum(k + step, len(th))]
        out[mine] = follows
    return out


def _continues_run(c: pd.DataFrame, kernels: pd.DataFrame) -> np.ndarray:
    """Whether each copy (sorted by thread and issue) continues the run of the copy before it: the same thread and
    way, pinned memory both, no larger a chunk, the one before over before this one is issued, and no kernel launched
    between them."""
    launches = np.sort(kernels["call_start"].to_numpy()) if len(kernels) else np.array([], dtype=np.int64)
    tid, cs, size = c["tid"].to_numpy(), c["call_start"].to_numpy(), c["bytes"].to_numpy()
    pinned, direction = (c["host_kind"] == "pinned").to_numpy(), c["direction"].to_numpy()
    cont = np.zeros(len(c), dtype=bool)
    cont[1:] = ((tid[1:] == tid[:-1]) & (direction[1:] == direction[:-1]) & pinned[1:] & pinned[:-1]
                & (size[1:] <= size[:-1]) & (c["end"].to_numpy()[:-1] <= cs[1:])
                & (np.searchsorted(launches, cs[1:], "left") == np.searchsorted(launches, cs[:-1], "right")))
    return cont


def _host_time_before(calls: pd.DataFrame, c: pd.DataFrame, which: np.ndarray) -> np.ndarray:
    """The host's seconds outside CUDA calls just before the call of each copy ``which`` marks (0 for the others):
    since the end of its thread's last call before it that is no query (``QUERY_CALL``: a framework's checks around
    its copy, cudaStreamIsCapturing, are no work of the host's), less the queries' own time."""
    gap = np.zeros(len(c))
    tid, cs = c["tid"].to_numpy(), c["call_start"].to_numpy()
    for t in np.unique(tid[which]):
        th = calls[calls["tid"] == t].sort_values("start", kind="stable")
        query = th["name"].str.match(QUERY_CALL).to_numpy(bool)
        starts, ends = th["start"].to_numpy(), th["end"].to_numpy()
        asked = np.concatenate([[0], np.cumsum(np.where(query, ends - starts, 0))])  # queries' time, by call
        work = np.flatnonzero(~query)
        mine = np.flatnonzero(which & (tid == t))
        if not len(work):
            continue
        k = np.searchsorted(starts[work], cs[mine], "left") - 1
        before = work[np.maximum(k, 0)]
        queried = asked[np.searchsorted(starts, cs[mine], "left")] - asked[before + 1]
        gap[mine] = np.where(k >= 0, np.maximum(0, cs[mine] - ends[before] - queried) / 1e9, 0.0)
    return gap


def host_fault_stalls(copies: pd.DataFrame, kernels: pd.DataFrame, cpu_faults: pd.DataFrame,
                      loop: Loop | None) -> HostFaults:
    """The loop's host stalls on managed pages faulting back from the GPU: in each stretch of the loop without GPU
    work (kernels, explicit copies) after its first kernel or copy, the time from its first CPU page fault or
    migration to the host to the end of its last. The host touching pages the GPU holds waits for each to come
    back, one fault at a time (a host sampling a managed array between kernels can spend nearly all of each stretch
    so: 96-116 ms of each 98-122 ms stretch in an H200 trace of 2026-11-27); where the GPU idles, nothing else of the
    program's CUDA work runs then. A trace without CPU page faults (nsys without ``--cuda-um-cpu-page-faults``)
    still has the migrations."""
    if loop is None:
        return NO_HOST_FAULTS
    lo, hi = loop.span
    back = copies[copies["direction"] == "um_d2h"]
    starts = np.concatenate([back["start"].to_numpy(np.int64), cpu_faults["start"].to_numpy(np.int64)])
    ends = np.concatenate([back["end"].to_numpy(np.int64), cpu_faults["start"].to_numpy(np.int64)])
    inside = (starts >= lo) & (starts <= hi)
    starts, ends = starts[inside], np.minimum(ends[inside], hi)
    if not len(starts):
        return NO_HOST_FAULTS
    work = pd.concat([copies.loc[copies["direction"].isin(COPY_DIRECTIONS), ["start", "end"]],
                      kernels[["start", "end"]]])
    us, ue, _ = union(work["start"].to_numpy(np.int64), work["end"].to_numpy(np.int64))
    if not len(us):
        return NO_HOST_FAULTS
    # the stretch an event falls in: after the i-th piece of GPU work. Events during GPU work are its own (a kernel's
    # evictions), not the host's; before the first, the host's first write of pages never touched (priced apart)
    i = np.searchsorted(us, starts, side="right") - 1
    keep = (i >= 0) & (starts >= ue[np.maximum(i, 0)])
    i, starts, ends = i[keep], starts[keep], ends[keep]
    if not len(i):
        return NO_HOST_FAULTS
    gaps, of = np.unique(i, return_inverse=True)
    begin = np.full(len(gaps), np.iinfo(np.int64).max)
    np.minimum.at(begin, of, starts)
    finish = np.zeros(len(gaps), np.int64)
    np.maximum.at(finish, of, ends)
    # no stretch runs past the next piece of GPU work
    nxt = np.where(gaps + 1 < len(us), us[np.minimum(gaps + 1, len(us) - 1)], hi)
    finish = np.minimum(finish, nxt)
    return HostFaults(float(np.maximum(finish - begin, 0).sum()) / 1e9, int(len(gaps)))


def managed_footprint(addresses: np.ndarray, sizes: np.ndarray, faults: np.ndarray) -> int:
    """The managed memory a run used: the pages its migrations moved (each counted once), and every
    ``MANAGED_BLOCK`` block that its migrations and page faults (``faults``: their addresses) touched whose
    neighbour they touched too, whole (part of an allocation larger than a block; a lone block counts what
    migrated of it).

    A trace does not hold every migration: a kernel that reads all of a 256 MiB managed buffer had its
    migrations cover 61-156 MiB of it in six H200 traces, while its faults (the host's, as it wrote the
    buffer, and the GPU's) touched every 2 MiB block of it on each. The driver manages managed memory in
    blocks of 2 MiB (its allocations are aligned to them), so a block touched beside another touched one is
    taken as used whole."""
    if len(addresses) == 0 and len(faults) == 0:
        return 0
    us, ue, _ = union(addresses, addresses + sizes)
    touched = np.unique(np.concatenate([addresses // MANAGED_BLOCK, (addresses + np.maximum(sizes, 1) - 1)
                                        // MANAGED_BLOCK, faults // MANAGED_BLOCK]))
    inner = np.zeros(len(touched), bool)
    if len(touched) > 1:
        gap = np.diff(touched) == 1
        inner[1:] |= gap
        inner[:-1] |= gap
    whole = touched[inner]
    # what migrated within the blocks counted whole is in them already; the rest counts as it migrated
    inside = np.isin(us // MANAGED_BLOCK, whole) & np.isin((ue - 1) // MANAGED_BLOCK, whole)
    return int(len(whole)) * MANAGED_BLOCK + int((ue - us)[~inside].sum())


def _unified_memory(t, pid: int, device: int, copies: pd.DataFrame, calls: pd.DataFrame,
                    cpu_faults: pd.DataFrame) -> dict:
    um = copies[copies["direction"].isin(UM_DIRECTIONS)]
    gf = t.gpu_faults[(t.gpu_faults["pid"] == pid) & (t.gpu_faults["device"] == device)]
    names = set(calls["name"].unique())
    placed = um.dropna(subset=["address"])
    footprint = managed_footprint(pd.to_numeric(placed["address"]).to_numpy(np.int64),
                                  placed["bytes"].to_numpy(np.int64),
                                  np.concatenate([pd.to_numeric(df["address"], errors="coerce").dropna()
                                                  .to_numpy(np.int64) for df in (gf, cpu_faults)]))
    return {"h2d_bytes": int(um.loc[um["direction"] == "um_h2d", "bytes"].sum()), "footprint_bytes": footprint,
            "d2h_bytes": int(um.loc[um["direction"] == "um_d2h", "bytes"].sum()),
            "h2d_migrations": int((um["direction"] == "um_h2d").sum()),
            "d2h_migrations": int((um["direction"] == "um_d2h").sum()),
            "migration_s": float(um["dur_s"].sum()),
            "gpu_fault_groups": int(len(gf)), "gpu_faults": int(pd.to_numeric(gf["faults"], errors="coerce").fillna(0).sum()),
            "cpu_faults": int(len(cpu_faults)),
            "managed": bool(names & set(MANAGED_CALLS)) or bool(len(um)),
            "prefetch": bool(names & set(PREFETCH_CALLS)), "advice": bool(names & set(ADVICE_CALLS))}


# -- the strategy it uses now ---------------------------------------------------------------

# A stream whose asynchronous copies move less than this share of the busiest stream's is a side copy's, not a chunk's
# of a pipeline: a pipeline spreads its chunks over its streams in turn, each stream an equal share (8 chunks over
# 4 streams, a quarter each), where a side copy is a small result read back or a table sent once
SIDE_STREAM = 0.1


def current_strategy(app: Application) -> tuple[str, str]:
    """(umprof's name for how the application moves its data now, why that name): page-locked memory that the host
    fills and drains chunk by chunk (``Application.host_staging``) is named a bounce buffer."""
    strategy, why = _strategy_by_memory(app)
    h = app.host_staging
    if h.seconds and strategy in ("pinned", "pageable-registered"):  # cudaMallocHost or cudaHostRegister
        why += (f", a memory pool's buffers: the host copies each array (up to {format_size(h.chunk_bytes)}) into a "
                "pinned buffer of the pool before its copy" if h.pooled else
                f", a bounce buffer: the host copies its data through it in {format_size(h.chunk_bytes)} chunks")
    return strategy, why


def _strategy_by_memory(app: Application) -> tuple[str, str]:
    """How the application moves its data now, by the memory its copies or migrations use and the calls it makes (see
    ``current_strategy``)."""
    c = app.explicit_copies
    um, calls = app.um, set(app.calls)
    if len(c):
        kinds = c.groupby("host_kind")["bytes"].sum()
        kind = str(kinds.idxmax())
        if kind == "pageable":
            return "pageable", f"{_share(kinds, 'pageable')} of the copied bytes come from or go to pageable memory"
        if kind in ("pinned", "managed"):
            asynchronous = c[~c["sync"]]
            streams = _chunk_streams(asynchronous)
            if streams >= 2 and asynchronous["bytes"].sum() >= c["bytes"].sum() / 2:
                return "pinned-pipelined", (f"pinned copies, most of their bytes asynchronous on {streams} streams: "
                                            "chunks over streams")
            if kind == "pinned" and calls & set(REGISTER_CALLS) and not calls & set(PINNED_ALLOC_CALLS):
                # Nsight calls registered memory pinned: registering is how this application pinned it
                return "pageable-registered", (f"{_share(kinds, kind)} of the copied bytes are page-locked memory, "
                                               "registered in place (cudaHostRegister) and allocated no other way")
            return "pinned", f"{_share(kinds, kind)} of the copied bytes are pinned (page-locked) memory"
        return "pageable", f"copies of {kind} memory"
    if um["managed"]:
        if um["prefetch"]:
            return "managed-prefetch", "managed memory, prefetched (cudaMemPrefetchAsync calls)"
        why = "managed memory migrated on faults" + (" (with cudaMemAdvise calls)" if um["advice"] else ", no prefetch")
        return "managed", why
    if calls & set(REGISTER_CALLS):
        return "mapped", "no copies: registered host memory (cudaHostRegister) that kernels read in place"
    if calls & set(ZERO_COPY_CALLS):
        return "zero-copy", "no copies: mapped pinned memory (cudaHostAlloc) that kernels read in place"
    return "resident", "no copies and no managed memory: the data stays on the GPU"


def _chunk_streams(asynchronous: pd.DataFrame) -> int:
    """The streams that carry a pipeline's chunks: those with at least SIDE_STREAM of the busiest one's asynchronous
    bytes (a result read back on a stream of its own, a sum's 8 bytes beside 2 GiB of batches on another, makes no
    pipeline)."""
    per_stream = asynchronous.groupby("stream")["bytes"].sum()
    return int((per_stream >= SIDE_STREAM * per_stream.max()).sum()) if len(per_stream) else 0


def _share(kinds: pd.Series, kind: str) -> str:
    total = float(kinds.sum())
    return f"{kinds.get(kind, 0) / total:.0%}" if total > 0 else "all"


def fraction(part: float, whole: float) -> float:
    """``part / whole``, 0 where the whole is 0."""
    return float(part) / float(whole) if whole and not math.isnan(whole) else 0.0
