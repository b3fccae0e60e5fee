"""The host-bound note (explain.host_bound_limit): where no change is advised and the loop's GPU waits on the host
most of each step, the advice says the host's own work paces the loop, and bounds what making the batches elsewhere
could save by the GPU's idle time over the loop, less the tracing's overhead."""

from types import SimpleNamespace

import pytest

from umprof.model.advice import explain
from umprof.model.advice import thresholds as th
from umprof.model.loops import Loop


def _loop(steady_s: float, busy_s: float, iterations: int = 100) -> SimpleNamespace:
    loop = SimpleNamespace(per_iteration={"wall_s": steady_s, "busy_s": busy_s}, iterations=iterations)
    loop.idle_s = Loop.idle_s.fget(loop)
    return loop


def _app(loop, name: str = "python3") -> SimpleNamespace:
    return SimpleNamespace(loop=loop, name=name, program=name)


def _advice(saving_s: float, now_s: float = 2.0, overhead_s: float = 0.0) -> SimpleNamespace:
    return SimpleNamespace(loop_advice=SimpleNamespace(saving_s=saving_s, now_s=now_s), tracing_overhead_s=overhead_s,
                           priced_s=now_s)


def test_a_kept_loop_whose_gpu_waits_on_the_host_most_of_each_step_is_said_host_bound_with_its_bound():
    # 100 steps of 20 ms, the GPU busy 8 ms of each: 12 ms idle (60%), 1.2 s over the loop, 0.2 s of it the tracer's
    said = explain.host_bound_limit(_app(_loop(0.020, 0.008)), _advice(0.0, overhead_s=0.2))
    assert [x.code for x in said] == ["host-bound"]
    assert "60%" in said[0] and "at most 1 s" in said[0]


def test_the_bound_is_never_above_the_time_now():
    said = explain.host_bound_limit(_app(_loop(0.020, 0.002)), _advice(0.0, now_s=1.0))
    assert "at most 1 s" in said[0]


@pytest.mark.parametrize("steady,busy,saving", [
    (0.020, 0.008, 0.5),  # a change is advised: its own lines say what it saves
    (0.020, 0.020 * (1 - th.HOST_BOUND_SHARE), 0.0),  # idle exactly the share: not past it
    (0.020, 0.015, 0.0),  # the GPU busy most of each step
])
def test_not_said_where_a_change_is_advised_or_the_gpu_is_busy_most_of_each_step(steady, busy, saving):
    assert explain.host_bound_limit(_app(_loop(steady, busy)), _advice(saving)) == []


def test_not_said_where_the_idle_time_is_the_tracers():
    # 1.2 s idle over the loop, 1.1 s of it the tracer's overhead: 0.1 s left, within the error on a 2 s loop
    assert explain.host_bound_limit(_app(_loop(0.020, 0.008)), _advice(0.0, overhead_s=1.1)) == []


def test_not_said_without_a_loop_or_its_advice():
    assert explain.host_bound_limit(_app(None), _advice(0.0)) == []
    out = SimpleNamespace(loop_advice=None, tracing_overhead_s=0.0, priced_s=2.0)
    assert explain.host_bound_limit(_app(_loop(0.02, 0.001)), out) == []


def test_not_said_of_a_compiled_program_whose_host_work_is_priced_as_its_accesses():
    assert explain.host_bound_limit(_app(_loop(0.020, 0.002), name="./overlapped"), _advice(0.0)) == []


def test_a_pytorch_trace_without_torchs_operators_is_told_which_trace_shows_them():
    out = _advice(0.0)
    out.framework = "pytorch"
    unseen = explain.host_bound_limit(_app(_loop(0.020, 0.008)), out, torch_ops=False)
    assert "torch.profiler" in unseen[0] and "--pytorch=autograd-nvtx" in unseen[0]
    assert "umprof advise -- CMD" in unseen[0]
    assert "torch.profiler" not in explain.host_bound_limit(_app(_loop(0.020, 0.008)), out, torch_ops=True)[0]
    out.framework = "cupy"
    assert "torch.profiler" not in explain.host_bound_limit(_app(_loop(0.020, 0.008)), out, torch_ops=False)[0]
