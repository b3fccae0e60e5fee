import math

import pytest

from umprof.core.stats import noise, summarize
from umprof.measure.timing import PhaseTimer, StoppingRule


def test_summarize_names_carry_units():
    s = summarize([1.0, 2.0, 3.0, 4.0], "gpu_time")
    assert s["gpu_time_median_s"] == 2.5 and s["gpu_time_mean_s"] == 2.5
    assert s["gpu_time_min_s"] == 1.0 and s["gpu_time_max_s"] == 4.0
    assert s["gpu_time_iqr_s"] == pytest.approx(1.5)
    assert s["gpu_time_stdev_s"] == pytest.approx(1.2909944, rel=1e-6)  # sample stdev, ddof=1


def test_summarize_ignores_nan_and_handles_empty():
    assert summarize([math.nan, 2.0], "x")["x_median_s"] == 2.0
    assert math.isnan(summarize([], "x")["x_median_s"])


def test_noise_is_relative_stdev():
    assert noise([1.0, 1.0, 1.0]) == 0.0
    assert noise([1.0]) != noise([1.0])  # NaN below two samples
    assert noise([0.9, 1.1]) == pytest.approx(0.1414, rel=1e-3)


def test_rule_stops_when_every_condition_is_met():
    rule = StoppingRule(min_samples=5, min_time=0.01, max_noise=0.01, timeout=10)
    steady = [0.003] * 4
    assert rule.check(steady, 0.1) == (False, None)  # 4 of 5 samples
    assert rule.check(steady + [0.003], 0.1) == (True, None)


def test_rule_needs_min_time():
    rule = StoppingRule(min_samples=2, min_time=1.0, max_noise=0.5, timeout=10)
    assert rule.check([0.1] * 5, 0.5)[0] is False
    assert rule.check([0.1] * 11, 1.0) == (True, None)


def test_rule_keeps_sampling_a_noisy_stream_then_says_why():
    rule = StoppingRule(min_samples=3, min_time=0.0, max_noise=0.02, timeout=2.0)
    noisy = [1e-3, 2e-3] * 10
    assert rule.check(noisy, 1.0)[0] is False
    done, why = rule.check(noisy, 2.0)
    assert done and why.startswith("timeout after 2.0 s") and "noise" in why and "> 2.0%" in why


def test_rule_timeout_names_missing_samples():
    rule = StoppingRule(min_samples=5, min_time=0.0, max_noise=1.0, timeout=1.0)
    assert rule.check([0.6, 0.6], 1.2) == (False, None)  # past the timeout, short of min_samples: go on
    done, why = rule.check([0.6, 0.6], 4.0)  # until the hard limit, 4 x the timeout
    assert done and "2 of 5 samples" in why
    done, why = rule.check([0.6, 0.6], 1.3, cap_s=1.2)  # a run budget's share caps it sooner
    assert done and "2 of 5 samples" in why


def test_rule_rejects_bad_settings():
    with pytest.raises(ValueError, match="max_noise"):
        StoppingRule(max_noise=-1)


class FakeEvent:
    """A CUDA event on a fake GPU clock that advances by a fixed step per record."""

    clock = [0.0]

    def record(self, stream=None):
        FakeEvent.clock[0] += 2.0  # ms
        self.t = FakeEvent.clock[0]

    def synchronize(self):
        pass

    def time_since(self, other):
        return self.t - other.t


class FakeSession:
    stream = None

    def event_pair_pool(self):
        from umprof.measure.gpu import _EventPairs

        class Cuda:
            Event = FakeEvent

        return _EventPairs(Cuda)


def test_phase_timer_records_gpu_and_host_phases():
    t = PhaseTimer(FakeSession())
    with t.phase("h2d", bytes=100, ceiling="pcie"):
        pass
    with t.phase("host_read", gpu=False):
        pass
    with t.phase("d2d", bytes=10, reps=4):
        pass
    h2d, read, d2d = t.sample.phases
    assert h2d.gpu_s == pytest.approx(2e-3) and h2d.bytes == 100 and h2d.ceiling == "pcie"
    assert math.isnan(read.gpu_s) and read.time_s == read.cpu_s >= 0
    assert d2d.gpu_s == pytest.approx(0.5e-3)  # divided by reps
    assert t.sample.total_s == pytest.approx(2e-3 + read.cpu_s + 0.5e-3)


def test_a_phase_entered_in_several_iterations_counts_once_summed():
    t = PhaseTimer(FakeSession())
    for _ in range(3):
        with t.phase("h2d", bytes=100, ceiling="pcie"):
            pass
        with t.phase("kernel", bytes=10):
            pass
    sample = t.finish()
    assert [p.name for p in sample.phases] == ["h2d", "kernel"]
    h2d, kernel = sample.phases
    assert h2d.bytes == 300 and kernel.bytes == 30 and h2d.ceiling == "pcie"
    assert h2d.gpu_s == pytest.approx(3 * 2e-3) and kernel.gpu_s == pytest.approx(3 * 2e-3)


def test_an_op_can_set_a_phases_gpu_time_it_measured_itself():
    t = PhaseTimer(FakeSession())
    with t.phase("pipelined", bytes=10):
        pass
    t.set_gpu_time("pipelined", 1.5e-3)
    assert t.finish().phases[0].gpu_s == 1.5e-3
    with pytest.raises(KeyError):
        t.set_gpu_time("nope", 1.0)


def test_long_samples_stop_at_two():
    rule = StoppingRule(min_samples=5, min_time=0.0, max_noise=0.01, timeout=0.2, long_sample=0.05)
    assert rule.is_long([0.06, 0.07]) and not rule.is_long([0.06, 0.01]) and not rule.is_long([])
    assert rule.check([0.06], 0.06) == (False, None)
    done, why = rule.check([0.06, 0.09], 0.2)  # two long samples meet the count; the noise stops it at the timeout
    assert done and "samples" not in why
    assert rule.check([0.01] * 2, 0.2) == (False, None)  # short ones still need five
    assert StoppingRule(long_sample=0).is_long([10.0]) is False
