"""What each change is, in the calls of the program's own framework: ``change_text(strategy, workload, current,
framework)``. A framework is what the program allocates and copies with: "cuda" (the CUDA runtime, C or C++),
"pycuda" (pycuda and cuda-bindings), "pytorch" and "cupy", told from the trace by
:func:`umprof.model.frameworks.evidence` (``framework_of`` where only the application is at hand). PyTorch's and
CuPy's changes are :func:`umprof.model.frameworks.change_for`'s; pycuda's are TEXTS', and every way falls back to
the CUDA runtime's words where its framework has none of its own."""

from __future__ import annotations

from umprof.core.units import format_size
from umprof.measure import strategies
from umprof.model import frameworks, ties
from umprof.model.advice import thresholds as th
from umprof.model.application import Application
from umprof.model.calibration import kind
from umprof.model.workload import Workload

# how the change says it (benchmarks/apps/judge.py finds the variant of an application that applies it by these words)
PART_BACK = "copy back only what the host reads"
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
# what a pycuda program changes from what it has, where its words differ from the CUDA runtime's (CHANGES); PyTorch's
# and CuPy's changes are frameworks.change_for's (OWN_TEXTS)
TEXTS = {"pycuda": PYTHON_CHANGES}
# the change for one flow of pageable copies made from page-locked memory, in the CUDA runtime's and pycuda's calls
# (frameworks.change_for's "flow-pinned" in PyTorch's and CuPy's)
FLOW_PINNED = {"cuda": "allocate this flow's host buffer with cudaMallocHost (or cudaHostRegister it)",
               "pycuda": "allocate this flow's host array with pycuda.driver.pagelocked_empty"}
# the frameworks whose changes frameworks.change_for writes (TEXTS has the others')
OWN_TEXTS = ("pytorch", "cupy")


def flow_pinned(framework: str) -> str:
    """The change for one flow of pageable copies made from page-locked memory, in the framework's calls."""
    if framework in OWN_TEXTS:
        return frameworks.change_for(framework, "flow-pinned")
    return FLOW_PINNED.get(framework, FLOW_PINNED["cuda"])


def is_python(app: Application) -> bool:
    """Whether the application's process is a Python interpreter: its name in the trace, or its main thread's (a
    script started by its #! line, or by a wrapper that execs the interpreter, is named as the script)."""
    return frameworks.is_python_process((app.name, app.program))


def framework_of(app: Application) -> str:
    """The framework the application's changes are said in: "pycuda" for a Python process, else "cuda"."""
    return "pycuda" if is_python(app) else "cuda"


def change_text(strategy: str, w: Workload, current: str | None, framework: str) -> str:
    """What the program changes to use ``strategy`` instead of ``current``, in its framework's calls."""
    if strategy == current:
        return "keep it as it is"
    if framework in OWN_TEXTS:
        return _own_text(strategy, w, framework)
    text = TEXTS.get(framework, {}).get(strategy) or CHANGES.get(strategy, strategy)
    if framework == "cuda" and ties.is_managed(current):
        text = FROM_MANAGED.get(strategy, text)
    if strategy == "pinned-pipelined":
        text = text.format(chunks=strategies.get(strategy).describe_chunking(w.bytes))
    if ties.is_managed(current) and kind(strategy) == "copy" and w.gpu_writes > 0 and w.host_reads < th.HOST_READS_PART:
        # a managed program has no copies back to keep: the new ones bring back what its host reads, as priced (its
        # host sampling an array the GPU updates: every 4096th record, 0.03% of it, is what it reads)
        text += (f"; {PART_BACK} ({w.host_reads:.2%} of the buffer an iteration, "
                 f"{format_size(w.host_reads * w.bytes)}; where that is records spread through it, one cudaMemcpy2D "
                 "gathers them)")
    return text


def _own_text(strategy: str, w: Workload, framework: str) -> str:
    """The change in PyTorch's or CuPy's own calls (frameworks.change_for), the wait before the host reads what an
    asynchronous copy brings back said where it reads it; the CUDA runtime's words only where it has none."""
    chunks = strategies.get(strategy).describe_chunking(w.bytes) if strategy == "pinned-pipelined" else None
    text = frameworks.change_for(framework, strategy, {"chunks": chunks, "d2h": w.host_reads > 0,
                                                       "h2d": w.host_writes > 0})
    return text or CHANGES.get(strategy, strategy)
