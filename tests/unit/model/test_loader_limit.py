"""A DataLoader with num_workers=0 (framework_choices.loader_limit): where a PyTorch loop builds its batches in its
own thread, the advice says how long, names worker processes as the change, and bounds what they could save by
that time and the GPU's idle time, without pricing it."""

import orjson

from umprof import api
from umprof.core.units import format_time

LOADER = "enumerate(DataLoader)#_{}DataLoaderIter.__next__"


def _trace(path, iterator: str = "SingleProcess", load_us: int = 6000, kernel_us: int = 2000, steps: int = 12):
    """A torch.profiler trace of a training loop (times in microseconds): each step the loader's range, a 4 MiB
    pageable upload and a kernel launched without waiting on it (on one stream: each kernel after the last), so that
    the next batch's loading runs beside a kernel longer than it."""
    events, t, gpu_free = [], 0, 0
    for i in range(1, steps + 1):
        events.append({"ph": "X", "cat": "cpu_op", "name": LOADER.format(iterator), "pid": 5, "tid": 5, "ts": t,
                       "dur": load_us})
        t += load_us
        copy_start = max(t + 10, gpu_free)
        kernel_start = copy_start + 380
        gpu_free = kernel_start + kernel_us
        events += [{"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 5, "tid": 5, "ts": t,
                    "dur": copy_start + 390 - t, "args": {"correlation": 2 * i}},
                   {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7,
                    "ts": copy_start, "dur": 380, "args": {"device": 0, "stream": 7, "bytes": 4 << 20,
                                                           "correlation": 2 * i}},
                   {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 5, "tid": 5,
                    "ts": copy_start + 390, "dur": 5, "args": {"correlation": 2 * i + 1}},
                   {"ph": "X", "cat": "kernel", "name": "step", "pid": 0, "tid": 7, "ts": kernel_start,
                    "dur": kernel_us, "args": {"device": 0, "stream": 7, "correlation": 2 * i + 1}}]
        t = copy_start + 400
    path.write_bytes(orjson.dumps({"traceEvents": events}))
    return path


def _advice(tmp_path, **kw):
    (adv,) = api.advise(_trace(tmp_path / "t.json", **kw), gpu="h100")
    return adv, [x for x in adv.limits if x.code == "loader-in-loop-thread"]


def test_a_loop_that_builds_its_batches_in_its_own_thread_is_told_of_workers_and_their_bound(tmp_path):
    # 6 ms of loading a step beside a 0.2 ms kernel: the GPU idles past the loading's time, which is the bound
    adv, (said,) = _advice(tmp_path, kernel_us=200)
    assert "num_workers=0" in said and "num_workers=4" in said
    assert "6 ms a batch, 66 ms over 11 batches" in said and "can save up to 66 ms" in said


def test_the_bound_is_the_gpus_idle_time_where_the_gpu_works_beside_the_loading(tmp_path):
    # 6 ms of loading beside a 5 ms kernel: workers could hide no more than the GPU's 1.4 ms idle a step
    adv, (said,) = _advice(tmp_path, kernel_us=5000)
    loop = adv.app.loop
    bound = loop.iterations * loop.idle_s - adv.tracing_overhead_s
    assert bound < 0.066 and "66 ms over 11 batches" in said
    assert f"can save up to {format_time(bound)}" in said


def test_a_loader_with_workers_is_not_told(tmp_path):
    assert _advice(tmp_path, iterator="MultiProcessing")[1] == []


def test_a_loader_whose_time_is_within_the_error_is_not_told(tmp_path):
    assert _advice(tmp_path, load_us=50, kernel_us=5000)[1] == []
