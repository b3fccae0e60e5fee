"""Telling PyTorch, CuPy, pycuda and CUDA C/C++ programs apart from their traces, one test per kind of evidence, and
the changes in each framework's idiom."""

from pathlib import Path

import pandas as pd
import pytest

from tests.unit.data import TRACES, readable, unpacked
from umprof.model.application import applications
from umprof.model.frameworks import CHANGES, FRAMEWORKS, change_for, detect, evidence
from umprof.nsight.tables import TraceTables
from umprof.nsight.trace_db import open_trace

STRATEGIES = ["pageable", "pinned", "write-combined", "zero-copy", "mapped", "pageable-registered", "managed",
              "managed-prefetch", "managed-advise-read-mostly", "managed-advise-prefer-gpu",
              "managed-advise-prefer-host", "managed-advise-accessed-by-gpu", "pageable-staged", "pinned-pipelined",
              "resident"]


def tables(process="python3", kernels=(), calls=(), ranges=(), source="nsys", thread="") -> TraceTables:
    """A trace of one process with the given kernel names, CUDA call names and range names."""
    def frame(names, **cols):
        n = len(names)
        return pd.DataFrame({"start": range(n), "end": range(1, n + 1), "pid": [1] * n, "name": list(names), **cols})
    empty = pd.DataFrame(columns=["start", "end", "pid"])
    return TraceTables(path=Path("t"), gpus=pd.DataFrame(columns=["device", "name", "memory_bytes"]),
                       processes=pd.DataFrame([{"pid": 1, "name": process, "program": thread or process}]),
                       copies=empty, kernels=frame(kernels), memsets=empty, calls=frame(calls), gpu_faults=empty,
                       cpu_faults=empty, ranges=frame(ranges), source=source)


def sqlite(name: str, tmp_path) -> Path:
    return unpacked(TRACES / name.removesuffix(".gz").removesuffix(".xz"), tmp_path)


def test_a_torch_profiler_trace_is_pytorch():
    t = open_trace(readable(TRACES / "kineto") / "a100-alexnet.json.gz")
    assert evidence(t) == ("pytorch", "a torch.profiler trace")
    assert detect(applications(t)[0]) == "pytorch"  # an application of it: its copies' aten:: ranges


def test_pytorch_op_ranges_in_an_nsys_trace_are_pytorch():  # torch.autograd.profiler.emit_nvtx's ranges
    t = tables(kernels=["my_kernel"], calls=["cudaLaunchKernel"], ranges=["aten::copy_, seq = 3", "aten::add"])
    assert evidence(t).framework == "pytorch" and "op ranges" in evidence(t).why


@pytest.mark.parametrize("kernel, process", [
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(int)", "/usr/bin/app"),
    ("vectorized_elementwise_kernel", "python3.11")])  # nsys's short name, from a Python process
def test_pytorchs_kernels_are_pytorch(kernel, process):
    t = tables(process=process, kernels=[kernel] * 5 + ["ampere_sgemm_128x64_nn"], calls=["cudaLaunchKernel"] * 6)
    assert detect(t) == "pytorch"


def test_a_native_programs_kernel_named_like_atens_short_names_is_not_pytorch():
    t = tables(process="/usr/bin/app", kernels=["elementwise_kernel"] * 4, calls=["cudaLaunchKernel"] * 4)
    assert detect(t) == "cuda"


def test_pytorchs_main_thread_is_pytorch():
    t = tables(process="python3", thread="pt_main_thread", kernels=["gemm"], calls=["cudaLaunchKernel"])
    assert evidence(t) == ("pytorch", "PyTorch's thread pt_main_thread")


def test_a_python_program_whose_allocator_asks_about_graph_capture_is_pytorch():
    t = tables(kernels=["ampere_sgemm_128x64_nn"], calls=["cudaStreamIsCapturing", "cudaMalloc", "cudaLaunchKernel"])
    assert evidence(t).framework == "pytorch" and "cudaStreamIsCapturing" in evidence(t).why
    assert detect(tables(process="/usr/bin/app", kernels=["k"], calls=["cudaStreamIsCapturing"])) == "cuda"


def test_cupys_kernels_are_cupy():
    t = tables(kernels=["cupy_multiply__float32_float32_float32", "cupy_sum", "ampere_sgemm"],
               calls=["cuLaunchKernel", "cuLaunchKernel", "cudaMemcpyAsync"])
    assert evidence(t).framework == "cupy" and "cupy_" in evidence(t).why


