"""The loop of an application's trace as frameworks make them: dozens of CUDA calls an iteration, queries among
them, loops in loops, a first iteration that carries the program's start."""

import pytest

from tests.unit.nsight.synthetic_trace import App, Op, write_trace
from umprof.model.application import QUERY_CALL, WORK_CALL, applications
from umprof.nsight.trace_db import open_trace

MiB = 2**20


def call(name, dur_ns=1_000):
    return Op("call", name=name, dur_ns=dur_ns)


def training_step(step: int, batch: int = 16 * MiB) -> list[Op]:
    """One step as PyTorch's nsys trace shows it: device guards (a varying number of cudaGetDevice), the caching
    allocator's capture checks, the batch copied in asynchronously, a small parameter copy, twenty kernels, a memset,
    an event, the loss read back and waited for."""
    ops = [call("cudaGetDevice") for _ in range(2 + step % 3)] + [call("cudaStreamIsCapturing")]
    ops += [Op("copy", "h2d", batch, "pageable", sync=False, dur_ns=1_600_000),
            Op("copy", "h2d", 256, "pageable", sync=False, dur_ns=2_000)]
    for k in range(20):
        ops += [call("cudaGetDevice"), Op("kernel", dur_ns=40_000, name=f"layer{k}")]
        if k == 10:
            ops += [call("cudaMemsetAsync"), call("cudaGetLastError")]
    ops += [call("cudaEventRecord"), Op("copy", "d2h", 4, "pageable", sync=False, dur_ns=3_000),
            call("cudaStreamSynchronize", 5_000), Op("host", dur_ns=200_000)]
    return ops


def warm_up() -> list[Op]:
    """A program's start: imports that query the driver a thousand times, modules loaded, the allocator's blocks."""
    ops = [call("cuGetProcAddress") for _ in range(300)] + [call("cudaGetDevice") for _ in range(700)]
    ops += [call("cuModuleLoadData", 200_000), call("cuKernelGetName")] * 5
    return ops + [call("cudaMalloc", 50_000) for _ in range(8)] + [Op("host", dur_ns=500_000_000)]


def training(epochs=3, steps=64) -> App:
    run = []
    for _ in range(epochs):
        for s in range(steps):
            # the data loader's last batch of an epoch is smaller (its dataset is not a multiple of the batch)
            run += training_step(s, 8 * MiB if s == steps - 1 else 16 * MiB)
    return App(iterations=1, steps=run, first=warm_up(), gpu="NVIDIA H100 80GB HBM3", memory_bytes=85_017_493_504)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    path = write_trace(tmp_path_factory.mktemp("torch") / "train.sqlite", training())
    return applications(open_trace(path))[0]


def test_a_training_loop_is_its_steps_in_its_epochs(trained):
    loop = trained.loop
    assert loop.iterations == 3 * 64
    assert loop.outer is not None and loop.outer.iterations == 3
    assert loop.outer.period == 64 * loop.period
    # a step's work: its 16 MiB batch and 256-byte parameters in, twenty kernels, the loss back
    assert loop.per_iteration["h2d_bytes"] == 16 * MiB + 256 and loop.per_iteration["kernels"] == 20
    assert loop.per_iteration["d2h_bytes"] == 4


def test_a_loop_is_never_cut_at_a_query(trained):
    assert not QUERY_CALL.match(trained.loop.anchor)
    assert WORK_CALL.search(trained.loop.anchor)
    # not the 16 MiB batch's copy either: each epoch's last batch is smaller, and cut there, it would join the next
    assert trained.loop.anchor != f"cudaMemcpyAsync:h2d:{16 * MiB}"


def test_the_first_iteration_carries_the_programs_start(trained):
    loop = trained.loop
    # the imports' half second of host work is the first iteration's, not a steady one's
    assert loop.first_s > 0.5 > 100 * loop.steady_s
    # the program's start and the first step, up to where the loop's cut falls in the next step
    assert 16 * MiB + 256 <= loop.first["h2d_bytes"] <= 2 * (16 * MiB + 256)
    assert loop.per_iteration["wall_s"] < 0.003


def offload(requests=5, layers=24) -> App:
    """CPU-offloaded weights: each request copies its input in, then each layer's weights (64 MiB) before its three
    kernels, then its output back."""
    run = []
    for _ in range(requests):
        run += [call("cudaGetDevice"), Op("copy", "h2d", 32 * MiB, "pageable", dur_ns=3_000_000)]
        for k in range(layers):
            run += [call("cudaGetDevice"), Op("copy", "h2d", 64 * MiB, "pageable", sync=False, dur_ns=6_000_000)]
            run += [Op("kernel", dur_ns=100_000, name=n) for n in ("gemm", "gelu", "norm")]
        run += [Op("copy", "d2h", 32 * MiB, "pageable", dur_ns=3_000_000), Op("host", dur_ns=1_000_000)]
    return App(iterations=1, steps=run, first=warm_up())


def test_layers_in_requests(tmp_path):
    app = applications(open_trace(write_trace(tmp_path / "offload.sqlite", offload())))[0]
    assert app.loop.iterations == 5 * 24 and app.loop.per_iteration["h2d_bytes"] == 64 * MiB
    assert app.loop.outer is not None and app.loop.outer.iterations == 5
    assert app.loop.outer.per_iteration["h2d_bytes"] == (32 + 24 * 64) * MiB


def test_a_plain_loop_has_no_outer_loop(tmp_path):
    from tests.unit.nsight.synthetic_trace import pageable_loop

    app = applications(open_trace(write_trace(tmp_path / "plain.sqlite", pageable_loop(iterations=30))))[0]
    assert app.loop.iterations == 30 and app.loop.outer is None


@pytest.mark.parametrize("name", ["cudaGetDevice", "cudaGetLastError", "cuKernelGetName", "cuGetProcAddress",
                                  "cuCtxGetCurrent", "cudaStreamIsCapturing", "cudaEventQuery",
                                  "cudaPeekAtLastError", "cudaDeviceGetAttribute", "cudaPointerGetAttributes"])
def test_queries_are_known_by_name(name):
    assert QUERY_CALL.match(name)


@pytest.mark.parametrize("name", ["cudaMemcpyAsync", "cudaLaunchKernel", "cuLaunchKernel", "cudaMemsetAsync",
                                  "cudaStreamSynchronize", "cudaEventRecord", "cudaGraphLaunch", "cudaMalloc",
                                  "cudaMemPrefetchAsync", "cuMemcpyHtoD"])
def test_work_and_sync_calls_are_not_queries(name):
    assert not QUERY_CALL.match(name)
