"""Which framework moves a program's data (PyTorch, CuPy, pycuda, or CUDA C/C++ itself), told from its trace,
and each host-memory strategy's change written as that framework's users write it.

The evidence (:func:`evidence`), strongest first: a torch.profiler trace is a PyTorch program's; PyTorch's
ranges (``aten::`` and ``autograd::`` ops, ``ProfilerStep#``: torch.profiler's CPU ops, or NVTX ranges under
``torch.autograd.profiler.emit_nvtx``); kernels PyTorch compiled (``at::native::``, ``at::cuda::``,
``c10::``) or CuPy compiled (``cupy_``, its elementwise and reduction kernels' names); PyTorch's main thread
(``pt_main_thread``); a Python interpreter whose allocator asks ``cudaStreamIsCapturing`` (PyTorch's caching
allocator, before each new block); a Python interpreter whose CUDA calls are the driver API's (``cuMemcpyHtoD``,
``cuLaunchKernel``: pycuda calls no runtime API), which is read as pycuda; else CUDA C/C++.

The changes (:func:`change_for`) are keyed by umprof's strategy names, as its advice names them, plus
``resident`` (the data kept on the GPU), ``packed`` (many small copies made one) and, for PyTorch and CuPy,
``flow-pinned`` (one flow's pageable copies made from page-locked memory). PyTorch has no managed, mapped or
write-combined host tensors: its entries for those ways say so and what a PyTorch user can do instead.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import NamedTuple

import pandas as pd

from umprof.core.units import format_size

FRAMEWORKS = ("pytorch", "cupy", "pycuda", "cuda")
# PyTorch's ops as torch.profiler and emit_nvtx name them, and torch.profiler's step annotation
TORCH_OP = "aten::"  # an operator of torch's, as torch.profiler and emit_nvtx name it
TORCH_RANGE = re.compile(r"^(aten::|autograd::|torch::|c10d::|ProfilerStep#|enumerate\(DataLoader\)|Optimizer\.)")
TORCH_KERNEL = re.compile(r"\b(?:at::native::|at::cuda::|at_cuda_detail::|c10::)")
# the same kernels as Nsight Systems names them (its short names drop the namespace): ATen's templates, whose names
# are PyTorch's own, counted for a Python process only
TORCH_SHORT_KERNEL = re.compile(r"^(?:vectorized_elementwise_kernel|unrolled_elementwise_kernel|elementwise_kernel|"
                                r"reduce_kernel|distribution_elementwise_grid_stride_kernel|index_elementwise_kernel|"
                                r"CatArrayBatchedCopy|indexSelect(?:Large|Small)Index|cunn_|"
                                r"vectorized_layer_norm_kernel|fused_dropout_kernel)")
CUPY_KERNEL = re.compile(r"^(?:void\s+)?cupy_")  # CuPy names its generated kernels cupy_<op>
TORCH_THREADS = ("pt_main_thread", "pt_autograd", "pt_data_pin")  # threads PyTorch names
PYTHON = re.compile(r"python[0-9.]*")
# the call PyTorch's caching allocator makes before each cudaMalloc of a new block (it must not allocate while a CUDA
# graph is captured); pycuda never makes it
TORCH_ALLOCATOR_CALL = "cudaStreamIsCapturing"
# a share of a Python program's CUDA calls this large made through the driver API marks pycuda (PyTorch and CuPy
# copy and allocate through the runtime API; pycuda has no runtime calls at all)
DRIVER_SHARE = 0.5
# kernels of one framework's naming that make it the framework: a program that mixes frameworks is the one
# whose kernels are more, and a few stray kernels of another library do not decide it
KERNEL_SHARE = 0.2


class Detected(NamedTuple):
    """A framework and the evidence that names it."""

    framework: str
    why: str


def detect(tables_or_app) -> str:
    """The framework that moves the program's data: "pytorch", "cupy", "pycuda" or "cuda", from a
    :class:`~umprof.nsight.tables.TraceTables` or an :class:`~umprof.model.application.Application`."""
    return evidence(tables_or_app).framework


def evidence(tables_or_app) -> Detected:
    """:func:`detect`'s answer with the evidence for it, in words."""
    facts = _Facts.of(tables_or_app)
    if facts.source == "kineto":
        return Detected("pytorch", "a torch.profiler trace")
    torch_ranges = int(facts.range_names.str.match(TORCH_RANGE).sum()) if len(facts.range_names) else 0
    torch_kernels, cupy_kernels = _kernel_counts(facts.kernel_names, facts.python)
    kernels = max(len(facts.kernel_names), 1)
    if cupy_kernels / kernels >= KERNEL_SHARE and cupy_kernels > torch_kernels and not torch_ranges:
        return Detected("cupy", f"{cupy_kernels} of its {kernels} kernels are CuPy's (cupy_*)")
    if torch_ranges:
        return Detected("pytorch", f"{torch_ranges} PyTorch op ranges (aten::*)")
    if torch_kernels / kernels >= KERNEL_SHARE:
        return Detected("pytorch", f"{torch_kernels} of its {kernels} kernels are PyTorch's (ATen's)")
    if facts.threads & set(TORCH_THREADS):
        return Detected("pytorch", f"PyTorch's thread {sorted(facts.threads & set(TORCH_THREADS))[0]}")
    if facts.python and facts.calls.get(TORCH_ALLOCATOR_CALL):
        return Detected("pytorch", f"a Python process whose allocator asks {TORCH_ALLOCATOR_CALL} (PyTorch's caching "
                                   "allocator, before each new block)")
    if facts.python:
        driver, runtime = _api_counts(facts.calls)
        if driver and driver / (driver + runtime) >= DRIVER_SHARE:
            return Detected("pycuda", f"a Python process whose CUDA calls are the driver API's ({driver} of "
                                      f"{driver + runtime})")
        return Detected("pycuda", "a Python process without PyTorch's or CuPy's ops or kernels")
    return Detected("cuda", "a native process without PyTorch's, CuPy's or Python's marks")