def test_a_python_program_on_the_driver_api_is_pycuda(tmp_path):
    t = open_trace(sqlite("h100-pycuda_loop.sqlite", tmp_path))  # a real pycuda loop, on an H100
    assert evidence(t).framework == "pycuda" and "driver API" in evidence(t).why


@pytest.mark.parametrize("name", ["h100-asyncAPI.sqlite", "h100-pin_per_call.sqlite"])
def test_a_native_program_is_cuda(name, tmp_path):
    assert detect(open_trace(sqlite(name, tmp_path))) == "cuda"


def test_every_framework_has_a_resident_change_and_pytorch_and_cupy_every_strategy():
    assert set(CHANGES) == set(FRAMEWORKS)
    for framework in FRAMEWORKS:
        assert change_for(framework, "resident")
    for framework in ("pytorch", "cupy"):
        assert all(change_for(framework, s) for s in STRATEGIES), framework


def test_pytorchs_changes_never_speak_pycudas_or_cuda_cs_words():
    for strategy in STRATEGIES:
        text = change_for("pytorch", strategy, {"chunks": "4 chunks of 16 MiB", "d2h": True})
        assert "pycuda" not in text and "cudaMallocHost" not in text and "cudaMemcpy" not in text, strategy


def test_pytorchs_idioms():
    assert "pin_memory()" in change_for("pytorch", "pinned") and "non_blocking=True" in change_for("pytorch", "pinned")
    pipelined = change_for("pytorch", "pinned-pipelined", {"chunks": "4 chunks"})
    assert "torch.cuda.Stream()" in pipelined and "4 chunks" in pipelined and "wait_stream" in pipelined
    assert "no managed-memory tensors" in change_for("pytorch", "managed-prefetch")
    # a loop that copies nothing in (weights snapshotted to the host): the side stream copies out, not up
    out = change_for("pytorch", "pinned-pipelined", {"chunks": "4 chunks", "h2d": False, "d2h": True})
    assert "copy the results out on a side stream" in out and "upload" not in out and "synchronize()" in out
    assert "upload the next batch" in change_for("pytorch", "pinned-pipelined", {"chunks": "4 chunks", "h2d": True})
    assert "to(device)" in change_for("pytorch", "resident", {"data_bytes": 2**30, "free_bytes": 70 * 2**30})
    assert "1GiB" in change_for("pytorch", "resident", {"data_bytes": 2**30, "free_bytes": 70 * 2**30}).replace(" ", "")


def test_a_host_read_of_a_non_blocking_copy_back_is_told_to_wait():
    assert "synchronize()" in change_for("pytorch", "pinned", {"d2h": True})
    assert "synchronize()" not in change_for("pytorch", "pinned", {"d2h": False})


def test_cupys_idioms():
    assert "cupyx.empty_pinned" in change_for("cupy", "pinned")
    assert "cupy.cuda.PinnedMemoryPool().malloc" in change_for("cupy", "pinned")
    assert "cupy.cuda.malloc_managed" in change_for("cupy", "managed")
    assert "cupy.cuda.Stream" in change_for("cupy", "pinned-pipelined")


def test_a_strategy_this_module_leaves_to_the_advice_is_empty():
    assert change_for("cuda", "pinned") == "" and change_for("pycuda", "pinned") == ""


TORCH = readable(TRACES / "torch")  # programs traced by nsys on an H100 (2026-12-06): PyTorch, CuPy and CUDA C
MADE_WITH = {"h100-cupy_batches": "cupy", "h100-batch_loop": "cuda", "h100-managed_loop": "cuda",
             "h100-ddp_train-rank0": "pytorch", "h100-infer_service": "pytorch", "h100-offload_weights": "pytorch",
             "h100-pin_per_call": "pytorch", "h100-readback": "pytorch", "h100-train_loader": "pytorch"}


@pytest.mark.skipif(not TORCH.is_dir(), reason="the verification programs' traces are not in this checkout")
@pytest.mark.parametrize("name, framework", sorted(MADE_WITH.items()))
def test_real_programs_frameworks(name, framework, tmp_path):
    t = open_trace(sqlite(f"torch/{name}.sqlite", tmp_path))
    assert detect(t) == framework
    assert detect(applications(t)[0]) == framework
