"""The run's time: estimates before it starts, each case's share of a run budget, the one-sample
rule for a case over its budget, and the counted UM sample kept to managed-memory cases.
No GPU: the cases here time host phases on a fake session."""

import time
from types import SimpleNamespace

import pytest

from umprof.measure import budget as bmod
from umprof.measure.ops.base import CaseRun
from umprof.measure.runner import measure_case
from umprof.measure.scenario import Case, resolve
from umprof.measure.timing import StoppingRule

MiB = 1024**2


def test_sample_estimate_from_bytes_iterations_and_floor():
    op = SimpleNamespace(sample_rate=1e9, min_sample_s=1e-3)
    assert bmod.sample_estimate(op, {"bytes": 256 * MiB}) == pytest.approx(256 * MiB / 1e9)
    assert bmod.sample_estimate(op, {"bytes": 64 * MiB, "iterations": 4}) == pytest.approx(256 * MiB / 1e9)
    assert bmod.sample_estimate(op, {"bytes": 4096}) == 1e-3  # the floor
    assert bmod.sample_estimate(op, {"n": 10}) == 1e-3  # no bytes axis


def test_case_estimate_small_long_and_pathological():
    rule = StoppingRule(min_samples=5, min_time=0.02, timeout=0.5, warmup=1)
    small = bmod.case_estimate(rule, 1e-4)  # noise may never settle: the timeout
    assert small == pytest.approx(bmod.CASE_OVERHEAD_S + 1e-4 + 0.5)
    long = bmod.case_estimate(rule, 0.2, counted=True)  # warm-up, min_samples past the timeout, the counted one
    assert long == pytest.approx(bmod.CASE_OVERHEAD_S + 0.2 + 5 * 0.2 + 0.2)
    worst = bmod.case_estimate(rule, 3.0, counted=True)  # the warm-up is the one sample
    assert worst == pytest.approx(bmod.CASE_OVERHEAD_S + 3.0)


def test_plan_of_the_default_suite_counts_every_case():
    scenarios = resolve([])
    from umprof.measure.runner import rule_for

    plan = bmod.plan_run([(s, s.cases()) for s in scenarios], {s.name: rule_for(s, {}) for s in scenarios})
    assert len(plan.estimates) == sum(len(s.cases()) for s in scenarios)
    assert all(e > 0 for e in plan.estimates)
    assert plan.total_s == pytest.approx(bmod.SETUP_S + sum(plan.estimates))


def test_shares_split_what_is_left_in_proportion():
    plan = bmod.Plan(["a", "b", "c"], [1.0, 2.0, 1.0])
    b = bmod.RunBudget(plan, 8.0)
    assert b.share(0.0) == pytest.approx(2.0)  # 8 s x 1/4
    b.finished(4.0)  # the first case took twice its estimate
    assert b.share(4.0) == pytest.approx(4.0 * 2 / 3)
    assert b.time_left() == pytest.approx(3.0 * 4.0)  # the cases left, scaled by 4/1 (capped at 4)
    b.finished(1.0)
    assert b.share(30.0) == bmod.MIN_SHARE_S  # over budget: one sample still runs
    assert bmod.RunBudget(plan, None).share(0.0) is None


def test_format_seconds():
    assert bmod.format_seconds(42.4) == "42 s"
    assert bmod.format_seconds(200) == "3 min 20 s"
    assert bmod.format_seconds(3900) == "1 h 05 min"


# -- the runner's rules, on a fake session whose phases are host-timed -----------------------


class _Um:
    counting = False

    def __init__(self):
        self.enabled = 0

    def drain(self):
        return []

    def enable(self):
        self.enabled += 1

    def disable(self):
        pass


class _Session:
    stream = None

    def __init__(self):
        self.um = _Um()

    def event_pair_pool(self):
        return None


class _SleepyRun(CaseRun):
    """A case whose one phase sleeps: ``first`` for the first sample, ``then`` after."""

    def __init__(self, first, then, managed):
        super().__init__()
        self.times, self.n = [first, then], 0
        self.uses_managed_memory = managed
        self.verified = 0

    def sample(self, timer):
        with timer.phase("host_read", gpu=False):
            time.sleep(self.times[min(self.n, 1)])
        self.n += 1

    def verify(self):
        self.verified += 1


def _ctx(run):
    op = SimpleNamespace(name="fake", counts_um=True, prepare=lambda ctx, case: run)
    scenario = SimpleNamespace(name="fake", op=op)
    return SimpleNamespace(scenario=scenario, session=_Session(), info_dict={})


CASE = Case("fake", {"bytes": 1}, "bytes=1")
RULE = StoppingRule(min_samples=3, min_time=0.0, max_noise=1.0, timeout=0.5, warmup=1)


def test_a_case_over_its_budget_answers_from_its_warm_up_flagged_and_uncounted():
    run = _SleepyRun(0.06, 0.001, managed=True)
    ctx = _ctx(run)
    rows = measure_case(ctx, CASE, RULE, share=0.03)
    total = rows[-1]
    assert total["samples"] == 1 and total["status"] == "ok"
    assert "one sample: the warm-up took" in total["stop_reason"] and "budget of 0.03 s" in total["stop_reason"]
    assert "UM not counted" in total["stop_reason"] and ctx.session.um.enabled == 0
    assert run.verified == 1  # the one sample is still checked
    assert total["case_wall_s"] >= 0.06