class _Facts(NamedTuple):
    source: str
    range_names: pd.Series
    kernel_names: pd.Series
    calls: dict  # name → count
    python: bool
    threads: set

    @classmethod
    def of(cls, x) -> "_Facts":
        if hasattr(x, "ranges"):  # TraceTables
            names = [str(n) for n in x.processes.get("name", [])] + [str(n) for n in x.processes.get("program", [])]
            return cls(getattr(x, "source", "nsys"), x.ranges["name"].astype(str), x.kernels["name"].astype(str),
                       x.calls["name"].value_counts().to_dict(), is_python_process(names), set(names))
        names = [x.name, x.program]
        ranges = x.copies["range"].astype(str) if "range" in x.copies else pd.Series(dtype=str)
        return cls("", ranges, x.kernels["name"].astype(str), dict(x.calls), is_python_process(names), set(names))


def records_ops(ranges: pd.DataFrame | None, pid: int | None = None) -> bool:
    """Whether the trace's ranges record torch's operators (torch.profiler's, or ``emit_nvtx``'s NVTX ranges), of
    process ``pid`` where given: without them, no operator the host runs can be seen, nor priced run on the GPU."""
    if ranges is None or ranges.empty or "name" not in ranges:
        return False
    mine = ranges[ranges["pid"] == pid] if pid is not None and "pid" in ranges else ranges
    return bool(mine["name"].astype(str).str.startswith(TORCH_OP).any())


def torch_without_ops(tables) -> str:
    """What shows a PyTorch program in a :class:`~umprof.nsight.tables.TraceTables` that records none of torch's
    operators ('' where it is not PyTorch's, or records them): no operator the host runs can be priced from it."""
    found = evidence(tables)
    return found.why if found.framework == "pytorch" and not records_ops(tables.ranges) else ""


def is_python_process(names) -> bool:
    """Whether any of a process's names (its command, its main thread's executable) is a Python interpreter's."""
    return any(PYTHON.fullmatch(PurePosixPath(str(n)).name) for n in names if n)


def _kernel_counts(names: pd.Series, python: bool) -> tuple[int, int]:
    """PyTorch's kernels (by their full names, or for a Python process their short ones) and CuPy's."""
    if not len(names):
        return 0, 0
    torch = names.str.contains(TORCH_KERNEL) | (python & names.str.match(TORCH_SHORT_KERNEL))
    return int(torch.sum()), int(names.str.match(CUPY_KERNEL).sum())


def _api_counts(calls: dict) -> tuple[int, int]:
    """Driver API calls (cu*) and runtime API calls (cuda*) among a program's CUDA calls."""
    driver = sum(n for name, n in calls.items() if name.startswith("cu") and not name.startswith("cuda"))
    runtime = sum(n for name, n in calls.items() if name.startswith("cuda"))
    return driver, runtime


# -- the changes, in each framework's idiom -------------------------------------------------------------------------

