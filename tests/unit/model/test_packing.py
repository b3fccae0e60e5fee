"""Many small copies made one (umprof.model.advice.packing): which copies form a run, what packing them saves, and
that the advice says it in the program's own idiom."""

import io

import pytest
from rich.console import Console

from tests.unit.model import synthetic_tables, traced
from umprof import api
from umprof.model.advice import packing
from umprof.model.advice import thresholds as th
from umprof.model.application import applications
from umprof.nsight.tables import TraceTables
from umprof.views.advice import print_advice

US = 1_000


def _tables(steps: list[str], nbytes: int = 4096) -> TraceTables:
    """One thread's calls, a step each: "copy" (a cudaMemcpyAsync the thread synchronises on next), "async" (one it
    does not wait on), "kernel" (a launch); 20 µs a step, each copy's transfer 2 µs."""
    calls, copies, kernels = [], [], []
    for i, step in enumerate(steps):
        t, corr = i * 20 * US, i + 1
        if step == "kernel":
            calls.append((t, t + 3 * US, corr, "cudaLaunchKernel"))
            kernels.append((t + 4 * US, t + 6 * US, corr))
            continue
        calls.append((t, t + 5 * US, corr, "cudaMemcpyAsync"))
        copies.append((t + 2 * US, t + 4 * US, corr))
        if step == "copy":
            calls.append((t + 6 * US, t + 12 * US, None, "cudaStreamSynchronize"))
    return synthetic_tables.tables(calls, copies, kernels, nbytes, "h2d")


def _runs(steps: list[str], nbytes: int = 4096) -> list[int]:
    (app,) = applications(_tables(steps, nbytes))
    c = packing.runs_of_small_copies(app)
    return sorted(c["run"].value_counts().tolist())


def test_copies_the_host_waits_on_in_a_row_are_one_run():
    assert _runs(["copy"] * 20) == [20]


def test_a_kernel_between_them_ends_a_run():
    assert _runs(["copy"] * 20 + ["kernel"] + ["copy"] * 18) == [18, 20]
    assert _runs(["copy"] * 10 + ["kernel"] + ["copy"] * 10) == []  # two runs, each too short to pack


def test_copies_the_host_does_not_wait_on_or_large_ones_are_not_packed():
    assert _runs(["async"] * 40) == []
    assert _runs(["copy"] * 40, nbytes=th.SMALL_COPY + 1) == []
    assert _runs(["copy"] * 10 + ["async"] + ["copy"] * 10) == []


def test_packing_saves_the_host_time_less_one_copy_banded_from_the_copies_own_to_the_runs_span():
    (app,) = applications(_tables(["copy"] * 32))
    cal = api.calibration_for(gpu="H100")[0]
    (p,) = packing.packing(app, cal)
    assert p.copies == 32 and p.runs == 1 and p.run_bytes == 32 * 4096
    assert p.removed_s == pytest.approx(32 * 12e-6)  # call start to the synchronisation's end
    assert p.span_s == pytest.approx(31 * 20e-6 + 12e-6)  # the first call's start to the last wait's end
    assert p.high_s == pytest.approx(p.span_s - p.packed_s)  # with the host's work between the copies
    # the copies' own time, less what the tracer added: two calls a copy, the copy and its wait
    assert p.low_s == pytest.approx(p.removed_s - 64 * th.TRACED_CALL_S - p.packed_s)
    assert p.low_s < p.saving_s < p.high_s


@pytest.mark.parametrize("reader", ["sqlite.xz", "json.gz"])
def test_a_pytorch_loop_of_many_small_parameter_copies_is_told_to_pack_them(reader):
    """A trace of 256 parameter copies a step: the nsys trace (12 steps) advises packing, in PyTorch's idiom; the
    torch.profiler one holds one step of a longer loop, whose packing saves less than the time worth a change (it is
    priced, and neither advised nor listed)."""
    (adv,) = traced.torch_advice(traced.TORCH / f"h100-small_copies.{reader}")
    lines = [a for a in adv.advice if a.idiom == packing.IDIOM]
    loop = adv.loop_advice
    if reader == "sqlite.xz":
        assert lines and all("pin_memory()" in a.change and "pycuda" not in a.change for a in lines)
        assert loop.idiom == packing.IDIOM and loop.saving_low_s > th.NOISE * loop.now_s
        assert 0 < loop.saving_low_s <= loop.saving_s <= loop.saving_high_s <= loop.now_s
        assert "packing-host-time" in [x.code for x in adv.limits]
        assert "moving-bounds-saving" not in [x.code for x in adv.limits]
    else:
        (p,) = packing.packing(adv.app, api.calibration_for(gpu="H100")[0])
        assert p.copies == 256 and 0 < p.saving_s < th.NOISE * loop.now_s
        assert not lines and loop.idiom != packing.IDIOM


def test_large_copies_are_never_packed():
    (adv,) = traced.torch_advice(traced.TORCH / "h100-readback.sqlite.xz")
    assert not [a for a in adv.advice if a.idiom == packing.IDIOM]


def test_the_terminal_prints_a_change_with_brackets_whole():
    """Rich reads [...] as markup: the advice's code (`flat[i:j]`, `data[idx]`) must reach the terminal as written."""
    (adv,) = traced.torch_advice(traced.TORCH / "h100-small_copies.sqlite.xz")
    buf = io.StringIO()
    print_advice(adv, Console(file=buf, width=400, color_system=None))
    assert "flat[i:j].view(shape)" in buf.getvalue() and "torch.cat([t.reshape(-1) for t in ts])" in buf.getvalue()