def test_a_normal_case_samples_is_counted_once_and_records_its_wall_time():
    run = _SleepyRun(0.001, 0.001, managed=True)
    ctx = _ctx(run)
    # a timeout far past three 1 ms samples: a loaded machine must not cut them short
    rows = measure_case(ctx, CASE, StoppingRule(min_samples=3, min_time=0.0, max_noise=1.0, timeout=10.0, warmup=1))
    assert rows[-1]["samples"] == 3 and rows[-1]["stop_reason"] == ""
    assert ctx.session.um.enabled == 1 and rows[-1]["um_samples"] == 1
    assert all(r["case_wall_s"] == rows[0]["case_wall_s"] > 0 for r in rows)


def test_a_case_without_managed_memory_gets_no_counted_sample():
    run = _SleepyRun(0.001, 0.001, managed=False)
    ctx = _ctx(run)
    rows = measure_case(ctx, CASE, RULE)
    assert ctx.session.um.enabled == 0 and "um_samples" not in rows[-1]


def test_a_share_smaller_than_the_timeout_cuts_sampling_short():
    run = _SleepyRun(0.001, 0.02, managed=False)
    rule = StoppingRule(min_samples=50, min_time=0.0, max_noise=1.0, timeout=5.0, warmup=1)
    t0 = time.perf_counter()
    rows = measure_case(_ctx(run), CASE, rule, share=0.1)
    assert time.perf_counter() - t0 < 0.5
    assert 1 <= rows[-1]["samples"] < 50 and "timeout" in rows[-1]["stop_reason"]


def test_an_unexpected_error_is_one_line():
    class Broken(CaseRun):
        def sample(self, timer):
            raise RuntimeError("cuMemAlloc failed: out of memory\nmore detail")

    rows = measure_case(_ctx(Broken()), CASE, RULE)
    assert rows[-1]["status"] == "failed" and rows[-1]["reason"] == "RuntimeError: cuMemAlloc failed: out of memory"


def test_preparing_a_case_costs_in_proportion_to_its_bytes():
    rule = StoppingRule(min_samples=5, min_time=0.02, timeout=0.5, warmup=1)
    assert bmod.case_estimate(rule, 1e-3, nbytes=2**30) - bmod.case_estimate(rule, 1e-3) == pytest.approx(
        2**30 / bmod.PREPARE_BYTES_PER_S)


def test_reference_arrays_are_shared_read_only_and_bounded():
    import numpy as np

    from umprof.core.memo import bytes_bounded_cache

    calls = []

    @bytes_bounded_cache(3000)
    def make(n):
        calls.append(n)
        return np.zeros(n, np.uint8)

    a = make(1000)
    assert make(1000) is a and calls == [1000]
    with pytest.raises(ValueError):
        a[0] = 1  # shared by every case: nobody may write it
    make(1500)
    make(1200)  # 3700 bytes: the oldest (1000) goes
    make(1000)
    assert calls == [1000, 1500, 1200, 1000]
    make(5000)  # larger than the limit: computed, never kept
    make(5000)
    assert calls[-2:] == [5000, 5000]


def test_a_sample_past_the_timeout_but_under_its_hard_limit_is_sampled_again():
    run = _SleepyRun(0.03, 0.03, managed=False)
    rule = StoppingRule(min_samples=3, min_time=0.0, max_noise=1.0, timeout=0.02, warmup=1)
    rows = measure_case(_ctx(run), CASE, rule)  # 0.03 s samples: over 0.02, under 4 x 0.02
    assert rows[-1]["samples"] >= 2 and "one sample" not in rows[-1]["stop_reason"]


def test_a_case_takes_its_strategy_checked_and_knows_whether_cupti_counts_it():
    from umprof.core.errors import CaseSkipped

    info = SimpleNamespace(managed_memory=True, concurrent_managed_access=False, can_map_host_memory=True,
                           pageable_memory_access=False)
    run = CaseRun()
    assert run.use_strategy("pinned", info).name == "pinned" and run.uses_managed_memory is False
    assert run.use_strategy("managed", info).managed and run.uses_managed_memory is True
    with pytest.raises(CaseSkipped, match="concurrent managed access"):
        run.use_strategy("managed-prefetch", info)


def test_a_long_sample_keeps_its_warm_up_as_its_first_sample():
    run = _SleepyRun(0.03, 0.03, managed=False)
    rule = StoppingRule(min_samples=5, min_time=0.0, max_noise=1.0, timeout=0.01, warmup=1, long_sample=0.02)
    rows = measure_case(_ctx(run), CASE, rule)
    assert rows[-1]["samples"] == 2 and run.n == 2  # the warm-up and one more: two runs in all
    short = _SleepyRun(0.001, 0.001, managed=False)
    rows = measure_case(_ctx(short), CASE, rule)
    assert rows[-1]["samples"] == 5 and short.n == 6  # short samples: the warm-up is not kept