TORCH_D2H_SYNC = ("a non_blocking copy to the host returns before the data is there: record an event after it "
                  "(`done = torch.cuda.Event(); done.record()`) and call `done.synchronize()` (or "
                  "`torch.cuda.current_stream().synchronize()`) before the host reads the tensor")
TORCH_PINNED = ("pin the host tensors once, not per call: `x = x.pin_memory()` where a long-lived tensor is made, "
                "or preallocated pinned buffers (`buf = torch.empty(shape, dtype=dtype, pin_memory=True)`) that each "
                "batch is copied into (`buf.copy_(batch)`), then `buf.to(device, non_blocking=True)`; results back "
                "into a preallocated pinned tensor with `out.copy_(y, non_blocking=True)`")
TORCH_SIDE_STREAM = ("upload the next batch or layer on a side stream while this one computes: `s = "
                     "torch.cuda.Stream()`; `with torch.cuda.stream(s): nxt = buf.to(device, non_blocking=True)`; "
                     "before using it `torch.cuda.current_stream().wait_stream(s)` and `nxt.record_stream("
                     "torch.cuda.current_stream())`")
TORCH_SIDE_STREAM_OUT = ("copy the results out on a side stream while the next step computes: `s = "
                         "torch.cuda.Stream()`; `s.wait_stream(torch.cuda.current_stream())`; `with torch.cuda.stream("
                         "s): out.copy_(y, non_blocking=True)` into a preallocated pinned `out`; `y.record_stream(s)`, "
                         "and where the next step changes `y` in place (weights an optimizer updates) copy it into a "
                         "GPU buffer first and copy that out")
# why PyTorch cannot make some ways (said where they are not ranked, ``CANNOT_MAKE``, and in their changes' words)
TORCH_READS_CUDA_ONLY = "PyTorch's CUDA ops read CUDA tensors only, never host memory in place"
TORCH_HAS_NO_MANAGED = "PyTorch has no managed-memory tensors"
TORCH_HAS_NO_WRITE_COMBINED = "PyTorch allocates no write-combined host memory"
TORCH_NO_MANAGED = (TORCH_HAS_NO_MANAGED + " (its caching allocator hands out cudaMalloc'd memory); "
                    "instead keep the data on the GPU where it fits in free memory (`data = data.to(device)` once, "
                    "before the loop), else pin it once (`data = data.pin_memory()`) and copy each part with "
                    "`.to(device, non_blocking=True)`")
TORCH_NO_IN_PLACE = (TORCH_READS_CUDA_ONLY + "; the nearest is pinned "
                     "tensors copied with `.to(device, non_blocking=True)` on a side `torch.cuda.Stream`, which "
                     "overlap the kernels as reading in place would")
