"""The loop of an application's trace as frameworks make them: dozens of CUDA calls an iteration, queries among
them, loops in loops, a first iteration that carries the program's start."""

import pytest

from tests.unit.nsight.synthetic_trace import App, Op, write_trace
from umprof.model.application import NO_STAGING, applications
import numpy as np

from umprof.model import loops
from umprof.model.loops import EDGE_SHARE, QUERY_CALL, WORK_CALL, _group_starts, _loop_period, find_period
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


def test_a_training_loop_is_its_epochs_of_steps(trained):
    epochs, steps = trained.loop, trained.loop.inner
    assert epochs.iterations == 3 and steps is not None and steps.iterations == 3 * 64
    assert epochs.period == 64 * steps.period
    # a step's work: its 16 MiB batch and 256-byte parameters in, twenty kernels, the loss back
    assert steps.per_iteration["h2d_bytes"] == 16 * MiB + 256 and steps.per_iteration["kernels"] == 20
    assert steps.per_iteration["d2h_bytes"] == 4
    # an epoch's: 63 batches and a smaller last one, the dataset carried in again every epoch (within a batch: the
    # epochs are cut where the steps are, inside a step, and the run's last epoch ends with the run)
    assert abs(epochs.per_iteration["h2d_bytes"] - (63 * 16 * MiB + 8 * MiB + 64 * 256)) <= 16 * MiB + 256
    assert abs(epochs.per_iteration["kernels"] - 64 * 20) <= 20


def test_a_loop_is_never_cut_at_a_query(trained):
    anchor = trained.loop.inner.anchor
    assert not QUERY_CALL.match(anchor) and WORK_CALL.search(anchor)
    # not the 16 MiB batch's copy either: each epoch's last batch is smaller, and cut there, it would join the next
    assert anchor != f"cudaMemcpyAsync:h2d:{16 * MiB}"


def test_the_first_iteration_carries_the_programs_start(trained):
    steps = trained.loop.inner
    # the imports' half second of host work is the first iteration's, not a steady one's
    assert steps.first_s > 0.5 > 100 * steps.steady_s
    # the program's start and the first step, up to where the loop's cut falls in the next step
    assert 16 * MiB + 256 <= steps.first["h2d_bytes"] <= 2 * (16 * MiB + 256)
    assert trained.loop.first_s > 0.5 + trained.loop.steady_s


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
    requests, layers = app.loop, app.loop.inner
    assert requests.iterations == 5 and requests.per_iteration["h2d_bytes"] == (32 + 24 * 64) * MiB
    assert layers.iterations == 5 * 24 and layers.per_iteration["h2d_bytes"] == 64 * MiB


def test_a_short_loop_whose_first_and_last_steps_differ_is_found_in_its_middle():
    # a training step of 30 calls (codes 0-4), 24 steps; the first also loads libraries and creates events between its
    # launches (codes 5, 6: each 18 times, as often over so few steps as a steady call), the last reads a checksum
    # back parameter by parameter (code 7, 8 times): over the whole run, or either half, no period holds
    step = [0, 1] + [2] * 22 + [3] * 3 + [4] * 3
    first = step + [5, 2, 6] * 18
    codes = np.array(first + step * 22 + step + [7] * 8)
    found = _loop_period(codes)
    assert found is not None and found[0] == len(step)


