"""Nsight Systems SQLite exports written from a description of an application's loop: the tables and
columns `nsys export --type sqlite` writes (2025.3) that umprof reads, for tests and the advise
benchmark (``benchmarks/advise_bench.py``: a million copies and kernels)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

PID, TID = 4242, 4242
GLOBAL_PID = PID << 24
GLOBAL_TID = GLOBAL_PID | TID
MEMCPY_OPER = [(0, "CUDA_MEMCPY_OPER_UNKNOWN", "Unknown"), (1, "CUDA_MEMCPY_OPER_HTOD", "Host-to-Device"),
               (2, "CUDA_MEMCPY_OPER_DTOH", "Device-to-Host"), (3, "CUDA_MEMCPY_OPER_HTOA", "Host-to-Array"),
               (4, "CUDA_MEMCPY_OPER_ATOH", "Array-to-Host"), (8, "CUDA_MEMCPY_OPER_DTOD", "Device-to-Device"),
               (11, "CUDA_MEMCPY_OPER_UNIFIED_HTOD", "Unified Host-to-Device"),
               (12, "CUDA_MEMCPY_OPER_UNIFIED_DTOH", "Unified Device-to-Host")]
MEM_KIND = [(0, "CUDA_MEMOPR_MEMORY_KIND_UNKNOWN", "Unknown"), (1, "CUDA_MEMOPR_MEMORY_KIND_PAGEABLE", "Pageable"),
            (2, "CUDA_MEMOPR_MEMORY_KIND_PINNED", "Pinned"), (3, "CUDA_MEMOPR_MEMORY_KIND_DEVICE", "Device"),
            (4, "CUDA_MEMOPR_MEMORY_KIND_ARRAY", "Array"),
            (5, "CUDA_MEMOPR_MEMORY_KIND_MANAGED", "Managed")]
KIND = {"pageable": 1, "pinned": 2, "device": 3, "array": 4, "managed": 5}
DIRECTION = {"h2d": 1, "d2h": 2, "h2a": 3, "a2h": 4, "um_h2d": 11, "um_d2h": 12}


@dataclass
class Op:
    """One step of an iteration: a copy ('h2d' / 'd2h' / 'um_h2d' / 'um_d2h'; 'h2a' / 'a2h' to and from a CUDA
    array), a kernel, or a host gap."""

    what: str  # 'copy', 'kernel', 'host', 'call'
    direction: str = ""
    bytes: int = 0
    host: str = "pageable"
    stream: int = 7
    sync: bool = True
    dur_ns: int = 1000
    name: str = "step_kernel"
    first_dur_ns: int = 0  # a copy's duration in the loop's first iteration, where it differs (a first touch)


@dataclass
class App:
    iterations: int
    steps: list[Op]
    first: list[Op] = field(default_factory=list)  # before the loop
    gpu: str = "NVIDIA H200"
    memory_bytes: int = 150_109_880_320  # an H200 as cuDeviceTotalMem reports it
    calls: list[str] = field(default_factory=list)  # once at the start ('cudaMallocHost', 'cudaMallocManaged')
    end_calls: list[str] = field(default_factory=list)  # once at the end ('cudaStreamDestroy', 'cudaFree')
    ranges: bool = False  # an NVTX range per iteration


def write_trace(path: Path, app: App) -> Path:
    """Write the application's trace as Nsight Systems' SQLite export would hold it."""
    path = Path(path)
    path.unlink(missing_ok=True)
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, label TEXT);
        CREATE TABLE ENUM_CUDA_MEM_KIND (id INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, label TEXT);
        CREATE TABLE TARGET_INFO_GPU (vendor TEXT, id INTEGER, name TEXT, busLocation TEXT, totalMemory INTEGER,
            cuDevice INTEGER);
        CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT);
        CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER,
            globalTid INTEGER, correlationId INTEGER, nameId INTEGER, returnValue INTEGER, callchainId INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER,
            contextId INTEGER, greenContextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER,
            bytes INTEGER, copyKind INTEGER, deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER,
            srcDeviceId INTEGER, srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER,
            migrationCause INTEGER, graphNodeId INTEGER, virtualAddress INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER,
            contextId INTEGER, greenContextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER,
            demangledName INTEGER, shortName INTEGER, mangledName INTEGER, gridX INTEGER, blockX INTEGER);
        CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER, rangeId INTEGER,
            category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER,
            domainId INTEGER);
        CREATE TABLE CUDA_UM_GPU_PAGE_FAULT_EVENTS (start INTEGER, end INTEGER, globalPid INTEGER, deviceId INTEGER,
            address INTEGER, numberOfPageFaults INTEGER, faultAccessType INTEGER);
        CREATE TABLE CUDA_UM_CPU_PAGE_FAULT_EVENTS (start INTEGER, globalPid INTEGER, address INTEGER);
    """)
    con.executemany("INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (?, ?, ?)", MEMCPY_OPER)
    con.executemany("INSERT INTO ENUM_CUDA_MEM_KIND VALUES (?, ?, ?)", MEM_KIND)
    con.execute("INSERT INTO TARGET_INFO_GPU VALUES ('NVIDIA', 0, ?, '0000:00:06.0', ?, 0)", (app.gpu, app.memory_bytes))
    con.execute("INSERT INTO PROCESSES VALUES (?, ?, 'app')", (GLOBAL_PID, PID))
    strings: dict[str, int] = {}

    def sid(text):
        if text not in strings:
            strings[text] = len(strings) + 1
        return strings[text]

    calls, copies, kernels, ranges, faults = [], [], [], [], []
    t, corr = 1_000_000, 0

    def call(name, dur=2000):
        nonlocal t, corr
        corr += 1
        calls.append((t, t + dur, 1, GLOBAL_TID, corr, sid(name + "_v3020"), 0, 0))
        t += dur
        return corr

    for name in app.calls:
        call(name, 50_000)
    for it in range(-1 if app.first else 0, app.iterations):
        steps = app.first if it < 0 else app.steps
        begin = t
        for op in steps:
            if op.what == "host":
                t += op.dur_ns
            elif op.what == "call":
                call(op.name, op.dur_ns)
            elif op.what == "kernel":
                c = call("cudaLaunchKernel", 3000)
                kernels.append((t, t + op.dur_ns, 0, 1, 0, op.stream, c, GLOBAL_PID, sid(op.name), sid(op.name), 0,
                                132, 256))
                t += op.dur_ns
            elif op.direction.startswith("um_"):
                kind = DIRECTION[op.direction]
                src, dst = (KIND["managed"], KIND["device"]) if op.direction == "um_h2d" else (KIND["device"], KIND["managed"])
                copies.append((t, t + op.dur_ns, 0, 1, 0, op.stream, 0, GLOBAL_PID, op.bytes, kind, 0, src, dst,
                               0, 1, 0, 1, 1, 0, 0))
                faults.append((t, t + op.dur_ns, GLOBAL_PID, 0, 0, 4, 0))
                t += op.dur_ns
            else:
                c = call("cudaMemcpy" if op.sync else "cudaMemcpyAsync", 1500)
                gpu_side = KIND["array" if op.direction in ("h2a", "a2h") else "device"]
                src, dst = (KIND[op.host], gpu_side) if op.direction in ("h2d", "h2a") else (gpu_side, KIND[op.host])
                dur = op.first_dur_ns if it == 0 and op.first_dur_ns else op.dur_ns
                copies.append((t, t + dur, 0, 1, 0, op.stream, c, GLOBAL_PID, op.bytes, DIRECTION[op.direction],
                               0, src, dst, 0, 1, 0, 1, 0, 0, 0))
                t += dur
        if app.ranges and it >= 0:
            ranges.append((begin, t, 59, 0, 0, 0, f"iteration {it}", GLOBAL_TID, GLOBAL_TID, None, 0))
    for name in app.end_calls:
        call(name, 50_000)
    con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, ?, ?, ?, ?, ?, ?)", calls)
    con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    copies)
    con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", kernels)
    con.executemany("INSERT INTO NVTX_EVENTS VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", ranges)
    con.executemany("INSERT INTO CUDA_UM_GPU_PAGE_FAULT_EVENTS VALUES (?, ?, ?, ?, ?, ?, ?)", faults)
    con.executemany("INSERT INTO StringIds VALUES (?, ?)", [(i, s) for s, i in strings.items()])
    con.commit()
    con.close()
    return path


def pageable_loop(iterations=40, mib=64, gpu="NVIDIA H200", ranges=False) -> App:
    """A loop of a frame copied in from pageable memory, a kernel, a result copied back: the copies'
    times as a pageable copy of that size runs (about 10 GB/s in, 14 GB/s out)."""
    b = mib * 2**20
    return App(iterations=iterations, gpu=gpu, ranges=ranges, steps=[
        Op("host", dur_ns=int(b / 12e9 * 1e9)),
        Op("copy", "h2d", b, "pageable", dur_ns=int(b / 10e9 * 1e9)),
        Op("kernel", dur_ns=int(2 * b / 3e12 * 1e9)),
        Op("copy", "d2h", b, "pageable", dur_ns=int(b / 14e9 * 1e9)),
        Op("host", dur_ns=int(b / 12e9 * 1e9))])