PYTORCH_CHANGES = {
    "pageable": "keep the CPU tensors and their `.to(device)` / `.cpu()` copies as they are",
    "flow-pinned": "pin this flow's host tensor once (`t = t.pin_memory()` where it is made), or copy it through a "
                   "preallocated pinned buffer (`buf = torch.empty(shape, dtype=dtype, pin_memory=True)`), with "
                   "`.to(device, non_blocking=True)` / `out.copy_(y, non_blocking=True)`",
    "pinned": TORCH_PINNED,
    "write-combined": TORCH_HAS_NO_WRITE_COMBINED + "; its nearest is pinned memory: " + TORCH_PINNED,
    "zero-copy": TORCH_NO_IN_PLACE,
    "mapped": TORCH_NO_IN_PLACE,
    "system": TORCH_NO_IN_PLACE,
    "pageable-registered": "page-lock the existing CPU tensors once, before the loop: `t = t.pin_memory()` (one copy, "
                           "then pinned for good), or in place with `torch.cuda.cudart().cudaHostRegister("
                           "t.data_ptr(), t.nbytes, 0)` (and `cudaHostUnregister` before `t` is freed); make the "
                           "copies `.to(device, non_blocking=True)`",
    "pageable-staged": "keep the CPU tensors and copy them through two preallocated pinned buffers "
                       "(`torch.empty(chunk, dtype=dtype, pin_memory=True)`), in turn: the host fills one "
                       "(`buf.copy_(x[i:j])`) while the other's `.to(device, non_blocking=True)` runs on a side "
                       "`torch.cuda.Stream`, an event per buffer (`ev.record(s)`, `ev.synchronize()` before "
                       "refilling it)",
    "pinned-pipelined": "pinned tensors, each iteration's copies and compute in {chunks}: " + TORCH_SIDE_STREAM,
    # a loop that only copies out (snapshots, results): the side stream carries the copies back
    "pinned-pipelined-out": "pinned tensors, each iteration's copies in {chunks}: " + TORCH_SIDE_STREAM_OUT,
    "managed": TORCH_NO_MANAGED,
    "managed-prefetch": TORCH_NO_MANAGED,
    **{f"managed-advise-{w}": TORCH_NO_MANAGED
       for w in ("read-mostly", "prefer-gpu", "prefer-host", "accessed-by-gpu")},
    "resident": "keep the data on the GPU: move it once, before the loop (`data = data.to(device)`{fits}), and index "
                "the batches there (`batch = data[idx]`) instead of copying each one every epoch",
    "packed": "pack the small tensors it copies one by one ({count} in a row) into one: keep the host tensors as "
              "views of one pinned flat buffer (`flat = torch.cat([t.reshape(-1) for t in ts]).pin_memory()`, each "
              "`t` then a `flat[i:j].view(shape)`) and their GPU tensors as views of one flat GPU tensor, and copy "
              "once where it copied each (`gpu_flat.copy_(flat, non_blocking=True)`; back: `flat.copy_(gpu_flat, "
              "non_blocking=True)`)",
    "async-readback": "stop waiting on each small read-back ({count} of them: `.item()`, `.cpu()` or `.tolist()` of a "
                      "tensor the GPU is still computing): keep the values on the GPU (`vals[i] = v` in a "
                      "preallocated GPU tensor) and read them once after the loop (`vals.tolist()`), or copy each "
                      "`non_blocking=True` into a preallocated pinned tensor and read it some steps later, after "
                      "an event recorded with the copy (`ev.record()`; `ev.synchronize()` before the host reads): the "
                      "host then issues the next steps' work while the GPU runs",
}
CUPY_PINNED_POOL = "cupy.cuda.set_pinned_memory_allocator(cupy.cuda.PinnedMemoryPool().malloc)"
CUPY_DEVICE_POINTER = "`cupy.cuda.runtime.pointerGetAttributes(a.ctypes.data).devicePointer`"
CUPY_MANAGED = "cupy.cuda.set_allocator(cupy.cuda.MemoryPool(cupy.cuda.malloc_managed).malloc)"
CUPY_ADVICE = {"read-mostly": "cudaMemAdviseSetReadMostly, the GPU only reads them",
               "prefer-gpu": "cudaMemAdviseSetPreferredLocation, the GPU",
               "prefer-host": "cudaMemAdviseSetPreferredLocation, cupy.cuda.runtime.cudaCpuDeviceId",
               "accessed-by-gpu": "cudaMemAdviseSetAccessedBy, the GPU"}
