"""Small read-backs the host waits on (umprof.model.advice.readback_waits): which copies they are, what not waiting
on them saves (the host's wait on each, no more than the GPU's idle time while the host worked), and how each
framework's program is told."""

import pytest

from tests.unit.model import synthetic_tables
from umprof.model import frameworks
from umprof.model.advice import readback_waits as rw
from umprof.model.advice import thresholds as th
from umprof.model.advice.result import Advice, AppAdvice
from umprof.model.application import applications
from umprof.nsight.tables import TraceTables

US = 1_000


def _tables(steps: int, kernel_us: int, host_us: int, waited: bool = True, nbytes: int = 8,
            blocked_us: int = 0) -> TraceTables:
    """One thread's loop of ``steps`` steps: a kernel of ``kernel_us``, then a copy of ``nbytes`` back (1 µs),
    ``blocked_us`` after the kernel (waiting on something else: another stream, another rank), that the host
    synchronises on where ``waited``, then ``host_us`` of the host's own work before the next step."""
    calls, copies, kernels, t = [], [], [], 0
    for i in range(steps):
        corr = 2 * i + 1
        calls.append((t, t + 3 * US, corr, "cudaLaunchKernel"))
        k_end = t + 4 * US + kernel_us * US
        kernels.append((t + 4 * US, k_end, corr))
        calls.append((t + 5 * US, t + 8 * US, corr + 1, "cudaMemcpyAsync"))
        c_end = k_end + blocked_us * US + US
        copies.append((c_end - US, c_end, corr + 1))
        if waited:
            calls.append((t + 9 * US, c_end + US, None, "cudaStreamSynchronize"))
        t = max(t + 10 * US, c_end + US) + host_us * US
    return synthetic_tables.tables(calls, copies, kernels, nbytes, "d2h")


def _waits(*args, **kwargs):
    (app,) = applications(_tables(*args, **kwargs))
    return app, rw.readback_waits(app)


def test_the_saving_is_the_hosts_wait_where_the_host_takes_longer_between_steps():
    # 100 µs of the host's own work a step against 20 µs of kernel: running ahead, the host no longer waits its 21 µs
    # (the copy's call at 5 µs to the synchronisation's end at 26, the GPU busy throughout), and the GPU's work
    # hides behind the host's own
    app, w = _waits(40, kernel_us=20, host_us=100)
    assert w.count == 40
    assert w.wait_s == pytest.approx(40 * 21e-6)
    assert w.high_s == pytest.approx(40 * 21e-6, rel=0.05)


def test_a_wait_on_something_else_saves_only_the_gpus_idle_time_while_the_host_worked():
    # each read-back waits 500 µs on something else (the GPU idle too): not waiting, the host's 100 µs of work a step
    # hides behind that wait, and no more: the wait itself is the program's, however long
    app, w = _waits(40, kernel_us=20, host_us=100, blocked_us=500)
    assert w.wait_s == pytest.approx(40 * 521e-6)
    assert w.high_s == pytest.approx(40 * 104e-6, rel=0.05)  # the host's work and its launch, 4 µs to the kernel
    app, w = _waits(40, kernel_us=20, host_us=0, blocked_us=500)
    assert w is None or w.high_s < 40 * 6e-6  # a host with no work of its own: nothing to hide


def test_the_saving_is_the_gpus_idle_time_where_the_gpu_takes_longer():
    app, w = _waits(40, kernel_us=500, host_us=30)
    gap = 30 + 4  # the host's work, then the launch's 4 µs to the kernel's start: less than its 501 µs wait
    assert w.high_s == pytest.approx(40 * gap * 1e-6, rel=0.1)
    assert w.low_s < w.high_s  # the tracer's own time in the step's calls taken off


def test_few_unwaited_or_large_read_backs_are_not_priced():
    assert _waits(th.MANY_COPIES - 1, kernel_us=20, host_us=100)[1] is None
    assert _waits(40, kernel_us=20, host_us=100, waited=False)[1] is None
    assert _waits(40, kernel_us=20, host_us=100, nbytes=th.SMALL_COPY + 1)[1] is None


@pytest.mark.parametrize("framework", ["pytorch", "cupy", "cuda", "pycuda"])
def test_every_frameworks_loop_is_told_to_stop_waiting_in_its_own_calls_and_conditionally(framework):
    app, w = _waits(200, kernel_us=200, host_us=300)
    now = 0.2
    out = AppAdvice(app=app, calibration="", workload=None, mapping="", framework=framework, priced_s=now)
    out.advice.append(Advice("loop", "pageable", "keep it", now, now, 0.0))
    rw.add_readback_waits(app, out)
    loop = out.loop_advice
    assert loop.idiom == rw.IDIOM
    assert loop.conditional and "next step's work" in out.verdict and "a step late" in out.verdict
    assert 0 < loop.saving_s < now
    assert loop.change == frameworks.change_for(framework, rw.IDIOM, {"count": w.count})
