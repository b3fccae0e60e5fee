"""Advice for an application read from its trace: what its transfers should use, and what that saves.

The application's loop (:mod:`umprof.model.application`) becomes umprof's workload: one buffer of
its inputs and outputs (each way, what a steady iteration copies or the largest single copy, a table
copied in once; for managed memory the pages its migrations moved), the share of it written by the
host and copied in each iteration,
the share copied back, what the kernels write, its copies' granularity (``copies``), its kernels'
own time per iteration (``kernel_s``, where its data was on the GPU) and its iterations. The
calibration of the trace's GPU predicts the loop under the strategy it uses now and under every
other; a strategy's predicted time is what the trace measured less the difference of the two
predictions, so that what the model does not see (context creation, the application's own host
work) cancels out; the application's own allocation and free (its calls that allocate, pin,
register and free memory, as the trace timed them, and the release of its malloc'd pages, which the
trace does not see) stand for the prediction's of its current way, and its host code's accesses to
pageable memory are priced as pinned memory's (``_host_now``). A program whose kernels read host
memory in place (IN_PLACE) makes no copies: its trace holds no bytes to price another way by, and
it is told so, with what bounds any other way's saving (its kernels' time and its allocation calls'),
and told to keep what it has where that is within the run's noise. A managed program's host is read as writing
no more an iteration than comes back to it. A loop of copies whose host thread does not touch what it copies is
also read as one pass over everything it copies, and the reading whose prediction of the run as it is comes nearer
its measured time is the one priced (``_reads_as_one_pass``); where the iterations stand and each copies out as much
as it copies in, the data is read as one dataset the loop carries out and back unchanged, and the ways whose pages stay
on the GPU are priced moving it once (``_round_trip``). A loop of copies before the loop (``Loop.lead``: a
dataset loaded chunk by chunk) is read as a workload of its own, and its time under each way joins the loop's.

The advice is the fastest strategy, or, where strategies are within the prediction's own error
of it (PREDICTION_ERROR), the one of them that changes least from what it has (ties.change_cost: a
program on managed memory changes least by another managed way), said as a tie. An
application written in Python (its process is a Python interpreter: pycuda, cuda-bindings) is told
its changes in those libraries' calls (PYTHON_CHANGES), and among its ties page-locking its arrays
in place counts as more change than allocating them pinned (ties.PYTHON_CHANGE_COST). Where
the best saving is within the loop's noise (NOISE), the application is told it is already near
its best; where the saving exceeds what copies and migrations take, where the rest comes from is
said, and where they are a small share of the run, the most any strategy could save. Each flow of
copies gets its own line where its memory or granularity costs time the calibration can price:
pageable copies pinned, many small copies batched.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import NamedTuple

import numpy as np
import pandas as pd

from umprof.core.units import format_rate, format_size, format_time
from umprof.measure import strategies
from umprof.measure.ops.lifecycle import PAGE_BYTES
from umprof.model.application import GRAPH_NODES, Application, flow_ids, flow_size, fraction
from umprof.model.predict import Calibration, Prediction
from umprof.model import ties
from umprof.model.calibration import HOST_STEPS, PARTS_UNMEASURED, kind
from umprof.model.workload import Workload

PREDICTION_ERROR = 0.10  # verification: median errors 5-15% per set on both GPUs; closer than this is a tie
NOISE = 0.05  # a saving under this share of the loop's measured time is not worth a change
# A program that allocates and frees many buffers (NVIDIA's UnifiedMemoryStreams: 275 calls, 120 buffers of managed
# memory, 27.5 ms on an H100 where one buffer was priced 2.1 ms) makes as many calls under any other way: beyond
# this many calls, what they take beyond the model's one buffer is priced the same under every way.
MANY_ALLOCATION_CALLS = 16
# the share of its priced host accesses below which a loop's host time outside CUDA calls says the host cannot be
# making them: the host's own speed moved 1.5x between processes on the lent machines (the advise guide), and
# the applications timed in every mode spent 0.8-2.4x their priced accesses outside CUDA calls
HOST_TIME_SHARE = 0.5
# the ways whose kernels read host memory in place, which a trace shows as kernels alone (no copies to measure)
IN_PLACE = ("zero-copy", "mapped")
# the share of its input that a loop must copy in every iteration for its launches to be read as passes over what it
# copies (_kernel_passes); less, and they step state kept on the GPU
STATE_SENT = 0.5
# what share of a host stall on managed pages faulting back that a trace shows the program spends without the trace:
# nsys tracing unified memory slows each fault. Measured on an H200 (580.159.04, 2026-12-01;
# benchmarks/host_touch.sh, results/host-touch/): the host touching a 256 MiB managed buffer the GPU held, a word
# every 64 KiB-2 MiB, took 12-35 µs a touch untraced and 16-70 µs traced, 0.32-0.73 of it (the median over six
# spacings, 0.50, is this figure; on 64 MiB at 4 KiB, 128 KiB and 2 MiB, 0.42-0.55). No H100 was measured.
TRACED_FAULT_SHARE = 0.50
# what share of the time a trace's kernels take faulting managed pages back (those the host touched since the last
# kernel) the program takes untraced. Measured by the same runs (benchmarks/host_touch.sh): the kernel that rewrites
# the buffer after the host's touches took 0.68-1.02 of its traced time untraced on 256 MiB over six spacings of
# 64 KiB-2 MiB (median 0.88) and 0.61-0.75 on 64 MiB at 4 KiB, 128 KiB and 2 MiB; the median of all nine, 0.75, is
# this figure (the 4 KiB spacing, a touch in every page, only the 64 MiB run measured). No H100 was measured.
TRACED_GPU_FAULT_SHARE = 0.75
# besides on-demand managed memory (managed, prefer-gpu), the way whose pages sit on the GPU after its kernels, where
# the host's touches fault them back (_keeps_stalls): accessed-by leaves pages where they are, but the GPU's access
# counters move those it keeps reading to it (particles, benchmarks/apps/unseen, measured 1.38-1.51x as written under
# accessed-by on all five leases that timed both, one H100's and four H200s' of 2026-11-27 and -12-01: it saved none
# of the host's stalls)
ACCESS_COUNTED = "managed-advise-accessed-by-gpu"
# how near an iteration's bytes out must be to its bytes in (a share of the larger) for a loop whose host does not
# touch what it moves to be read as carrying one dataset out and back again (_round_trip)
ROUND_TRIP = 0.10
# below this share of the buffer read back an iteration, a managed program told to copy is told to copy back that part
HOST_READS_PART = 0.5
# how the change says it (benchmarks/apps/judge.py finds the variant of an application that applies it by these words)
PART_BACK = "copy back only what the host reads"
SMALL_COPY = 256 * 1024  # copies this small, many to an iteration, pay their latency more than their bytes
# the share of a loop's copy time that its copies of SMALL_COPY or less may take for its pageable copies' traced time
# to stand for the model's price of them (_pageable_copies_s)
SMALL_SHARE = 0.05
# a flow of at least this many copies has later ones to tell its first copy's own first-use costs by
STEADY_COPIES = 3
MANY_COPIES = 16
# the calls that make managed memory prefetched or advised, said once for both ways in (CHANGES, FROM_MANAGED)
MANAGED_CALLS = {
    "managed-prefetch": "cudaMemPrefetchAsync to the GPU before the kernels and back to the host before the host "
                        "reads or rewrites them",
    "managed-advise-read-mostly": "cudaMemAdvise(..., cudaMemAdviseSetReadMostly, gpu): the GPU only reads it",
    "managed-advise-prefer-gpu": "cudaMemAdvise(..., cudaMemAdviseSetPreferredLocation, gpu)",
    "managed-advise-prefer-host": "cudaMemAdvise(..., cudaMemAdviseSetPreferredLocation, cudaCpuDeviceId)",
    "managed-advise-accessed-by-gpu": "cudaMemAdvise(..., cudaMemAdviseSetAccessedBy, gpu)",
}
STAGING_RING = ("copy through a ring of small pinned buffers (cudaMallocHost, 4 MiB each, two per thread): host "
                "threads near the GPU each fill one of theirs and start its cudaMemcpyAsync on the thread's own "
                "stream while the other is copied (an event per buffer)")
CHANGES = {
    "pageable": "keep malloc'd host buffers and cudaMemcpy",
    "pinned": "allocate the host buffers with cudaMallocHost (or cudaHostRegister the existing ones); keep the copies",
    "write-combined": "allocate the buffers the host only writes with cudaHostAlloc(..., cudaHostAllocWriteCombined); "
                      "keep the copies",
    "zero-copy": "allocate the host buffers with cudaHostAlloc(..., cudaHostAllocMapped) and give the kernels "
                 "cudaHostGetDevicePointer's pointers; drop the copies",
    "mapped": "cudaHostRegister(buffer, size, cudaHostRegisterMapped) the existing host buffers and give the kernels "
              "their device pointers; drop the copies",
    "managed": "one cudaMallocManaged buffer for host and GPU; drop the copies",
    "managed-prefetch": f"cudaMallocManaged buffers, {MANAGED_CALLS['managed-prefetch']}; drop the copies",
    **{way: f"cudaMallocManaged and {call}" for way, call in MANAGED_CALLS.items() if way != "managed-prefetch"},
    "pageable-registered": "cudaHostRegister the existing malloc'd buffers once (after malloc, before the loop; "
                           "cudaHostUnregister before free) and make the copies cudaMemcpyAsync",
    "pageable-staged": "keep the malloc'd buffers and " + STAGING_RING,
    "pinned-pipelined": "pinned host buffers, each iteration's copies and kernels in {chunks} (cudaMemcpyAsync and "
                        "kernels on each chunk's stream), the host writing the next chunk meanwhile",
    "system": "pass malloc'd memory to the kernels directly (HMM)",
}
# An application written with managed memory has neither malloc'd buffers nor copies: a way with copies replaces its
# cudaMallocManaged buffers with host and device buffers and the copies between them, and another managed way keeps
# them (it has no copies to drop)
MANAGED_REPLACED = "replace the cudaMallocManaged buffers with "
FROM_MANAGED = {
    "pageable": MANAGED_REPLACED + "malloc'd host buffers and cudaMalloc'd device buffers, cudaMemcpy in before the "
                                   "kernels and back after them",
    "pinned": MANAGED_REPLACED + "host buffers from cudaMallocHost and device buffers from cudaMalloc, "
                                 "cudaMemcpyAsync in before the kernels and back after them",
    "write-combined": MANAGED_REPLACED + "host buffers from cudaHostAlloc(..., cudaHostAllocWriteCombined) for what "
                                         "the host only writes (cudaMallocHost for what it reads) and device buffers "
                                         "from cudaMalloc, cudaMemcpyAsync in before the kernels and back after them",
    "zero-copy": MANAGED_REPLACED + "cudaHostAlloc(..., cudaHostAllocMapped) and give the kernels "
                                    "cudaHostGetDevicePointer's pointers",
    "mapped": MANAGED_REPLACED + "malloc'd ones, cudaHostRegister(buffer, size, cudaHostRegisterMapped) once, and "
                                 "give the kernels their device pointers",
    "managed": "keep the cudaMallocManaged buffers and take out their prefetches and advice",
    **{way: f"keep the cudaMallocManaged buffers; {call}" for way, call in MANAGED_CALLS.items()},
    "pageable-registered": MANAGED_REPLACED + "malloc'd host buffers, cudaHostRegister'd once (cudaHostUnregister "
                                              "before free), and device buffers from cudaMalloc, cudaMemcpyAsync in "
                                              "before the kernels and back after them",
    **{way: MANAGED_REPLACED + "host buffers and device buffers (cudaMalloc); then " + then for way, then in (
        ("pageable-staged", STAGING_RING), ("pinned-pipelined", CHANGES["pinned-pipelined"]),
        ("system", CHANGES["system"]))},
}
# An application in Python allocates and copies through pycuda (or cuda-bindings): its changes in those calls.
PYTHON_CHANGES = {
    "pinned": "allocate the host arrays with pycuda.driver.pagelocked_empty; keep the copies",
    "write-combined": "allocate the arrays the host only writes with pycuda.driver.pagelocked_empty(..., "
                      "mem_flags=pycuda.driver.host_alloc_flags.WRITECOMBINED); keep the copies",
    "zero-copy": "allocate the host arrays with pycuda.driver.pagelocked_empty(..., "
                 "mem_flags=pycuda.driver.host_alloc_flags.DEVICEMAP) and give the kernels their "
                 "get_device_pointer(); drop the copies",
    "pageable-registered": "page-lock the existing numpy arrays once (cuda-bindings' cuMemHostRegister on each "
                           "array's ctypes.data, before the loop; cuMemHostUnregister before they are freed); keep the "
                           "copies",
    "managed": "allocate the arrays with pycuda.driver.managed_empty and pass them to the kernels; drop the copies",
    "mapped": "page-lock the existing numpy arrays once, mapped (cuda-bindings' cuMemHostRegister on each array's "
              "ctypes.data with CU_MEMHOSTREGISTER_DEVICEMAP), and give the kernels their cuMemHostGetDevicePointer; "
              "drop the copies",
    "managed-prefetch": "allocate the arrays with pycuda.driver.managed_empty, prefetch them to the GPU before the "
                        "kernels and back to the host before the host reads or rewrites them (cuda-bindings' "
                        "cuMemPrefetchAsync); drop the copies",
    **{f"managed-advise-{way}": "allocate the arrays with pycuda.driver.managed_empty and advise them once "
                                f"(cuda-bindings' cuMemAdvise with CU_MEM_ADVISE_SET_{advice}); drop the copies"
       for way, advice in (("read-mostly", "READ_MOSTLY, the GPU: it only reads them"),
                           ("prefer-gpu", "PREFERRED_LOCATION, the GPU"),
                           ("prefer-host", "PREFERRED_LOCATION, the host"),
                           ("accessed-by-gpu", "ACCESSED_BY, the GPU"))},
    "pageable-staged": "keep the numpy arrays and copy through a ring of small page-locked buffers "
                       "(pycuda.driver.pagelocked_empty, 4 MiB each, two per thread): threads each fill one of theirs "
                       "with numpy and start its memcpy_htod_async on their own stream while the other is copied (an "
                       "event per buffer)",
}
PYTHON_PROCESS = re.compile(r"python[0-9.]*")


def is_python(app: Application) -> bool:
    """Whether the application's process is a Python interpreter: its name in the trace, or its main thread's (a
    script started by its #! line, or by a wrapper that execs the interpreter, is named as the script)."""
    return any(PYTHON_PROCESS.fullmatch(PurePosixPath(str(n)).name) for n in (app.name, app.program) if n)


@dataclass
class Advice:
    """One change and what it saves: for the loop as a whole or one flow of copies."""

    flow: str  # 'loop', or the flow it is for ('h2d pageable 64MiB stream 7')
    strategy: str
    change: str
    now_s: float  # measured in the trace
    predicted_s: float
    saving_s: float
    tie: bool = False  # within the prediction's error of the best
    note: str = ""

    def to_dict(self) -> dict:
        return {"flow": self.flow, "strategy": self.strategy, "change": self.change, "now_s": self.now_s,
                "predicted_s": self.predicted_s, "saving_s": self.saving_s, "tie": self.tie, "note": self.note}


@dataclass
class AppAdvice:
    """What umprof advises for one application (a process on a GPU) of a trace."""

    app: Application
    calibration: str
    workload: Workload | None
    mapping: str  # how the workload was read from the trace, in words
    link_bytes_per_s: float = math.nan  # the PCIe link's ceiling per direction (the calibration's GPU)
    ranking: list[dict] = field(default_factory=list)  # every strategy: predicted and saving, fastest first
    excluded: dict = field(default_factory=dict)
    advice: list[Advice] = field(default_factory=list)  # the loop's first, then the flows'
    verdict: str = ""
    limits: list[str] = field(default_factory=list)

    @property
    def loop_advice(self) -> Advice | None:
        return next((a for a in self.advice if a.flow == "loop"), None)

    def to_dict(self) -> dict:
        a, loop = self.app, self.app.loop
        return {
            "process": {"pid": a.pid, "name": a.name}, "gpu": a.gpu, "device": a.device,
            "calibration": self.calibration, "strategy_now": a.strategy, "strategy_now_why": a.strategy_why,
            "totals": a.totals,
            "link_bytes_per_s": _plain(self.link_bytes_per_s),
            "flows": [dict({k: _plain(v) for k, v in r.items()}, link_share=_plain(r["bytes_per_s"] / self.link_bytes_per_s))
                      for r in a.flows.to_dict(orient="records")],
            "loop": None if loop is None else {
                "iterations": loop.iterations, "calls_per_iteration": loop.period, "cut_at": loop.anchor,
                "first_s": loop.first_s, "steady_s": loop.steady_s, "measured_s": _loop_s(a),
                "per_iteration": loop.per_iteration, "first": {k: _plain(v) for k, v in loop.first.items()},
                "before": None if loop.lead is None else {
                    "iterations": loop.lead.iterations, "calls_per_iteration": loop.lead.period,
                    "steady_s": loop.lead.steady_s, "per_iteration": loop.lead.per_iteration}},
            "unified_memory": a.um,
            "host_fault_stalls": {"traced_s": a.host_faults.seconds, "stretches": a.host_faults.stretches},
            "workload": None if self.workload is None else {"text": self.workload.describe(), "read_as": self.mapping,
                                                             **self.workload.__dict__},
            "ranking": self.ranking, "excluded": self.excluded,
            "advice": [x.to_dict() for x in self.advice], "verdict": self.verdict, "limits": self.limits,
            "notes": a.notes,
        }


def _plain(v):
    if isinstance(v, float) and math.isnan(v):
        return None
    return getattr(v, "item", lambda: v)()


def _loop_s(app: Application) -> float:
    """The loop's measured time: its first iteration's start to its last's end."""
    if app.loop is None:
        return app.wall_s
    return (app.loop.span[1] - app.loop.span[0]) / 1e9


def workload_of(app: Application, one_pass: bool = False, one_dataset: bool = False) -> tuple[Workload | None, str]:
    """The application's loop as umprof's workload, and how it was read (see the module's docstring);
    None where it moves no data umprof can model (no copies and no managed memory), with why. ``one_pass``:
    the whole run as one pass over everything it copies, its data written before and read after (a loop
    whose host does not touch what it moves: ``_reads_as_one_pass``); ``one_dataset`` (with ``one_pass``): over one
    dataset, what its steady iteration copies each way, that every iteration carries out and back again
    unchanged (``_round_trip``), every kernel of the run working on it."""
    loop, um = (None if one_pass else app.loop), app.um
    if loop is not None:
        per, big, its = loop.per_iteration, loop.largest, loop.iterations
    else:
        t = app.totals
        c = app.copies
        per = big = {"h2d_bytes": t["h2d_bytes"], "d2h_bytes": t["d2h_bytes"], "um_h2d_bytes": um["h2d_bytes"],
                     "um_d2h_bytes": um["d2h_bytes"], "kernel_s": t["kernel_s"],
                     "h2d_copies": int((c["direction"] == "h2d").sum()), "d2h_copies": int((c["direction"] == "d2h").sum())}
        if one_dataset:
            steady = app.loop.per_iteration
            per = big = dict(per, **{k: steady.get(k, 0) for k in ("h2d_bytes", "d2h_bytes", "h2d_copies",
                                                                     "d2h_copies")})
        its = 1
    explicit = big.get("h2d_bytes", 0) + big.get("d2h_bytes", 0) > 0
    prefix = "" if explicit else "um_"
    if explicit:  # what an iteration copies, or the largest single copy (a table copied in once)
        b_in, b_out = (max(per.get(f"{d}_bytes", 0), big.get(f"{d}_largest", 0)) for d in ("h2d", "d2h"))
    else:  # migrations: the pages they moved (each once), or what the first iteration migrated
        b_in, b_out = max(um.get("footprint_bytes", 0), big.get("um_h2d_bytes", 0)), 0
    if b_in + b_out <= 0:
        if app.strategy in IN_PLACE:
            return None, (f"{app.strategy_why}: the trace holds no copy or migration whose bytes say how much of it "
                          "the kernels read, or how often, so umprof cannot price another way from it; describe the "
                          "loop to `umprof recommend` (--bytes, --reuse, --iterations) to compare them")
        return None, ("no copies and no unified-memory migrations: nothing moves between host and GPU; no host-memory "
                      "strategy changes its time")
    total = max(PAGE_BYTES, math.ceil((b_in + b_out) / PAGE_BYTES) * PAGE_BYTES)
    # a run with no loop writes its data once, before it copies it: the workload's first write (setup) is that
    # write, and its one iteration writes nothing new (umprof's loop writes a new batch in every iteration)
    written = per.get(f"{prefix}h2d_bytes", 0)
    if not explicit and per.get("um_d2h_bytes", 0) > 0:
        # pages that come back every iteration: the host touched them, and they go out again. The host can touch no
        # more than came back (a page the kernels used is on the GPU until the host's fault brings it), so what
        # goes out beyond that is the driver moving more than the host touched (whole blocks around its faults),
        # not the host's writes: priced as such, a sparse host access reads as a rewrite of the buffer, and a way
        # that leaves the data on the host (accessed-by) as the cheapest
        written = min(written, per["um_d2h_bytes"])
    writes = min(1.0, fraction(written, total)) if loop is not None else 0.0
    reads = min(1.0, fraction(per.get(f"{prefix}d2h_bytes", 0), total))
    gpu_writes = min(1.0, max(fraction(b_out, total), reads)) if b_out > 0 else 0.0
    if not explicit:
        # a page the host touched on the GPU comes back (D2H) and goes out again when the kernels touch it
        # (H2D): what comes back beyond what goes out is what the host read of the kernels' output, at least
        # a page (the result it consumes); the trace does not say which pages the kernels wrote
        reads = min(1.0, max(fraction(per.get("um_d2h_bytes", 0) - per.get("um_h2d_bytes", 0), total),
                             fraction(PAGE_BYTES, total)))
        gpu_writes = reads
    # the copies' granularity: how many copies an iteration makes each way (the more of either)
    copies = max(1, int(round(max(per.get("h2d_copies", 0), per.get("d2h_copies", 0))))) if explicit else 1
    # the kernels' own time where the data was on the GPU as they ran (copies, prefetches); where they
    # read it across the link or migrated it on faults, their time is not their own
    resident = app.strategy in ("pageable", "pinned", "pageable-registered", "pinned-pipelined", "managed-prefetch",
                                "resident")
    kernel_s = float(per.get("kernel_s", 0.0)) if resident else 0.0
    # copies both ways are an input and an output: the host writes one and reads the other (split), as the
    # buffer (their sum) already counts them; managed memory's pages say nothing of it, and are read in place
    split = explicit and b_in > 0 and b_out > 0
    writes = round(writes, 6)
    reads = min(round(reads, 6), 1.0 - writes) if split else round(reads, 6)
    w = Workload(bytes=int(total), name=app.name.rsplit("/", 1)[-1] or "application", iterations=int(its),
                 host_writes=writes, gpu_writes=round(gpu_writes, 6), host_reads=reads,
                 copies=copies if app.strategy != "pinned-pipelined" else 1, kernel_s=kernel_s,
                 host_pages="numpy" if is_python(app) else "malloc", first_write="stores",
                 host_reader="numpy" if is_python(app) else "words", split=split)
    how = (f"{'copies' if explicit else 'unified-memory migrations'}: {format_size(b_in)} in and {format_size(b_out)} "
           f"out at most in an iteration make the buffer ({format_size(total)}); each steady iteration moves "
           f"{format_size(per.get(prefix + 'h2d_bytes', 0))} in and {format_size(per.get(prefix + 'd2h_bytes', 0))} out"
           + (f" in {copies} copies each way" if copies > 1 else "")
           + (f"; kernels {format_time(kernel_s)} per iteration" if kernel_s else "")
           + f"; {its} iteration{'s' if its != 1 else ''}"
           + ("" if loop is not None else ", its data written once (the first write)")
           + (f"; read as one dataset that its {app.loop.iterations} iterations carry out and back unchanged: its "
              "host does not touch the data in the loop" if one_dataset else
              f"; read as one pass over everything its {app.loop.iterations} iterations copy: its host does not "
              "touch the data in the loop" if one_pass else "")
           + ("; its pageable memory priced as a C program's malloc'd pages" if w.host_pages == "malloc" else
              "; its pageable memory priced as numpy's arrays (a Python program)")
           + "; its first write as stores word by word (a program computing its data)"
           + ("; its host's reads back word by word (compiled code's loop)" if w.host_reader == "words" else "")
           + ("; the host writes the input and reads the output apart" if split else ""))
    return w, how


class _Reading(NamedTuple):
    """One reading of an application as umprof's workload (``workload_of``; ``one_pass``: as one pass over
    everything it copies), ranked by the calibration: its current way (None where the calibration has none of it)
    and the prediction savings count from (``base``), and its host accesses as it makes them (``host_now``)."""
    workload: Workload | None
    how: str
    ranked: list
    excluded: list
    current: str | None
    base: Prediction | None
    host_now: float
    one_pass: bool

    def as_made_s(self) -> float:
        """The current way's predicted time with its host accesses priced as the application makes them."""
        return self.base.whole_s - _host_s(self.base) + self.host_now


def _reading(app: Application, cal: Calibration, one_pass: bool, one_dataset: bool = False) -> _Reading:
    w, how = workload_of(app, one_pass, one_dataset)
    if w is None:
        return _Reading(None, how, [], [], None, None, 0.0, one_pass)
    w = replace(w, fits=w.bytes <= (cal.device.get("memory_total_bytes") or app.memory_bytes or w.bytes))
    moved, basis = _kernel_bytes(w, cal)
    if moved:
        w = replace(w, kernel_bytes=moved)
        how += (f"; its kernels' {format_time(w.kernel_s)} an iteration move at most {format_size(moved)} of device "
                f"memory ({basis}), all that a kernel reading the data in host memory would move")
    passes, launches = _kernel_passes(app, w, cal, one_pass, one_dataset)
    if passes > 1:
        w = replace(w, reuse=passes)
        how += (f"; its {launches:.0f} kernel launches an iteration make {passes} passes over the buffer (each "
                "launch's time at the DRAM's theoretical rate, at most one pass a launch): as many as the ways that "
                "read it in host memory would make across the link")
    ranked, excluded = cal.rank(w)
    current = app.strategy if app.strategy in {p.strategy for p in ranked} else None
    base = next((p for p in ranked if p.strategy == current), None) or ranked[-1]
    # the application's own allocation and free, as its trace measured them, stand for the prediction's (with
    # the release of its malloc'd pages, which the trace does not see: _unseen_release_s); and its host
    # accesses are priced as its host code makes them (_host_now)
    return _Reading(w, how, ranked, excluded, current, base, _host_now(base, ranked), one_pass)


def _kernel_bytes(w: Workload, cal: Calibration) -> tuple[int, str]:
    """The most the application's kernels moved of the buffer per iteration, and what set it: their own time (on
    device-resident data) at the device memory's theoretical rate, and no less than the GPU's L2 holds (data a copy
    left there is read faster than the DRAM's rate), where that is less than the buffer; 0 where it is not (or the
    rate or the kernels' time is not known)."""
    rate = float(cal.device.get("dram_bytes_per_s") or 0.0)
    if not rate or not w.kernel_s:
        return 0, ""
    by_rate, l2 = w.kernel_s * rate, float(cal.device.get("l2_bytes") or 0)
    moved = int(max(by_rate, l2))
    basis = "the DRAM's theoretical rate" if by_rate >= l2 else \
        f"the GPU's L2 size; the DRAM's theoretical rate moves {format_size(by_rate)} in that time"
    return (moved, basis) if moved < w.bytes else (0, "")


def _kernel_passes(app: Application, w: Workload, cal: Calibration, one_pass: bool,
                   one_dataset: bool = False) -> tuple[int, float]:
    """How many passes over the buffer an iteration's kernels make (``Workload.reuse``), and how many kernels it
    launches: each launch moves at most what its time moves of device memory at the DRAM's theoretical rate, and
    reads the buffer at most once (where an iteration copies in in parts, at most one part), summed over the loop's
    launches per iteration and rounded; 1 where that is less (or the rate or the kernels' own time is not known).

    At most once a launch: a kernel's own repeated reads of its data are served by the GPU's caches (blur's 5 x 5
    filter reads each pixel 25 times, and mapped memory measured 14-39% behind the fastest way, not 25 passes
    across the link), while each launch of an iterative loop reads its data again from wherever it lives: in
    host memory, across the link every time. Priced as one pass, a loop of 40 launches over a 32 MiB frame was
    advised mapped memory. Only launches over device-resident data count (``Workload.kernel_s``), and only where
    an iteration copies in (or, managed, migrates in) most of what it works on (the frame it refines): where it
    copies little or nothing in, its launches step state kept on the GPU (snapshot's field, 20 steps between copies
    back; jacobi's grid), which a way that reads host memory in place would keep there too, copying out what it
    copies out now: one pass. ``one_dataset``: the run's launches over one dataset that each iteration carries out and
    back (``_round_trip``), a launch at most one of the parts an iteration copies in (tiles' 128 launches over its
    image's 32 tiles, four passes)."""
    rate = float(cal.device.get("dram_bytes_per_s") or 0.0)
    loop, k = (None if one_pass else app.loop), app.kernels
    if not rate or not w.kernel_s or not len(k):
        return 1, 0.0
    # the run as one pass (or one iteration): each launch reads at most one of the parts the run copies in (a
    # dataset sent batch by batch, a kernel a batch: batches, benchmarks/apps/unseen, 32 launches of 12 µs over
    # its 32 batches of 32 MiB, read as two passes over its 1 GiB without this)
    launches, parts = float(len(k)), max(1.0, float((app.copies["direction"] == "h2d").sum()))
    if one_dataset:  # one dataset carried out and back (``_round_trip``): in the parts its steady iteration copies
        parts = max(1.0, float(app.loop.per_iteration.get("h2d_copies", 0.0)))
    if loop is not None:  # as many launches as its steady iteration makes, their times those issued in its span
        per = loop.per_iteration
        launches, parts = float(per.get("kernels", 0.0)), max(1.0, float(per.get("h2d_copies", 0.0)))
        sent, largest = per.get("h2d_bytes", 0.0), loop.largest.get("h2d_largest", 0.0)
        if sent <= 0 and largest <= 0:  # no copies in: managed memory's pages, what migrates in against them all
            sent, largest = per.get("um_h2d_bytes", 0.0), float(w.bytes)
        if sent <= 0 or sent < STATE_SENT * largest:
            return 1, launches
        start = k["call_start"].to_numpy()
        k = k[(start >= loop.span[0]) & (start <= loop.span[1])]
    if not len(k) or not launches:
        return 1, launches
    # a launch reads no more than one part of what an iteration copies in, where it copies it in parts (a pipeline's
    # kernel works on its chunk: overlapped's eight launches an iteration are one pass, not four)
    each = (k["dur_s"].to_numpy(float) * rate).clip(max=float(w.bytes) / parts).mean()
    return max(1, int(launches * each / w.bytes + 0.5)), launches


def _misses(reading: _Reading, now_s: float) -> float:
    """How far a reading's prediction of the run as it is lies from its measured time (a ratio either way)."""
    model = reading.base.whole_s
    return abs(math.log(model / now_s)) if model > 0 and now_s > 0 else math.inf


def advise(app: Application, cal: Calibration, source: str = "") -> AppAdvice:
    """What the application should use, and what that saves (see the module's docstring)."""
    out = AppAdvice(app=app, calibration=source or cal.source, workload=None, mapping="",
                    link_bytes_per_s=float(cal.device.get("pcie_bytes_per_s") or math.nan))
    threads = app.explicit_copies["tid"].nunique()
    now_s = _loop_s(app)
    reading = _reading(app, cal, one_pass=False)
    if reading.workload is None:
        out.mapping = reading.how
        out.verdict = f"{app.name}: {reading.how}."
        if app.strategy in IN_PLACE:
            _bound_in_place(app, out)
        out.limits += _graphs_traced_whole(app)
        return out
    # the loop's host time outside its CUDA calls against its priced accesses, as its iterations read them: what
    # decides whether it may be one pass, and what the note on it says
    idle = _host_idle_s(app, reading.host_now, threads)
    if _reads_as_one_pass(app, idle):
        # the reading whose prediction of the run as it is comes nearer its measured time: one pass over data
        # written before the loop (chunked_async: 0.42 s as its 32 iterations, 1.06 s as one pass, 1.65 s measured
        # on an H100), or the iterations of a buffer copied again unchanged (NVIDIA's simpleStreams: 0.90 s as its
        # loop, 8.2 s as one pass over the 4 GiB it copies, 0.44 s measured)
        once = _reading(app, cal, one_pass=True)
        if once.workload is not None and _misses(once, now_s) < _misses(reading, now_s):
            reading = once
    w, ranked, current, base = reading.workload, reading.ranked, reading.current, reading.base
    host_now = reading.host_now
    out.mapping, out.workload, out.excluded = reading.how, w, reading.excluded
    # a loop of copies before the loop (a load phase) is read on its own, and its time under each way joins the
    # loop's (unless the loop was read as one pass over everything copied)
    lead = _lead_reading(app, cal) if not reading.one_pass else None
    lead_s = {} if lead is None else {p.strategy: lead.as_made_s() if p is lead.base else p.whole_s
                                      for p in lead.ranked}
    if lead is not None:
        ranked = [p for p in ranked if p.strategy in lead_s]
        out.mapping += (f"; before the loop, a loop of {app.loop.lead.iterations} iterations read on its own as "
                        f"{lead.workload.describe()} ({lead.how}), its time under each way added to the loop's")
    if current is None:
        out.limits.append(f"its current way ({app.strategy}) is not one umprof predicts here: savings are against "
                          "the slowest strategy that applies, not against it")
    measured_base = (reading.as_made_s() - base.setup.get("alloc", 0.0) - base.setup.get("free", 0.0)
                     + app.allocation_s + _unseen_release_s(cal, base.strategy, w))
    # memory page-locked and released every iteration (a helper that registers the buffer around each copy) is
    # priced pinned once under every way, the current one too: one iteration's calls
    pinning_s = 0.0 if reading.one_pass else app.pinning_in_loop_s
    pinned_once_s = pinning_s * (1 - 1 / app.loop.iterations) if pinning_s else 0.0
    # copies through a bounce buffer that the host fills and drains: its copies, which the calibration does not price,
    # are the current way's alone; every other way copies straight from the data's memory
    staging_s = 0.0 if reading.one_pass else app.host_staging.seconds
    measured_base += staging_s
    # every comparison is of the same figures: the current way's own, with its measured allocation, and the others
    # with what its many allocation calls take beyond one buffer's (_allocations_beyond_one_s)
    beyond = _allocations_beyond_one_s(app, base, pinning_s)
    measured_base += lead_s.get(base.strategy, 0.0)
    # the host's stalls on pages faulting back from the GPU, as the trace measured them (less its own slowing, and
    # less what the model prices of the current way's host accesses): the current way's, and kept by every way
    # whose pages sit on the GPU after its kernels
    stall_s = _fault_stall_s(app, host_now)
    measured_base += stall_s
    # the GPU's side of those faults: its kernels' time faulting the pages back beyond the model's price of them, as
    # the trace measured it; the current way's, and kept by the same ways. Only where the host's touches stalled
    # beyond their priced accesses (a word here and there, each page faulting alone): where the host rewrites runs
    # of the buffer, the calibration's loop is what the program does, and its kernels' price stands (managed_stream's
    # kernels, 30-35 ms a step as traced against 13-17 ms priced, measured fastest or near it under accessed-by,
    # which keeps them)
    gpu_stall_s = _gpu_fault_s(app, base, stall_s, reading.one_pass)
    measured_base += gpu_stall_s
    # several host threads run their iterations at once, where the model prices their work one after another: each
    # way's difference from the current one in its iterations is scaled by the overlap the loop measured (not where
    # the run is read as one pass, whose one iteration is no iteration of the loop)
    overlap = 1.0 if reading.one_pass else _threads_overlap(app, base, threads)
    # the current way's copies from pageable memory, as the trace measured them, stand for the model's price of them
    # (several threads' copies ran at once: by the same overlap)
    traced_copies_s, priced_copies_s = _pageable_copies_s(app, base, reading.one_pass, w.output_first_bytes)
    copies_beyond_s = overlap * (traced_copies_s - priced_copies_s)
    measured_base += copies_beyond_s
    # a loop that carries one dataset out and back unchanged (_round_trip): the ways whose pages stay where the
    # kernels used them move it once, the loop before it (its first pass, cut apart) included
    carried = _carried_s(app, cal, reading, idle, measured_base)
    whole = {p.strategy: measured_base - pinned_once_s if p is base
             else carried.get(p.strategy, p.whole_s + lead_s.get(p.strategy, 0.0) + beyond)
             - (1.0 - overlap) * p.iterations * (p.steady_s - base.steady_s)
             + (stall_s + gpu_stall_s if _keeps_stalls(p.strategy) else 0.0)
             for p in ranked}
    ranked = sorted(ranked, key=lambda p: whole[p.strategy])
    for p in ranked:
        saving = measured_base - whole[p.strategy]
        out.ranking.append({"strategy": p.strategy, "predicted_s": now_s - saving, "saving_s": saving,
                            "model_whole_s": p.whole_s, "model_steady_s": p.steady_s})
    # the tie is taken on the model's figures of the loop as it runs: several threads' iterations overlapped as the
    # loop measured, not one after another (workers, four threads: priced at 1.36 s one after another, its loop
    # measured 0.69 s; within 10% of the first, registering's 0.08 s saving tied with keeping pageable memory, and
    # registered memory measured 15% faster)
    overlapped = (1.0 - overlap) * base.iterations * base.steady_s
    level = {name: t - overlapped for name, t in whole.items()}
    tied_names = ties.tied([(p.strategy, level[p.strategy]) for p in ranked], PREDICTION_ERROR)
    tied = [p for p in ranked if p.strategy in tied_names]
    # among the tied: the current way where it is one of them, else the one that changes least code
    python = is_python(app)
    pick = min(tied, key=lambda p: (p.strategy != current, ties.change_cost(p.strategy, python, current),
                                     whole[p.strategy]))
    saving = measured_base - whole[pick.strategy]
    note = _tie_note(tied, pick, level)
    within_noise = current is not None and saving < NOISE * now_s and (pick.strategy != current or pinned_once_s > 0)
    if within_noise:
        # a change that saves less than the loop's noise is not worth making: keep what it has
        what = f"{pick.strategy}, page-locked once," if pick is base else pick.strategy
        note = f"{what} is predicted {format_time(saving)} faster ({saving / now_s:.1%} of the loop): within its noise"
        pick, saving = base, 0.0
    change = _change(pick.strategy, w, current, python)
    if pinned_once_s > 0 and pick is base and not within_noise:
        change = _pin_once_change(app)
    elif staging_s and pick is not base:
        change = f"copy the data's own buffers, without the bounce buffer: {change}"
    out.advice.append(Advice("loop", pick.strategy, change, now_s, now_s - saving, saving,
                             tie=len(tied) > 1, note=note))
    out.advice += _flow_advice(app, cal, python)
    out.limits += _pinning_limit(app, pinning_s)
    out.limits += _staging_limit(app, staging_s)
    out.limits += _pageable_copies_limit(traced_copies_s, priced_copies_s, copies_beyond_s, now_s)
    keeping = [p.strategy for p in ranked if _keeps_stalls(p.strategy)]
    out.limits += _stall_limit(app, stall_s, keeping)
    out.limits += _touches_unseen_limit(app, w, stall_s, reading.one_pass)
    out.limits += _gpu_stall_limit(app, base, gpu_stall_s, keeping)
    out.limits += _limits(app, saving, host_now, pick, idle, reading.one_pass, pinning_s, staging_s, stall_s,
                          gpu_stall_s, bool(carried))
    out.limits += _passes_limit(w)
    out.limits += _threads_limit(app, base, threads, overlap, saving)
    if beyond > 0:
        out.limits.append(f"its {app.allocation_calls} calls that allocate and free memory take "
                          f"{format_time(app.allocation_s)}, {format_time(beyond)} more than one buffer's under the "
                          "model: priced the same under every way (it would allocate as many buffers under any)")
    if any(PARTS_UNMEASURED in p.notes for p in ranked):
        out.limits.append(PARTS_UNMEASURED)
    out.verdict = _verdict(app, out, tied, now_s, base, within_noise)
    return out


def _round_trip(app: Application, idle: tuple[float, float] | None) -> bool:
    """Whether the loop reads as carrying one dataset out and back unchanged: its host thread does not touch what it
    moves (``_untouched``), and each steady iteration copies out as much as it copies in (within ROUND_TRIP), so that
    what goes out comes back in the next. tiles (benchmarks/apps/unseen: an out-of-core filter's four passes over a
    512 MiB image, 16 MiB tiles in and out) was priced with its host rewriting the image every pass, managed memory
    1.27 s against 0.46-0.85 s for the others; on two H200 leases every managed way measured fastest, 0.72-0.86 s
    against 0.95-1.20 s for pinned and registered memory, as the image moves once each way under them."""
    if not _untouched(idle) or app.loop is None or app.loop.iterations < 2:
        return False
    per = app.loop.per_iteration
    sent, back = float(per.get("h2d_bytes", 0.0)), float(per.get("d2h_bytes", 0.0))
    return sent > 0 and back > 0 and abs(sent - back) <= ROUND_TRIP * max(sent, back)


def _stays_on_gpu(strategy: str) -> bool:
    """Whether the way's pages stay on the GPU between iterations that the host does not touch: on-demand managed
    memory and the prefetched one (migrated once), and accessed-by (ACCESS_COUNTED: the access counters move them)."""
    return kind(strategy) in ("on-demand", "prefetch") or strategy == ACCESS_COUNTED


def _carried_s(app: Application, cal: Calibration, reading: _Reading, idle: tuple[float, float] | None,
               measured_base: float) -> dict:
    """Where the loop carries one dataset out and back (``_round_trip``) and is read as its iterations: each way that
    keeps its pages on the GPU (``_stays_on_gpu``) → its whole run priced as one pass over that dataset, every launch's
    passes over it (``workload_of(one_dataset=True)``). The copy ways keep the program's copies, as its iterations price
    them; the others read host memory every pass as they do. Empty elsewhere."""
    if reading.one_pass or not _round_trip(app, idle):
        return {}
    r = _reading(app, cal, one_pass=True, one_dataset=True)
    if r.workload is None or r.current is None:
        return {}
    # the program as it runs, read so: the current way as one pass over the dataset, its host accesses as made, with
    # every copy of the run as traced (pageable copies, at the host's pace) or with the copies of the passes after
    # the first as traced; each kept way saves its difference from that (the iterations would price host accesses
    # every pass that its host does not make), and is priced in their frame as the current way less that saving
    traced, priced = _pageable_copies_s(app, r.base, one_pass=True, fresh_bytes=r.workload.output_first_bytes)
    as_runs = r.as_made_s() - priced + traced if traced else r.as_made_s() + _round_trips_s(app)
    return {p.strategy: measured_base - (as_runs - p.whole_s) for p in r.ranked if _stays_on_gpu(p.strategy)}


def _lead_reading(app: Application, cal: Calibration) -> _Reading | None:
    """The loop of copies before the application's loop (``Loop.lead``) read as a workload of its own; None where
    there is none, or the calibration cannot price its current way."""
    if app.loop is None or app.loop.lead is None:
        return None
    r = _reading(replace(app, loop=app.loop.lead), cal, one_pass=False)
    return r if r.workload is not None and r.current is not None else None


def _allocations_beyond_one_s(app: Application, base: Prediction, pinning_s: float = 0.0) -> float:
    """What the application's allocation calls take beyond the model's allocation and free of one buffer under its
    current way (``base``), where it makes many of them (MANY_ALLOCATION_CALLS); else 0. The calls that page-lock
    memory every iteration (``pinning_s``, ``Application.pinning_in_loop_s``) are left out: no way needs them."""
    calls = app.allocation_calls - (app.pinning_in_loop_calls if pinning_s else 0)
    if calls <= MANY_ALLOCATION_CALLS:
        return 0.0
    return max(0.0, app.allocation_s - pinning_s - base.setup.get("alloc", 0.0) - base.setup.get("free", 0.0))


def _pin_once_change(app: Application) -> str:
    """The change for a loop that page-locks its memory every iteration and should keep its way: do it once."""
    return (f"page-lock the host buffers once, before the loop, and release them after it (its loop now makes "
            f"{_pinning_words(app)}); keep the copies")


def _pinning_words(app: Application) -> str:
    return (f"{app.pinning_in_loop_calls} calls to {' and '.join(app.loop_pinning.names)}, "
            f"{format_time(app.pinning_in_loop_s)} in all, {app.pinning_in_loop_calls / app.loop.iterations:.0f} an "
            "iteration")


def _pinning_limit(app: Application, pinning_s: float) -> list[str]:
    if not pinning_s:
        return []
    return [f"its loop page-locks and releases host memory every iteration ({_pinning_words(app)}): every way is "
            "priced with its memory pinned once, before the loop (one iteration's calls for its current way), and "
            "the ways that pin nothing without them"]


def _passes_limit(w: Workload) -> list[str]:
    """What reading the kernels' launches as passes over the copied data assumes (``_kernel_passes``)."""
    if w.reuse <= 1:
        return []
    return [f"its kernels are read as {w.reuse} passes an iteration over what it copies in: the ways that leave the "
            f"data in host memory are priced as reading it across the link {w.reuse} times; where some launches work "
            "on buffers of their own on the GPU, those ways read it fewer times than priced"]


def _staging_limit(app: Application, staging_s: float) -> list[str]:
    if not staging_s:
        return []
    h = app.host_staging
    return [f"its copies go through a pinned bounce buffer that the host fills and drains ({h.chunks} copies of "
            f"{format_size(h.chunk_bytes)} in the loop, each beside {format_time(staging_s / h.chunks)} of the host's "
            f"time outside CUDA calls, a host copy's rate): {format_time(staging_s)} over the loop, priced as its own "
            "way's alone; every other way copies straight from the data's memory"]


def _bound_in_place(app: Application, out: AppAdvice) -> None:
    """A program whose kernels read host memory in place cannot be priced another way, but what any other way
    could save is bounded: its kernels' time (each other way reads the data on the GPU, after copies or
    migrations that take time of their own) and its calls that allocate and pin memory. Where that is within
    the run's noise (NOISE), it is told to keep what it has; else what bounds a saving is said."""
    kernel_s, alloc_s, now_s = float(app.totals["kernel_s"]), float(app.allocation_s), float(_loop_s(app))
    if now_s <= 0:
        return
    bound = (f"its kernels, reading host memory in place, take {format_time(kernel_s)} and its calls that allocate "
             f"and pin memory {format_time(alloc_s)} of its {format_time(now_s)} ({(kernel_s + alloc_s) / now_s:.1%})")
    if kernel_s + alloc_s < NOISE * now_s:
        out.advice.append(Advice("loop", app.strategy, "keep it as it is", now_s, now_s, 0.0,
                                 note=f"{bound}: within its noise"))
        out.verdict += f" But {bound}: no host-memory strategy can save more than that, within its noise; keep it."
    else:
        out.limits.append(f"{bound}: no host-memory strategy can save much more than that")


def _unseen_release_s(cal: Calibration, strategy: str, w: Workload) -> float:
    """What the application's free() of its malloc'd buffer costs that its trace does not show: the pages
    given back to the kernel (0.04-0.06 s a GiB on the lent H100 and H200), which umprof's loop times inside
    the free of every strategy whose buffer is the application's malloc'd memory (strategies.release_pages).
    The trace times CUDA's calls alone, so the measured allocation that stands for the current way's
    predicted allocation and free leaves it out: the calibration's free of malloc'd pages less its free of
    numpy's (whose pages the loop leaves alone) puts it back."""
    if w.host_pages != "malloc" or not strategies.get(strategy).malloc_backed:
        return 0.0
    free = lambda pages: cal.curve(strategy, "free", pages)(w.bytes)  # noqa: E731
    return max(0.0, free("malloc") - free("numpy"))


def _change(strategy: str, w: Workload, current: str | None, python: bool) -> str:
    if strategy == current:
        return "keep it as it is"
    text = (python and PYTHON_CHANGES.get(strategy)) or CHANGES.get(strategy, strategy)
    if not python and ties.is_managed(current):
        text = FROM_MANAGED.get(strategy, text)
    if strategy == "pinned-pipelined":
        text = text.format(chunks=strategies.get(strategy).describe_chunking(w.bytes))
    if ties.is_managed(current) and kind(strategy) == "copy" and w.gpu_writes > 0 and w.host_reads < HOST_READS_PART:
        # a managed program has no copies back to keep: the new ones bring back what its host reads, as priced (its
        # host sampling an array the GPU updates: particles' every 4096th record, 0.03% of it)
        text += (f"; {PART_BACK} ({w.host_reads:.2%} of the buffer an iteration, "
                 f"{format_size(w.host_reads * w.bytes)}; where that is records spread through it, one cudaMemcpy2D gathers "
                 "them)")
    return text


def _tie_note(tied: list[Prediction], pick: Prediction, whole: dict) -> str:
    if len(tied) < 2:
        return ""
    names = ", ".join(p.strategy for p in tied)
    first, last = whole[tied[0].strategy], whole[tied[-1].strategy]
    spread = last / first - 1 if first > 0 else 0.0
    fastest = tied[0].strategy
    # what the least change gives up, as predicted: on every judged lease the fastest prediction measured within
    # 5% of the fastest way a little more often than the tie's pick (benchmarks/apps/tie_policy.py)
    given_up = (f" ({fastest}, predicted fastest, saves {format_time(whole[pick.strategy] - first)} more)"
                if pick.strategy != fastest else "")
    return (f"{names}: within {spread:.0%} of each other, predicted (under the prediction's own error, "
            f"{PREDICTION_ERROR:.0%}); {pick.strategy} changes the least code{given_up}")


def _flow_advice(app: Application, cal: Calibration, python: bool) -> list[Advice]:
    """Per flow: pageable copies made from pinned memory; many small copies batched."""
    out = []
    its = app.loop.iterations if app.loop is not None else 1
    for _, f in app.flows.head(8).iterrows():
        label = f"{f['direction']} {f['host_kind']} {flow_size(f)} stream {f['stream']}" \
            + (f" in '{f['range']}'" if f["range"] else "")
        d = f["direction"]
        if f["host_kind"] == "pageable":
            pinned = f["count"] * cal.curve("pinned", d)(float(f["bytes"]))
            if f["time_s"] - pinned > NOISE * f["time_s"]:
                how = ("allocate this flow's host array with pycuda.driver.pagelocked_empty" if python else
                       "allocate this flow's host buffer with cudaMallocHost (or cudaHostRegister it)")
                out.append(Advice(label, "pinned", how, f["time_s"], pinned, f["time_s"] - pinned,
                                  note=f"{f['count']} copies at {format_rate(f['bytes_per_s'])} now; pinned: "
                                       f"{format_rate(f['total_bytes'] / pinned if pinned else math.nan)}"))
        per_iteration = f["count"] / its
        if f["bytes"] <= SMALL_COPY and per_iteration >= MANY_COPIES:
            memory = "pinned" if f["host_kind"] != "pageable" else "pageable"
            batched = its * cal.curve(memory, d)(float(f["bytes"]) * per_iteration)
            if f["time_s"] - batched > NOISE * f["time_s"]:
                out.append(Advice(label, memory, f"batch its {per_iteration:.0f} copies of {format_size(int(f['bytes']))} "
                                  f"per iteration into one of {format_size(int(f['bytes'] * per_iteration))} (a "
                                  "contiguous staging buffer)", f["time_s"], batched, f["time_s"] - batched,
                                  note="each copy pays a latency that one copy of all of them pays once"))
    return out


def _pageable_copies_s(app: Application, base: Prediction, one_pass: bool,
                       fresh_bytes: float = 0.0) -> tuple[float, float]:
    """The current way's copies from and to pageable memory over its loop (or its run, read as one pass): as the trace
    measured them (``_waits_at_steady_pace_s``: the host's wait on each, less kernels running then, a flow's first
    copy at its later ones' pace) and as the model prices them; (0, 0) unless it copies from pageable memory now,
    where it has no such copies, and where its copies of SMALL_COPY or less take more than SMALL_SHARE of their time.
    The first stands for the second in the current way's time. ``fresh_bytes``: the output whose malloc'd pages the
    model prices as first touched by the copies back (``Workload.output_first_bytes``); the copies back that carry
    that much count at their flow's later pace (``_waits_at_steady_pace_s``).

    A pageable copy runs at the host's pace: the driver copies through small pinned buffers of its own, and a
    destination never touched before faults its pages in as the copy lands. The trace measures that pace; the
    calibration, from another run of another host's memory, only estimates it. A page-locked copy runs at the link's,
    which the calibration prices within a few percent. arrays (benchmarks/apps/unseen, a pycuda loop whose
    ``.get()`` copies back into a new numpy array every step) copied back at 3.5 GB/s in its trace on an H200, 746 ms
    of copies where the model priced 400 ms, and pinned arrays measured 0.72 s faster where 0.33 s had been
    predicted; cadence (16 MiB in every step, 32 MiB out every 8th) copied 463 ms where the model priced 655 ms, and
    registered memory measured 0.34 s faster where 0.56 s had been predicted (2026-12-02). A small copy's time is
    its call's latency, which the trace lengthens by its own work on every call (small_copies, 61,440 copies of
    16 KiB: 15 µs a copy as traced, where the saving measured says about 12): the calibration, which measured such
    copies untraced as a loop makes them, prices those."""
    if app.strategy != "pageable" or base.strategy != "pageable":
        return 0.0, 0.0
    loop = None if one_pass else app.loop
    span, lead = (None, None) if loop is None else (loop.span, loop.lead and loop.lead.span)
    copies = app.explicit_copies_within(span, lead).sort_values("start", kind="stable")
    if copies.empty:
        return 0.0, 0.0
    waits = _waits_at_steady_pace_s(app, copies, fresh_bytes)
    if waits[(copies["bytes"] <= SMALL_COPY).to_numpy()].sum() > SMALL_SHARE * waits.sum():
        return 0.0, 0.0
    return float(waits.sum()), base.phases.get("h2d", 0.0) + base.phases.get("d2h", 0.0)


def _waits_at_steady_pace_s(app: Application, copies: pd.DataFrame, fresh_bytes: float = 0.0) -> np.ndarray:
    """The host's wait on each of the given copies, in time order (``Application.copies_waits_s``), each flow's first
    copy at no more than its later ones' median pace (seconds a byte, times its bytes), where the flow
    (``application.flow_ids``) has at least STEADY_COPIES copies. A
    first copy back into malloc'd pages never touched faults them in as it lands, and a first copy of all pays the
    driver's own first use: the model prices those as the buffer's first write and the first iteration's extra
    (``host_init``, ``first_extra``) under every way, the current one too, so the trace's figure must not hold them
    again. big_output (readback_loop: 16 MiB in, 512 MiB out, 3 iterations) copied its first 512 MiB back in 341 ms
    and the next two in 36 ms each in its trace on an H200; counted whole, every way's saving came out 0.28 s above
    the 0.51 s measured (2026-12-02). Copies into new arrays every step (arrays) fault every time, first or not: their
    first copy is like the others, and all of it counts.

    An output copied back in many parts faults in over as many copies: the copies back that carry its first
    ``fresh_bytes`` (the output the model prices as first touched so) count at their flow's pace after them. tiles
    (an out-of-core filter's 4 passes, 32 tiles of 16 MiB back each into a second malloc'd image) took 315 ms for its
    first pass's copies back in its trace on an H200, 39-40 ms for each later pass's; counted whole, beside the
    model's 329 ms for the image's first touch, its run as it is came out 0.35 s above the one measured."""
    waits = app.copies_waits_s(copies)
    flow, nbytes = flow_ids(copies), copies["bytes"].to_numpy(float)
    _, first = np.unique(flow, return_index=True)
    is_first = np.zeros(len(flow), bool)
    is_first[first] = True
    capped = is_first & (np.bincount(flow)[flow] >= STEADY_COPIES)
    if fresh_bytes > 0:
        back = (copies["direction"] == "d2h").to_numpy()
        before = np.cumsum(np.where(back, nbytes, 0.0)) - np.where(back, nbytes, 0.0)  # bytes back before each
        capped |= back & (before < fresh_bytes)

    def pace(chosen):  # seconds a byte, so that a flow of several sizes (a size class) caps each at its own size
        return pd.Series(waits[chosen] / np.maximum(nbytes[chosen], 1.0)).groupby(flow[chosen]).median()

    # each flow's pace after the capped copies; where every later copy of it is capped, its later copies'
    limit = pace(~capped).combine_first(pace(~is_first)).reindex(flow[capped]).to_numpy() * nbytes[capped]
    waits[capped] = np.where(np.isnan(limit), waits[capped], np.minimum(waits[capped], limit))
    return waits


def _pageable_copies_limit(traced_s: float, priced_s: float, beyond_s: float, now_s: float) -> list[str]:
    """What the trace measured of the current way's pageable copies against the model's price (``_pageable_copies_s``),
    where that moved the savings (``beyond_s``) by more than the loop's noise."""
    if abs(beyond_s) < NOISE * now_s:
        return []
    return [f"its copies from and to pageable memory took {format_time(traced_s)} as traced, where the "
            f"calibration prices {format_time(priced_s)}: the trace's figure is the current way's (a pageable copy "
            "runs at the host's pace, which a calibration's run only estimates), so every other way's saving is "
            f"{format_time(abs(beyond_s))} {'more' if beyond_s > 0 else 'less'} than the calibration alone says"]


def _fault_stall_s(app: Application, host_now: float) -> float:
    """The application's host stalls on managed pages faulting back from the GPU over its loop, as it spends them
    untraced: what its trace measured (``Application.host_faults``) times TRACED_FAULT_SHARE, less the current way's
    host accesses the model prices (``host_now``, which holds its priced faults); 0 where that is nothing.

    The model prices the host's faults by the bytes it reads or writes, as the calibration's loop makes them, a run
    of the buffer; a host that samples a managed array between kernels touches a word here and there, and each
    touch waits for its page alone. particles (benchmarks/apps/unseen: 2048 records of a 256 MiB array read each
    step) spent 2.14 s of its 3.05 s traced loop on an H200 so, where its reads were priced in microseconds and
    copies in its place measured 1.07-1.34 s faster untraced."""
    return max(0.0, app.host_faults.seconds * TRACED_FAULT_SHARE - host_now)


def _gpu_fault_s(app: Application, base: Prediction, stall_s: float, one_pass: bool) -> float:
    """The GPU's time faulting managed pages back over the loop beyond what the model prices for the current way's
    kernels, as the program spends it untraced: a steady iteration's kernels as traced less the prediction's kernel
    step, over the iterations after the first (whose kernels fault the whole buffer in, which the model prices
    apart), times TRACED_GPU_FAULT_SHARE. 0 where the host's touches did not stall beyond their priced accesses
    (``stall_s``, :func:`_fault_stall_s`: a host that rewrites runs of the buffer, whose kernels the calibration's
    loop prices as they run), where the run is read as one pass (``one_pass``: no iterations of the loop), where the
    current way does not migrate pages on faults (its kernels' time is then their own, or their reads across the
    link), where there is no loop, or where the kernels took no longer than priced.

    The calibration's loop prices the pages a kernel faults in as its host rewrote them, a run of the buffer that the
    driver moves in large pieces; a host that touches a word here and there across the buffer leaves the kernels to
    fault each page back alone. monitor (benchmarks/apps/unseen: a float of every 4 KiB page of a 256 MiB field read
    each step) ran its kernel 59-64 ms a step in its traces on an H200, its GPU pulling 136-164 MiB back in about
    6,600 migrations, where the model priced the step's kernel at 4.3-4.7 ms; copies in place of its managed memory
    measured 2.1-2.4 s faster untraced, where 0.95-1.02 s had been predicted."""
    if stall_s <= 0 or one_pass or app.loop is None or app.strategy != base.strategy \
            or kind(base.strategy) != "on-demand":
        return 0.0
    beyond = float(app.loop.per_iteration.get("kernel_s", 0.0)) - base.steady.get("kernel", 0.0)
    return max(0.0, beyond) * max(0, app.loop.iterations - 1) * TRACED_GPU_FAULT_SHARE


def _gpu_stall_limit(app: Application, base: Prediction, gpu_stall_s: float, keeping: list[str]) -> list[str]:
    """What the GPU's faults beyond the model's price of its kernels were priced at, from what, and which ways keep
    them."""
    if gpu_stall_s <= 0:
        return []
    traced = float(app.loop.per_iteration.get("kernel_s", 0.0))
    return [f"its kernels took {format_time(traced)} an iteration as traced, where the model prices "
            f"{format_time(base.steady.get('kernel', 0.0))} for its way: the time beyond, faulting back pages the host "
            f"touched, priced at {format_time(gpu_stall_s)} over its {app.loop.iterations - 1} iterations after the "
            f"first untraced ({TRACED_GPU_FAULT_SHARE:.0%} of it, as a traced kernel faulting pages back measured "
            f"against an untraced one on an H200), kept by the ways that keep the host's stalls ({', '.join(keeping)})"
            " and saved by every other"]


def _host_s(p: Prediction) -> float:
    """The host's writes and reads of the buffer over the whole run, as predicted."""
    return sum(p.phases.get(k, 0.0) for k in HOST_STEPS)


def _host_now(base: Prediction, ranked: list[Prediction]) -> float:
    """The host's accesses over the run as the application makes them now: as predicted for its way, but
    where that is pageable memory, as pinned memory's. umprof's loop measures pageable memory's host
    accesses slower than pinned memory's (the driver's copies into it leave nothing in the host's caches),
    but the applications timed in every mode did not show it: pinning the buffers of stream_loop and
    pycuda_loop (64 and 32 MiB each way an iteration) saved a median 0.38 and 0.29 s over eight H100 leases of
    2026-11-25 and 0.46 and 0.25 s over two H200 runs, where the prediction less the host's accesses said
    0.44, 0.22, 0.47 and 0.25 s, and the host's accesses added 0.11, 0.12, 0.21 and 0.21 s more."""
    pinned = next((p for p in ranked if p.strategy == "pinned"), None)
    return _host_s(pinned if base.strategy == "pageable" and pinned is not None else base)


def _limits(app: Application, saving: float, host_now: float, advised: Prediction,
            idle: tuple[float, float] | None, one_pass: bool, pinning_s: float = 0.0,
            staging_s: float = 0.0, stall_s: float = 0.0, gpu_stall_s: float = 0.0,
            carried: bool = False) -> list[str]:
    """What bounds any strategy's saving: where the advice saves more than copies and migrations take (and the
    loop's page-locking calls, ``pinning_s``, which every way makes once, and the host's copies through a bounce
    buffer, ``staging_s``, which only the current way makes), whatever their share of the
    run, where the rest comes from (the host's accesses, ``host_now`` over the run as it is and ``advised``'s, and
    the loop's other steps), since the trace measured only the copies; else, where copies and migrations (and
    page-locking in the loop) are a small share of the run, that share; a loop whose host does not touch what it
    copies (``idle``, whether it was read as ``one_pass``, and whether as one dataset ``carried`` out and back); CUDA
    graph launches the trace holds whole; a run with no loop found. Copies from several host threads are
    :func:`_threads_limit`'s."""
    t, um = app.totals, app.um
    # the kernels' faults beyond their priced time hold the migrations to the GPU that they wait for: the more of the
    # two counts, not both
    moving = t["copy_s"] + max(um["migration_s"], gpu_stall_s) + pinning_s + staging_s + stall_s
    if app.wall_s <= 0:
        return []
    share = moving / app.wall_s
    parts = ["copies", "migrations"] + (["page-locking in the loop"] if pinning_s else []) \
        + (["the host's copies through its bounce buffer"] if staging_s else []) \
        + (["the host's stalls on faults (as priced)"] if stall_s else []) \
        + (["the kernels' faults beyond their priced time (as priced, the migrations within them)"]
           if gpu_stall_s > um["migration_s"] else [])
    what = ", ".join(parts[:-1]) + " and " + parts[-1]
    taken = f"{what} take {format_time(moving)} of its {format_time(app.wall_s)} ({share:.0%})"
    out = []
    if saving > 1.1 * moving:  # however large their share: the rest is a prediction the trace cannot check
        rest = saving - moving
        by_host = max(0.0, min(rest, host_now - _host_s(advised)))
        other = rest - by_host
        host_words = (f"the host's own writes and reads of its buffers (predicted at {format_time(host_now)} over the "
                      f"run as it is, {app.strategy} memory, and {format_time(_host_s(advised))} under "
                      f"{advised.strategy})")
        other_words = ("the loop's other steps (the copy calls' time beyond their transfers, the kernels' reads), "
                       "predicted faster under it")
        if by_host > 0 and other > 0.1 * rest:
            where = f": {format_time(by_host)} in {host_words}, and {format_time(other)} in {other_words}"
        else:
            where = f" is in {host_words if by_host > 0 else other_words}"
        out.append(f"{taken}; the rest of the predicted saving ({format_time(rest)}){where}")
    elif share < 0.25:
        out.append(f"{taken}: no host-memory strategy can save much more than that")
    out += _host_untouched(app, idle, one_pass, carried)
    out += _graphs_traced_whole(app)
    if app.loop is None:
        out.append("no loop was found in its CUDA calls: the run is read as one iteration")
    return out


def _keeps_stalls(strategy: str) -> bool:
    """Whether the way leaves the pages on the GPU after its kernels, so that the host's touches fault them back."""
    return kind(strategy) == "on-demand" or strategy == ACCESS_COUNTED


def _touches_unseen_limit(app: Application, w: Workload, stall_s: float, one_pass: bool) -> list[str]:
    """Where a managed loop's host is read as rewriting the pages that come back to it every iteration, and its
    stalls lie within that rewrite's price (``stall_s`` 0): a line saying that its trace cannot tell that from a host
    touching a few words of each page, and what to try then; else none.

    A CPU page fault brings back a block of pages around the touch (about 320-340 KiB a fault in every H200 trace
    of benchmarks/apps/unseen, the host's touches sparse or dense), so a trace holds the pages that moved, not the
    words the host touched. sources (a float every 32 KiB of a 256 MiB field read and updated each step) brought back
    254 MiB a step in about 760 faults, and was read as a host rewriting half its field: its copies were priced as
    moving that much, and the pick measured 21.5% and 34.5% behind copies of only the touched cells, registered in
    place, on two H200 leases of 2026-12-02, which saved 1.5-1.8 s where 0.7 s had been predicted."""
    loop = app.loop
    if one_pass or loop is None or stall_s > 0 or not ties.is_managed(app.strategy) or w.host_writes <= 0:
        return []
    back, faults = float(loop.per_iteration.get("um_d2h_bytes", 0.0)), app.um["cpu_faults"] / loop.iterations
    if back <= 0 or faults < 1:
        return []
    how = ("the array page-locked in place, one pycuda.driver.Memcpy2D each way gathering words at a stride"
           if is_python(app) else
           "the buffer page-locked with cudaHostRegister, one cudaMemcpy2D each way gathering words at a stride")
    return [f"its host's page faults brought {format_size(back)} back an iteration (about {faults:.0f} CPU faults, "
            f"{format_size(back / faults)} each), read as the host rewriting {w.host_writes:.0%} of the buffer, as its "
            "time between kernels allows: a trace shows the pages that move, not the words the host touches; if it "
            f"touches only a few words of each, copies of only those ({how}) would save more than any way here is "
            "predicted to"]


def _stall_limit(app: Application, stall_s: float, keeping: list[str]) -> list[str]:
    """What the host's stalls on pages faulting back from the GPU were priced at, from what, and which ways
    (``keeping``) keep them."""
    h = app.host_faults
    if stall_s <= 0:
        return []
    return [f"its host waited {format_time(h.seconds)} of the traced loop on managed pages faulting back from the GPU "
            f"({h.stretches} stretches without GPU work; {app.um['cpu_faults']} CPU page faults traced): priced at "
            f"{format_time(stall_s)} untraced ({TRACED_FAULT_SHARE:.0%} of it, as a traced fault measured against an "
            "untraced one on an H200, less the host accesses already priced for its way), kept by the ways that leave "
            f"the pages on the GPU after its kernels ({', '.join(keeping)}; accessed-by as the GPU's access counters "
            "move them there) and saved by every other"]


def _iterations_overlap(app: Application, threads: int) -> bool:
    """Whether the loop's measured iterations can say how much its host threads overlap: several threads copy, and
    the loop has steady iterations."""
    return threads > 1 and app.loop is not None and app.loop.iterations > 1 and app.loop.steady_s > 0


def _threads_overlap(app: Application, base: Prediction, threads: int) -> float:
    """How much of the model's iteration the loop's host threads, running at once, take: its measured steady
    iteration over the model's of the way it runs now, at most 1 and at least one thread's share (``1 / threads``);
    1 for one thread. The model prices every thread's copies and host work one after another: idioms.cu's two
    threads measured 15-22 ms an iteration where it said 30-32 ms, and the savings of pinning came out 0.13-0.21 s
    where their difference said 0.29-0.31 s (H100 and H200); scaled, 0.15-0.22 s."""
    if not _iterations_overlap(app, threads) or base.steady_s <= 0:
        return 1.0
    return min(1.0, max(1.0 / threads, app.loop.steady_s / base.steady_s))


def _threads_limit(app: Application, base: Prediction, threads: int, overlap: float, saving: float) -> list[str]:
    """What several host threads making the copies do to the saving: scaled by their ``overlap`` where the loop
    measured one, else (no steady iterations, or a model that prices the loop under its measurement) that the
    prediction prices them one after another."""
    if overlap < 1.0:
        return [f"its copies are made by {threads} host threads at once: its loop measured "
                f"{format_time(app.loop.steady_s)} an iteration, where the calibration, pricing their work one after "
                f"another, says {format_time(base.steady_s)} as it runs now; every way's difference in the iterations "
                f"is scaled by that overlap ({overlap:.2f})"]
    if threads > 1 and saving > 0:
        return [f"its copies are made by {threads} host threads at once, which hide some of one another's copies "
                "and host work; the prediction prices them one after another, so the saving may be smaller"]
    return []


def _host_idle_s(app: Application, host_now: float, threads: int) -> tuple[float, float] | None:
    """The loop's one host thread's time outside its CUDA calls an iteration, and what writing and reading the
    bytes it moves would take (``host_now``, the run's priced host accesses, an iteration's share); None where
    they say nothing (no loop, no priced accesses, or several threads, whose calls overlap one another's
    host work)."""
    loop = app.loop
    if loop is None or threads > 1 or host_now <= 0 or "calls_s" not in loop.per_iteration:
        return None
    return max(0.0, loop.per_iteration["wall_s"] - loop.per_iteration["calls_s"]), host_now / loop.iterations


def _untouched(idle: tuple[float, float] | None) -> bool:
    """Whether the loop's host thread spends far less time outside its CUDA calls than touching the bytes it moves
    would take (``idle``: ``_host_idle_s``; HOST_TIME_SHARE)."""
    return idle is not None and idle[0] < HOST_TIME_SHARE * idle[1]


def _reads_as_one_pass(app: Application, idle: tuple[float, float] | None) -> bool:
    """Whether the loop may be read as one pass over everything it copies (``advise`` keeps the reading whose
    prediction of the run as it is comes nearer its measured time): a loop of copies whose host thread spends far
    less time outside its CUDA calls than touching the bytes would take (HOST_TIME_SHARE), so that it wrote them
    before the loop and reads them after it, or copies them again unchanged. chunked_async (benchmarks/apps/unseen:
    1 GiB written, then sent in 32 chunks over 4 streams) read as 32 iterations that each write their chunk
    was told to page-lock its buffers, measured 22% behind the fastest way on an H100 and an H200; read as
    one pass, it is told to prefetch managed memory, measured the fastest on the H100 and 9.7% behind mapped
    memory on the H200, with pinned, pageable and zero-copy memory among the slowest, as predicted."""
    explicit = app.totals["h2d_bytes"] + app.totals["d2h_bytes"] > 0
    return _untouched(idle) and explicit and app.loop.iterations > 1


def _host_untouched(app: Application, idle: tuple[float, float] | None, one_pass: bool,
                    carried: bool = False) -> list[str]:
    """Where the loop's one host thread spends far less time outside its CUDA calls than writing and reading
    the bytes it moves would take (``_untouched``): a line saying so (data copied again unchanged, an
    asynchronous loop whose host touches its results after it), how it was priced (``one_pass``: as one pass
    over everything it copies), and, read as its iterations, what copying its input once would save at most
    (``_copied_once``; read as one pass, its copies are of data written once, each part its own); where it was read
    as one dataset carried out and back (``carried``: ``_round_trip``), that the ways that keep pages on the GPU were
    priced moving it once; else none."""
    if not _untouched(idle):
        return []
    own, priced = idle
    if carried:
        per = app.loop.per_iteration
        return [f"its loop's host thread spends {format_time(own)} an iteration outside CUDA calls, where writing and "
                f"reading the bytes it moves would take {format_time(priced)} at the calibration's rates, and each "
                f"iteration copies out as much as it copies in ({format_size(per['h2d_bytes'])} in, "
                f"{format_size(per['d2h_bytes'])} out): read as one dataset that the loop carries out and back "
                "unchanged (passes over data too large for the GPU, as written), which managed memory would move once "
                "each way: so the ways that keep its pages on the GPU are priced, and the copy ways with the "
                f"program's copies as they are; copied once, its copies would take at most "
                f"{format_time(_round_trips_s(app))} less, where it is one dataset"]
    if one_pass:
        return [f"its loop's host thread spends {format_time(own)} an iteration outside CUDA calls, where writing and "
                f"reading the bytes it moves would take {format_time(priced)} at the calibration's rates: its data "
                "is written before the loop and read after it, so the run is priced as one pass over everything it "
                "copies; data copied again unchanged is better copied once"]
    return [f"its loop's host thread spends {format_time(own)} an iteration outside CUDA calls, where writing and "
            f"reading the bytes it moves, as the prediction assumes it does, would take {format_time(priced)} at the "
            "calibration's rates: it does not touch them all every iteration (data copied again unchanged, or "
            "results read after the loop), so the savings may differ; data copied again unchanged is better "
            f"copied once{_copied_once(app)}"]


def _round_trips_s(app: Application) -> float:
    """What a loop that carries one dataset out and back (``_round_trip``) would save at most copying it in once and
    out once, as the trace measured it: its steady iteration's copies both ways, times the iterations after the
    first, and the copies of the loop before it (its first pass, cut apart)."""
    loop = app.loop
    each = float(loop.per_iteration.get("h2d_s", 0.0) + loop.per_iteration.get("d2h_s", 0.0))
    lead = loop.lead
    before = 0.0 if lead is None else lead.iterations * float(lead.per_iteration.get("h2d_s", 0.0)
                                                              + lead.per_iteration.get("d2h_s", 0.0))
    return each * (loop.iterations - 1) + before


def _copied_once(app: Application) -> str:
    """What copying the loop's input once, before it, would save at most, as the trace measured it: its copies
    in after the first iteration (the steady iteration's, times the iterations after the first); a clause
    (empty where it copies nothing in). At most: copies that overlap kernels or other copies take less than
    their time from the run. Which copies carry unchanged data the trace cannot say."""
    loop = app.loop
    each = float(loop.per_iteration.get("h2d_s", 0.0)) if loop is not None else 0.0
    if each <= 0 or loop.iterations < 2:
        return ""
    b = float(loop.per_iteration.get("h2d_bytes", 0.0))
    return (f" (its copies in, {format_size(b)} an iteration, took {format_time(each)} an iteration as traced: "
            f"copied once before the loop, at most {format_time(each * (loop.iterations - 1))} less over its "
            f"{loop.iterations} iterations, where none of it changes between them)")


def _graphs_traced_whole(app: Application) -> list[str]:
    """What the trace could not count: CUDA graph launches traced whole (nsys's default), a line, or none."""
    if not app.graph_launches:
        return []
    return [f"{app.graph_launches} CUDA graph launches were traced whole: the copies and kernels inside them are not "
            f"counted here; {GRAPH_NODES}"]


def _verdict(app, out: AppAdvice, tied: list[Prediction], now_s: float, base: Prediction, within_noise: bool) -> str:
    """One paragraph: what it does now, its loop as read, and the advice (or why to keep it)."""
    current, loop = app.strategy, out.loop_advice
    lines = [f"{app.name} on {app.gpu}: {current} now ({app.strategy_why})."]
    if app.loop is not None:
        lines.append(f"Its loop: {app.loop.iterations} iterations of {format_time(app.loop.steady_s)} "
                     f"({format_time(now_s)} measured); read as {out.workload.describe()}.")
    if within_noise:
        lines.append(f"{loop.note}: it is already near its best; keep it.")
    elif loop.strategy == current and loop.saving_s > 0:  # the way it has, its memory page-locked once
        lines.append("It already uses the strategy predicted fastest"
                     + (" or one within the prediction's error of it" if len(tied) > 1 else "")
                     + f", but page-locks and releases its memory every iteration: keep {current}, pinned once, "
                     f"predicted {format_time(loop.predicted_s)} instead of {format_time(now_s)} (saves "
                     f"{format_time(loop.saving_s)}, {loop.saving_s / now_s:.0%}).")
    elif loop.strategy == current:
        lines.append("It already uses the strategy predicted fastest"
                     + (" or one within the prediction's error of it" if len(tied) > 1 else "") + ": keep it.")
    else:
        lines.append(f"Use {loop.strategy}: predicted {format_time(loop.predicted_s)} instead of {format_time(now_s)} "
                     f"(saves {format_time(loop.saving_s)}, {loop.saving_s / now_s:.0%})"
                     + (f"; a tie: {loop.note}" if loop.tie else "") + ".")
    model_now = base.whole_s
    if model_now > 0 and abs(model_now / now_s - 1) > 0.3 and base.strategy == current:
        lines.append(f"(The calibration predicts its loop as it runs now at {format_time(model_now)} against "
                     f"{format_time(now_s)} measured: savings are its differences, the rest of the run is its own.)")
    return " ".join(lines)
