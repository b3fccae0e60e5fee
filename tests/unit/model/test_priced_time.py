"""The time the ways price (``result.priced_s``): the loop's time now less its first iteration's one-off setup and its
last iteration's ending, which no way of moving memory changes. The prediction's own error on a saving, and the noise a saving must clear, are
shares of it, so that a program whose first iteration holds seconds of its own start (a PyTorch process's CUDA
context, libraries and model) is judged on the iterations the ways price."""

import pytest

from tests.unit.model import traced
from umprof.model.advice import thresholds as th
from umprof.model.advice.result import priced_s
from umprof.model.application import Loop


def loop(first_wall: float, first_busy: float = 0.001, steady: float = 0.01, busy: float = 0.001,
         iterations: int = 101) -> Loop:
    return Loop(iterations=iterations, period=3, anchor="cudaMemcpyAsync", first_s=first_wall, steady_s=steady,
                per_iteration={"wall_s": steady, "busy_s": busy}, first={"wall_s": first_wall, "busy_s": first_busy},
                largest={}, span=(0, int((first_wall + (iterations - 1) * steady) * 1e9)))


def test_a_first_iteration_of_setup_with_the_gpu_idle_is_left_out():
    now = 4.0 + 100 * 0.01
    assert priced_s(loop(4.0), now) == pytest.approx(now - (4.0 - 0.01))


def test_what_the_gpu_did_beyond_a_steady_iteration_stays_priced():
    # 0.5 s of the first iteration's 4 s was GPU work beyond a steady iteration's (a first upload of everything)
    now = 5.0
    assert priced_s(loop(4.0, first_busy=0.501), now) == pytest.approx(now - (4.0 - 0.01 - 0.5))


def test_the_setup_the_ways_price_stays_priced():
    # a C program whose first iteration holds the host's first write of its buffer (0.6 s as predicted) and its
    # allocation calls: the ways price both, and differ in them
    now = 5.0
    assert priced_s(loop(4.0), now, setup_s=0.6) == pytest.approx(now - (4.0 - 0.01 - 0.6))
    assert priced_s(loop(0.5), now, setup_s=0.6) == now


def test_a_last_iteration_that_runs_on_to_the_program_s_exit_with_the_gpu_idle_is_left_out():
    # a PyTorch program's libraries unloaded at exit, 0.6 s after its loop's last kernel: the last iteration's 0.61 s
    # beyond a steady one is as much the program's own as its first iteration's setup
    L = loop(4.0)
    L.last, L.after_gpu_s = {"wall_s": 0.62, "busy_s": 0.001}, 0.615
    now = 4.0 + 99 * 0.01 + 0.62
    assert priced_s(L, now) == pytest.approx(now - (4.0 - 0.01) - (0.62 - 0.01))
    L.last, L.after_gpu_s = {"wall_s": 0.62, "busy_s": 0.601}, 0.015  # a final readback of 0.6 s: priced
    assert priced_s(L, now) == pytest.approx(now - (4.0 - 0.01) - (0.62 - 0.01 - 0.6))
    # host work the GPU takes part in again before the run ends (a trace of part of a loop): priced
    L.last, L.after_gpu_s = {"wall_s": 0.62, "busy_s": 0.001}, 0.0
    assert priced_s(L, now) == pytest.approx(now - (4.0 - 0.01))


def test_never_below_the_steady_iterations_nor_above_the_time_now_nor_without_a_loop():
    # the loop's time now less the tracing's overhead can fall below first + steady iterations
    assert priced_s(loop(4.0), 3.0) == pytest.approx(100 * 0.01)
    assert priced_s(loop(0.005), 2.0) == 2.0  # a first iteration quicker than a steady one
    assert priced_s(loop(4.0, steady=0.05), 4.5) == 4.5  # steady iterations past the time now (threads overlapped)
    assert priced_s(None, 2.0) == 2.0


def test_a_pytorch_loop_is_judged_on_the_iterations_the_ways_price():
    """The DataLoader training loop (H100, nsys): 192 iterations, the first 4.14 s (the process's CUDA context,
    libraries and model), then 6.17 ms each; its time now 5.51 s. Keeping the dataset on the GPU is weighed at the
    low end of its band, about 690 ms (each batch's host copy read and written): 50% of the 1.38 s the ways price,
    advised, and said why (measured untraced: 1.142 s as written, 0.376 s with the dataset on the GPU); the error
    is a share of those 1.38 s, never of the whole loop's 5.51 s, most of it the first iteration's setup."""
    (adv,) = traced.torch_advice(traced.TORCH / "h100-train_loader.sqlite.xz")
    loop_ = adv.loop_advice
    assert adv.priced_s == pytest.approx(1.38, abs=0.02)
    assert adv.to_dict()["time_now"]["priced_s"] == adv.priced_s
    assert loop_.weighed_s > th.SAVING_ERROR * adv.priced_s
    assert loop_.must_clear == th.SAVING_ERROR and loop_.now_s > 3 * adv.priced_s
    assert loop_.saving_low_s == pytest.approx(loop_.weighed_s) and loop_.strategy == "resident"


def test_a_c_program_s_first_write_in_its_first_iteration_stays_priced():
    """chunked_async (H100): its first iteration holds 1.16 s beyond a steady one with the GPU idle, of which the
    host's first write of its 1 GiB, predicted 0.67 s, and the first iteration's extra are the ways' own."""
    (adv,) = traced.advice("chunked_async")
    now = adv.loop_advice.now_s
    first, steady = adv.app.loop.first, adv.app.loop.steady_s
    idle_excess = first["wall_s"] - steady - max(0.0, first["busy_s"] - adv.app.loop.per_iteration["busy_s"])
    assert now - adv.priced_s < idle_excess - 0.5
    assert "setup and ending" not in adv.verdict


@pytest.mark.parametrize("stem", traced.stems())
def test_priced_time_lies_between_the_steady_iterations_and_the_time_now(stem):
    for adv in traced.advised(stem):
        loop_ = adv.loop_advice
        if loop_ is None or adv.workload is None:
            continue
        L = adv.app.loop
        least = loop_.now_s if L is None else min(loop_.now_s, (L.iterations - 1) * L.steady_s)
        assert least - 1e-9 <= adv.priced_s <= loop_.now_s + 1e-9