CUPY_CHANGES = {
    "pageable": "keep the numpy arrays and their `cupy.asarray` / `.get()` copies as they are",
    "unpooled": "with CuPy, `d.set(a)` into an array made once, not `cupy.asarray(a)`, which copies `a` into its "
                "pinned pool first",
    "flow-pinned": "allocate this flow's host array pinned, once, with `cupyx.empty_pinned(shape, dtype)`",
    "pinned": "allocate the host arrays pinned, once, with `cupyx.empty_pinned(shape, dtype)` (freed blocks return to "
              f"CuPy's pinned pool: `{CUPY_PINNED_POOL}`), and copy with `d.set(h)` / `d.get(out=h)`",
    "write-combined": "allocate the arrays the host only writes with `cupy.cuda.runtime.hostAlloc(nbytes, 4)` (4: "
                      "cudaHostAllocWriteCombined; a numpy view of it with numpy.ctypeslib.as_array, "
                      "`cupy.cuda.runtime.freeHost` after); keep the copies",
    "zero-copy": "allocate the host arrays with `cupy.cuda.runtime.hostAlloc(nbytes, 2)` (2: cudaHostAllocMapped) "
                 "and give the kernels a cupy.ndarray over its device pointer "
                 f"({CUPY_DEVICE_POINTER}, wrapped in cupy.cuda.UnownedMemory); drop the copies",
    "mapped": "page-lock the existing numpy arrays once, mapped (`cupy.cuda.runtime.hostRegister(a.ctypes.data, "
              "a.nbytes, 2)`, 2: cudaHostRegisterMapped), and give the kernels a cupy.ndarray over their device "
              f"pointers ({CUPY_DEVICE_POINTER}); drop the copies",
    "system": "give the kernels a cupy.ndarray over the numpy arrays' own memory (cupy.cuda.UnownedMemory on "
              "a.ctypes.data: HMM); drop the copies",
    "pageable-registered": "page-lock the existing numpy arrays once, before the loop "
                           "(`cupy.cuda.runtime.hostRegister(a.ctypes.data, a.nbytes, 0)`; `hostUnregister` before "
                           "they are freed); copy with `d.set(a, stream=s)`",
    "pageable-staged": "keep the numpy arrays and copy through two pinned buffers (`cupyx.empty_pinned`), in turn: the "
                       "host fills one while the other's `d[i:j].set(buf, stream=s)` runs on its own "
                       "`cupy.cuda.Stream(non_blocking=True)`, an event per buffer (`cupy.cuda.Event()`, "
                       "`ev.synchronize()` before refilling it)",
    "pinned-pipelined": "pinned arrays (`cupyx.empty_pinned`), each iteration's copies and kernels in {chunks}, each "
                        "chunk on its own `cupy.cuda.Stream(non_blocking=True)` (`d.set(h, stream=s)`, the kernels "
                        "under `with s:`, `d.get(stream=s, out=h)`; `s.synchronize()` before the host reads `h`)",
    "managed": f"allocate the arrays in managed memory (`{CUPY_MANAGED}`) and let the host and the kernels use the "
               "same arrays; drop the copies",
    "managed-prefetch": f"managed arrays (`{CUPY_MANAGED}`), prefetched with `cupy.cuda.runtime.memPrefetchAsync("
                        "a.data.ptr, a.nbytes, device_id, stream.ptr)` before the kernels and to "
                        "cupy.cuda.runtime.cudaCpuDeviceId before the host reads; drop the copies",
    **{f"managed-advise-{w}": f"managed arrays (`{CUPY_MANAGED}`), advised once with `cupy.cuda.runtime.memAdvise("
                              f"a.data.ptr, a.nbytes, cupy.cuda.runtime.{how})`; drop the copies"
       for w, how in CUPY_ADVICE.items()},
    "resident": "keep the data on the GPU: `d = cupy.asarray(data)` once, before the loop{fits}, and index it there "
                "instead of copying each part every pass",
    "packed": "pack the small arrays it copies one by one ({count} in a row) into one: make them views of one "
              "pinned flat array (`flat = cupyx.empty_pinned(total, dtype)`, each a `flat[i:j].reshape(shape)`) and "
              "their GPU arrays views of one flat cupy array, and copy once where it copied each "
              "(`d_flat.set(flat, stream=s)`; back: `d_flat.get(stream=s, out=flat)`, `s.synchronize()` before the "
              "host reads)",
    "async-readback": "stop waiting on each small read-back ({count} of them: `cupy.asnumpy`, `.get()` or `.item()` of "
                      "an array the GPU is still computing): keep the values on the GPU (`vals[i] = v`) and read them "
                      "once after the loop (`cupy.asnumpy(vals)`), or copy each into a pinned array "
                      "(`v.get(stream=s, out=pinned[i])`) and read it some steps later, after `s.synchronize()` or an "
                      "event: the host then issues the next steps' work while the GPU runs",
}
# the entries pycuda's and CUDA C's change texts (umprof's advice) lack
PYCUDA_CHANGES = {"resident": "keep the data on the GPU: `d = pycuda.gpuarray.to_gpu(data)` once, before the "
                              "loop{fits}, and pass the kernels slices of it instead of copying each part every pass",
                  "packed": "pack the small arrays it copies one by one ({count} in a row) into one: make "
                            "them views of one page-locked flat array (`flat = pycuda.driver.pagelocked_empty(total, "
                            "dtype)`, each a `flat[i:j].reshape(shape)`) and their device buffers offsets into one "
                            "allocation, and copy once where it copied each (`pycuda.driver.memcpy_htod_async(d_flat, "
                            "flat, stream)`; back: `memcpy_dtoh_async(flat, d_flat, stream)`, `stream.synchronize()` "
                            "before the host reads)",
                  "async-readback": "stop waiting on each small read-back ({count} of them): copy each with "
                                    "`pycuda.driver.memcpy_dtoh_async` into a page-locked array "
                                    "(`pycuda.driver.pagelocked_empty`) and read it some steps later, after an "
                                    "event recorded with the copy (`ev.record(stream)`; `ev.synchronize()` before the "
                                    "host reads): the host then issues the next steps' work while the GPU runs"}