def test_a_loop_found_in_part_of_the_run_runs_on_to_where_its_calls_stop_repeating():
    # 46 like steps of 30 calls after a first one that also makes 47 calls of its own between its launches (a
    # framework's first use): no period holds over the whole run; the later half's loop runs on over every step
    step = [0, 1] + [2] * 22 + [3] * 3 + [4] * 3
    first = step + [5, 2] * 47
    codes = np.array(first + step * 46)
    p, lo, hi = _loop_period(codes)
    assert p == len(step) and hi == len(codes)
    assert len(first) - len(step) < lo <= len(first)  # the first step's own calls stay outside it
    assert find_period(codes) is None and find_period(codes[len(codes) // 2:]) is not None


def test_a_dozen_steps_between_a_long_setup_and_ending_are_found_as_the_longest_stretch_that_repeats():
    # 12 steps of 44 calls (copies out and back, each waited on, launches, a memset) after a setup of 96 calls that
    # copies in and out as the steps do and launches between allocations, and before an ending that reads the
    # parameters back: no period holds over the run, either half or its middle
    step = [0, 0] + [1, 2] * 8 + [3, 2] * 8 + [4] * 9 + [5]
    setup = [6, 3, 2] * 10 + [1, 2] * 8 + [8, 4] * 25
    ending = [4] * 30 + [1, 2] * 8
    codes = np.array(setup + step * 12 + ending)
    n, edge = len(codes), int(len(codes) * EDGE_SHARE)
    assert all(find_period(codes[lo:hi]) is None for lo, hi in ((0, n), (n // 2, n), (0, n // 2), (edge, n - edge)))
    p, lo, hi = _loop_period(codes)
    assert p == len(step)
    assert lo <= len(setup) + len(step) and hi >= len(setup) + 11 * len(step)


def test_a_loop_whose_every_call_is_made_hundreds_of_times_a_step_is_found():
    # 20 steps of 128 parameters copied one by one, each waited on, then 128 launches: no call is made once a step,
    # and its period (384) is more than MAX_PERIOD_MULTIPLE times the run's length over any call's count
    step = [0, 1] * 128 + [2] * 128
    codes = np.array([3, 4, 5] + step * 20)
    assert _loop_period(codes) == (len(step), 3, len(codes))


def test_a_loop_after_a_setup_of_its_own_calls_is_found_by_how_far_apart_its_calls_recur(monkeypatch):
    # 10 snapshots, each after 4 training steps of 70 calls (launches, a memset, six launch pairs), 24 copies out each
    # waited on, and 5 sums of the weights: 356 calls; before them a setup of 203 calls made of the loop's own calls
    # (allocations, copies in and out, launches). The run's length over no call's count, times 1 to
    # MAX_PERIOD_MULTIPLE, is the period, in the whole run or any part of it; each call's distance to its k-th next
    # one is (``_spaced_periods``)
    launch, pair, memset, out_a, out_b, wait, alloc, copy_in, free, init, other = range(11)
    step = [launch] * 25 + [pair, launch] * 6 + [memset] + [launch] * 37
    snapshot = [out_a, wait, out_b, wait] * 6 + [launch] + ([memset] + [launch] * 4) * 5 + [launch] * 6
    body = step * 4 + snapshot
    setup = ([alloc, copy_in, wait] * 3 + [alloc, copy_in, wait, copy_in, wait] * 6 + [alloc, free, free] * 6
             + [out_a, wait, out_b, wait] * 6 + [alloc, launch, alloc, launch, alloc, init, init, other, other, alloc]
             + [alloc, launch, alloc, launch, launch, launch] * 12 + [launch] * 40)
    codes = np.array(setup + body * 10 + [out_a, wait, out_b, wait] * 3)
    p, lo, hi = _loop_period(codes)
    assert p == len(body) and lo <= len(setup) + len(body) and hi >= len(setup) + 9 * len(body)
    monkeypatch.setattr(loops, "_spaced_periods", lambda c: [])
    assert _loop_period(codes) is None


def test_a_burst_of_like_calls_in_a_run_without_a_loop_is_no_loop():
    # 20 calls made three times in a row (parameters set up one by one) amid 130 calls that never repeat in order
    # and one (code 0) made 10 times at random, which makes 20 a candidate period: the burst repeats three periods,
    # far less than STRETCH_SHARE of the run
    rng = np.random.default_rng(0)
    rest = np.concatenate([np.zeros(10, np.int64), np.arange(100, 230)])
    rng.shuffle(rest)
    codes = np.concatenate([rest[:70], np.tile(np.arange(1, 21), 3), rest[70:]])
    assert _loop_period(codes) is None


def test_an_outer_loops_edges_survive_a_one_off_odd_iteration():
    # 6 requests of 24 layers: the layers whose calls differ are each request's last, and one layer of the second
    # request where the caching allocator grew its pool
    odd = np.array([0, 23, 25, 47, 71, 95, 119, 143])
    assert _group_starts(odd, 144).tolist() == list(range(24, 144, 24))
    # where the odd ones come irregularly, no outer loop
    assert _group_starts(np.array([0, 10, 25, 31, 47, 90, 143]), 144) is None


def test_two_odd_iterations_make_no_outer_loop_unless_their_groups_are_whole():
    # 64 steps whose 15th and 60th ran slow (a garbage collection, a profiler's buffer flushed): one gap of 45 between
    # them, groups of 14, 45 and 5 steps: no epochs
    assert _group_starts(np.array([0, 14, 59]), 64) is None
    # 2 epochs of 32 steps, each epoch's first step slow (its loader's iterator made): one gap, whole groups
    assert _group_starts(np.array([0, 32]), 64).tolist() == [32]
    # 3 epochs of 21 steps, each epoch's last one short; the trace stops one step into a fourth
    assert _group_starts(np.array([20, 41, 62]), 64).tolist() == [21, 42, 63]


def test_a_plain_loop_has_no_outer_loop(tmp_path):
    from tests.unit.nsight.synthetic_trace import pageable_loop

    app = applications(open_trace(write_trace(tmp_path / "plain.sqlite", pageable_loop(iterations=30))))[0]
    assert app.loop.iterations == 30 and app.loop.inner is None


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


def batches_sent(streams: list[int], result_stream: int | None = None, batches=24) -> App:
    """Pinned 32 MiB batches copied asynchronously, each on the next of ``streams`` in turn, a kernel each; with
    ``result_stream``, the 8-byte result read back once at the end on a stream of its own."""
    run = []
    for b in range(batches):
        s = streams[b % len(streams)]
        run += [Op("copy", "h2d", 32 * MiB, "pinned", stream=s, sync=False, dur_ns=600_000),
                Op("kernel", dur_ns=20_000, name="sum"), Op("host", dur_ns=3_000_000)]
    end = [] if result_stream is None else [Op("copy", "d2h", 8, "pageable", stream=result_stream, sync=False)]
    return App(iterations=1, steps=run + end, calls=["cudaMallocHost"])


@pytest.mark.parametrize("streams, result, strategy", [([13], 7, "pinned"), ([13], None, "pinned"),
                                                       ([13, 14], 7, "pinned-pipelined")])
def test_a_result_read_back_on_a_stream_of_its_own_makes_no_pipeline(tmp_path, streams, result, strategy):
    """A CuPy program's batches all on one stream and its sum read back on another (8 bytes beside 768 MiB): its
    copies are not chunks over streams."""
    app = applications(open_trace(write_trace(tmp_path / "batches.sqlite", batches_sent(streams, result))))[0]
    assert app.strategy == strategy


def test_a_few_chunks_beside_large_pinned_copies_are_no_bounce_buffer():
    """A PyTorch trainer (HTA's A100 trace) copies 131 MiB of pinned batches and four chunks of 144 KiB with the
    host busy between them: the chunks carry under STAGED_SHARE of its pinned bytes, so its data does not move
    through a bounce buffer."""
    from tests.unit.model import traced

    (adv,) = traced.torch_advice(traced.KINETO / "a100-trainer-rank0.json.gz")
    assert adv.app.host_staging == NO_STAGING and "bounce buffer" not in adv.app.strategy_why


def test_a_copy_s_range_is_the_innermost_open_on_its_thread_at_its_call():
    """Of the ranges open on the copy's thread when its call started, the one that started last; '' where none is
    (between ranges, on a thread without ranges)."""
    import pandas as pd

    from umprof.model.application import _enclosing_ranges

    ranges = pd.DataFrame({"start": [0, 10, 12, 40, 0], "end": [100, 30, 20, 50, 100], "tid": [1, 1, 1, 1, 2],
                           "name": ["epoch", "step", "copy_in", "eval", "other"]})
    copies = pd.DataFrame({"call_start": [15, 25, 35, 45, 5, 150, 5], "tid": [1, 1, 1, 1, 1, 1, 3]})
    assert _enclosing_ranges(copies, ranges) == ["copy_in", "step", "epoch", "eval", "epoch", "", ""]
    assert _enclosing_ranges(copies, ranges.iloc[:0]) == [""] * 7


@pytest.mark.parametrize("name, label", [
    ("aten::copy_, op_id = 6", "aten::copy_"),  # nsys --pytorch=autograd-nvtx's ranges, as an H200's trace has them
    ("aten::to, seq = 0, op_id = 3", "aten::to"),
    ("aten::mm, seq = 2, op_id = 9, sizes = [[2, 3], [3, 4]]", "aten::mm"),
    ("detach, op_id = 19", "detach"),
    ("iteration 3", "iteration"), ("step #12", "step"), ("aten::copy_", "aten::copy_"), ("h2d", "h2d")])
def test_a_copys_range_is_grouped_by_its_operator_or_its_name_without_a_number(name, label):
    from umprof.model.application import range_label

    assert range_label(name) == label


def test_a_loop_whose_batches_change_size_every_step_is_found_by_its_copies_directions(tmp_path):
    # 40 steps of padded batches (a collate padding each to its own longest sequence, one of 20 lengths near the
    # longest): each step's three copies come in the sizes of its batch, which differ from the step before's; by
    # size, an eighth of a step's calls would not repeat one step later
    rng = np.random.default_rng(0)
    run = []
    for s in range(40):
        size = int(rng.integers(492, 512)) * 4096
        run += [Op("copy", "h2d", size, "pageable", sync=False, dur_ns=200_000),
                Op("copy", "h2d", size // 64, "pageable", sync=False, dur_ns=20_000)]
        run += [Op("kernel", dur_ns=30_000, name=f"layer{k}") for k in range(12)]
        run += [Op("copy", "d2h", size // 1024, "pageable", sync=False, dur_ns=10_000), Op("host", dur_ns=300_000)]
    app = applications(open_trace(write_trace(tmp_path / "padded.sqlite", App(iterations=1, steps=run))))[0]
    assert app.loop is not None and app.loop.iterations == 40
    assert app.loop.per_iteration["kernels"] == 12
