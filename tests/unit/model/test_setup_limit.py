"""The setup a loop's first iteration holds (result.first_setup_s, explain.setup_limit): measured as the first iteration's time
beyond a steady one with the GPU no busier, said where it is most of the loop, with how to trace the loop alone in
the tracer's and the framework's own terms."""

from types import SimpleNamespace

import pytest

from tests.unit.model import traced
from umprof.model.advice import explain, result
from umprof.model.advice import thresholds as th


def _loop(first_s: float, steady_s: float, first_busy: float, steady_busy: float, iterations: int = 10, lead=None):
    span = (0, int((first_s + steady_s * (iterations - 1)) * 1e9))
    return SimpleNamespace(first_s=first_s, steady_s=steady_s, first={"busy_s": first_busy, "wall_s": first_s},
                           per_iteration={"busy_s": steady_busy}, iterations=iterations, span=span, lead=lead)


def _app(first_s: float, steady_s: float, first_busy: float, steady_busy: float, iterations: int = 10):
    """An application whose loop has these times (the rest of it unused by first_setup_s)."""
    loop = _loop(first_s, steady_s, first_busy, steady_busy, iterations)
    return SimpleNamespace(loop=loop, wall_s=loop.span[1] / 1e9)


def test_setup_is_the_first_iterations_time_beyond_a_steady_one_less_its_extra_gpu_work():
    assert result.first_setup_s(_app(2.0, 0.1, 0.05, 0.05).loop) == pytest.approx(1.9)
    # a first iteration that uploads a dataset: the GPU busy 1 s longer, so 1 s of its excess is not setup
    assert result.first_setup_s(_app(2.0, 0.1, 1.05, 0.05).loop) == pytest.approx(0.9)
    assert result.first_setup_s(_app(0.05, 0.1, 0.05, 0.05).loop) == 0.0  # a first iteration faster than a steady one
    assert result.first_setup_s(None) == 0.0


def test_a_loop_with_a_lead_loop_before_it_has_the_setup_of_the_leads_first_iteration():
    # the run's first iteration is the lead's (its setup, 2 s); the loop's own first iteration follows it, steady
    lead = _loop(2.0, 0.1, 0.05, 0.05, iterations=30)
    assert result.first_setup_s(_loop(0.1, 0.1, 0.05, 0.05, lead=lead)) == pytest.approx(1.9)


def test_setup_is_said_only_past_its_share_of_the_loop_in_the_tracers_terms():
    # 9 steady iterations of 0.1 s: 0.9 s; a first iteration of 1.2 s carries 1.1 s of setup, just over half of 2.1 s
    over = _app(1.2, 0.1, 0.0, 0.0)
    assert result.first_setup_s(over.loop) > th.SETUP_SHARE * 2.1
    nsys = explain.setup_limit(over, "pytorch", "nsys")
    assert [x.code for x in nsys] == ["setup-in-loop"]
    assert "torch.cuda.profiler.start()" in nsys[0] and "--capture-range=cudaProfilerApi" in nsys[0]
    assert "cudaProfilerStart()" in explain.setup_limit(over, "cuda", "nsys")[0]
    assert "schedule=torch.profiler.schedule(" in explain.setup_limit(over, "pytorch", "kineto")[0]
    assert explain.setup_limit(_app(0.5, 0.1, 0.0, 0.0), "pytorch", "nsys") == []  # 0.4 s of 1.4 s


def test_a_pytorch_nsys_trace_whose_loop_begins_with_the_process_setup_says_so():
    trace = next(p for p in traced.torch_traces() if traced.torch_stem(p) == "h100-train_loader.nsys")
    adv = traced.torch_advice(trace)[0]
    said = [x for x in adv.limits if x.code == "setup-in-loop"]
    assert len(said) == 1 and "torch.cuda.profiler.start()" in said[0]
    assert adv.to_dict()["limits"][[x.code for x in adv.limits].index("setup-in-loop")]["code"] == "setup-in-loop"