CUDA_CHANGES = {"resident": "keep the data on the GPU: cudaMalloc it and cudaMemcpy it in once, before the loop{fits}, "
                            "and let the kernels index it there instead of copying each part every pass",
                "packed": "pack the small buffers it copies one by one ({count} in a row) into one: place them "
                          "at offsets of one cudaMallocHost'd buffer and their device copies at the same offsets of "
                          "one cudaMalloc'd buffer, and make one cudaMemcpyAsync of the whole where it made one a "
                          "buffer (back: "
                          "cudaStreamSynchronize before the host reads)",
                "async-readback": "stop waiting on each small read-back ({count} of them): cudaMemcpyAsync each into "
                                  "cudaMallocHost'd memory and read it some steps later, after a cudaEventRecord with "
                                  "the copy and a cudaEventSynchronize before the host reads: the host then issues "
                                  "the next steps' work while the GPU runs"}
CHANGES = {"pytorch": PYTORCH_CHANGES, "cupy": CUPY_CHANGES, "pycuda": PYCUDA_CHANGES, "cuda": CUDA_CHANGES}
D2H_SYNC = {"pytorch": TORCH_D2H_SYNC}
# the calls that bracket a program's loop for `nsys profile --capture-range=cudaProfilerApi`, in each framework
PROFILER_RANGE = {"pytorch": "`torch.cuda.profiler.start()` and `torch.cuda.profiler.stop()`",
                  "cupy": "`cupy.cuda.profiler.start()` and `cupy.cuda.profiler.stop()`",
                  "pycuda": "`pycuda.driver.start_profiler()` and `pycuda.driver.stop_profiler()`",
                  "cuda": "`cudaProfilerStart()` and `cudaProfilerStop()`"}
# the ways that make the host's copies back asynchronous, after which the host must wait before it reads
ASYNC_BACK = ("pinned", "write-combined", "pageable-registered", "pageable-staged", "pinned-pipelined", "packed")


# the ways a framework's own calls cannot make, and why: priced, they would be the price of a way the program cannot
# take, with a nearer change's words (PyTorch's CUDA ops read CUDA tensors only, so no kernel reads host memory in
# place; it has no managed tensors and allocates no write-combined memory)
CANNOT_MAKE = {
    "pytorch": {**{s: TORCH_READS_CUDA_ONLY for s in ("zero-copy", "mapped", "system")},
                **{s: TORCH_HAS_NO_MANAGED for s in
                   ("managed", "managed-prefetch", "managed-advise-read-mostly", "managed-advise-prefer-gpu",
                    "managed-advise-prefer-host", "managed-advise-accessed-by-gpu")},
                "write-combined": TORCH_HAS_NO_WRITE_COMBINED},
}


def cannot_make(framework: str) -> dict[str, str]:
    """The ways ``framework``'s own calls cannot make (strategy -> why): none for CUDA C, pycuda and CuPy."""
    return CANNOT_MAKE.get(framework, {})


def change_for(framework: str, strategy: str, context: dict | None = None) -> str:
    """The change to ``strategy`` in ``framework``'s idiom ('' where this module has none: pycuda's and CUDA C's
    texts other than ``resident`` are the advice's own). ``context``: ``chunks`` (how a pipelined way cuts an
    iteration, in words), ``d2h`` (True where the host reads what it copies back: the wait that needs is said),
    ``h2d`` (False where the host writes nothing it copies in: a pipelined way's side stream carries the copies out),
    ``data_bytes`` and ``free_bytes`` (what ``resident`` keeps, and the GPU memory it fits in), ``count`` (how many
    copies ``packed`` makes one)."""
    context = context or {}
    own = CHANGES.get(framework, {})
    out_only = context.get("h2d") is False and f"{strategy}-out" in own
    text = own[f"{strategy}-out"] if out_only else own.get(strategy, "")
    if not text:
        return ""
    text = text.replace("{chunks}", str(context.get("chunks") or "chunks")).replace("{fits}", _fits(context)) \
        .replace("{count}", str(context.get("count") or "many"))
    if context.get("d2h") and strategy in ASYNC_BACK and framework in D2H_SYNC:
        text += "; " + D2H_SYNC[framework]
    return text


def _fits(context: dict) -> str:
    data, free = context.get("data_bytes"), context.get("free_bytes")
    if not data:
        return ""
    return f": {format_size(int(data))}" + (f" of the GPU's {format_size(int(free))} free" if free else "")
