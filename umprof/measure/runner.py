"""Runs scenarios: cases in order, samples until the stopping rule is met, rows saved as
each case finishes. Input is validated by the caller before the GPU is opened here."""

from __future__ import annotations

import math
import platform
import sys
import time
from datetime import datetime, timezone

import numpy as np

from umprof.core.errors import CaseFailed, CaseSkipped, UmprofError
from umprof.core.results import AXIS_PREFIX, ResultWriter
from umprof.core.stats import UNSTABLE_NOISE, noise, summarize
from umprof.core.version import __version__
from umprof.measure.timing import PhaseTimer, StoppingRule
from umprof.nsight import nvtx

TOTAL = "total"


def rule_for(scenario, cli: dict) -> StoppingRule:
    """Defaults, then the scenario's [timing], then command-line options."""
    settings = dict(scenario.timing)
    settings.update({k: v for k, v in cli.items() if v is not None})
    return StoppingRule(**settings)


def ceilings(info: dict, ceiling: str) -> tuple[float, float | None]:
    """(ceiling bytes/s, measured device copy bytes/s or None) for a phase's ceiling name."""
    if ceiling == "pcie":
        return _num(info.get("pcie_bytes_per_s")), None
    if ceiling == "pcie-duplex":  # traffic in both directions at once: twice the per-direction link
        return 2 * _num(info.get("pcie_bytes_per_s")), None
    if ceiling == "dram":
        return _num(info.get("dram_bytes_per_s")), _num(info.get("d2d_bytes_per_s"))
    return math.nan, None


def _num(v):
    return math.nan if v is None else float(v)


def case_rows(scenario, case, samples, stop_reason, info: dict, extra: dict) -> list[dict]:
    """Summarize a case's samples into one row per phase plus a 'total' row."""
    base = _base(scenario, case)
    order, by_phase = [], {}
    for s in samples:
        for p in s.phases:
            if p.name not in by_phase:
                order.append(p.name)
                by_phase[p.name] = []
            by_phase[p.name].append(p)
    sample_extra = _median_extra(samples)
    rows = []
    for name in order:
        ps = by_phase[name]
        gpu, cpu, times = [p.gpu_s for p in ps], [p.cpu_s for p in ps], [p.time_s for p in ps]
        row = dict(base, phase=name, status="ok", reason="", samples=len(ps), stop_reason=stop_reason or "")
        row.update(summarize(gpu, "gpu_time"))
        row.update(summarize(cpu, "cpu_time"))
        row["time_median_s"] = float(np.median(times))
        row["time_p99_s"] = float(np.percentile(times, 99))
        _throughput(row, ps[0].bytes, ps[0].ceiling, info)
        rows.append(_finish(row, times, extra, sample_extra.get(name, {})))
    totals = [s.total_s for s in samples]
    row = dict(base, phase=TOTAL, status="ok", reason="", samples=len(samples), stop_reason=stop_reason or "")
    # a sample's total mixes GPU phases (event time) and host phases (host clock): only its
    # median is reported, under time_median_s
    row.update(summarize([], "gpu_time"))
    row.update(summarize([], "cpu_time"))
    row["time_median_s"] = float(np.median(totals))
    _throughput(row, 0, "", info)
    rows.append(_finish(row, totals, extra, sample_extra.get(TOTAL, {})))
    return rows


def _finish(row, times, extra, counters) -> dict:
    """Noise and the unstable flag from the sample times, then the case's and sample's extras."""
    row["noise_rel"] = noise(times)
    row["unstable"] = bool(row["noise_rel"] >= UNSTABLE_NOISE) if not math.isnan(row["noise_rel"]) else False
    row.update(extra)
    row.update(counters)
    return row


def _throughput(row, nbytes, ceiling, info):
    row["bytes"] = int(nbytes)
    t = row["time_median_s"]
    row["bytes_per_s"] = nbytes / t if nbytes and t > 0 else math.nan
    cap, d2d = ceilings(info, ceiling)
    row["ceiling"] = ceiling
    row["ceiling_bytes_per_s"] = cap
    row["util"] = row["bytes_per_s"] / cap if cap and not math.isnan(cap) else math.nan
    row["d2d_util"] = row["bytes_per_s"] / d2d if d2d else math.nan


def _median_extra(samples) -> dict:
    """Per-sample counters (``sample.extra = {phase: {name: value}}``) → their medians."""
    acc = {}
    for s in samples:
        for phase, values in s.extra.items():
            for k, v in values.items():
                acc.setdefault(phase, {}).setdefault(k, []).append(v)
    return {ph: {k: float(np.median(v)) for k, v in d.items()} for ph, d in acc.items()}


def status_row(scenario, case, status: str, reason: str, extra: dict | None = None) -> dict:
    return dict(_base(scenario, case), phase=TOTAL, status=status, reason=reason, samples=0, **(extra or {}))


def _base(scenario, case) -> dict:
    row = {"scenario": scenario.name, "op": scenario.op.name, "case": case.label}
    for k, v in case.params.items():
        row[AXIS_PREFIX + k] = v
    return row


def measure_case(ctx, case, rule: StoppingRule, share: float | None = None) -> list[dict]:
    """Prepare, warm up, sample until the rule says stop; rows for the case (ok, skipped or
    failed), each with the case's wall time in ``case_wall_s``.

    The case's budget is the rule's hard limit (4 x its timeout), or its ``share`` of a run
    budget if that is less: a case whose warm-up alone outlasts it answers from that one
    sample, flagged, and is not sampled again (nor counted by CUPTI).
    """
    t0 = time.perf_counter()
    rows = _measure(ctx, case, rule, share, t0)
    wall = time.perf_counter() - t0
    for r in rows:
        r["case_wall_s"] = wall
    return rows


def _measure(ctx, case, rule, share, t0) -> list[dict]:
    scenario, session = ctx.scenario, ctx.session
    try:
        run = scenario.op.prepare(ctx, case)
    except CaseSkipped as e:
        return [status_row(scenario, case, "skipped", str(e))]
    except UmprofError as e:
        return [status_row(scenario, case, "failed", str(e))]
    except Exception as e:  # a CUDA error while preparing: recorded, the run goes on
        return [status_row(scenario, case, "failed", _reason(e))]
    verify_each = run.verify_every_sample
    # a warm-up past the rule's hard limit (or the case's share of a run budget) is pathological
    budget = rule.hard_timeout if share is None else min(rule.hard_timeout, share)
    try:
        samples, why, over = [], None, False
        for _ in range(rule.warmup):
            run.reset()
            timer = PhaseTimer(session)
            run.sample(timer)
            warm = timer.finish()  # drains the warm-up's UM records so they count nowhere
            if verify_each:
                run.verify()
            if warm.total_s > budget:
                # a pathological case: the warm-up alone outlasted the case's budget; it is the one
                # sample, flagged, rather than paying as much again for a second
                samples, over = [warm], True
                why = f"one sample: the warm-up took {warm.total_s:.2g} s, over the case's budget of {budget:.2g} s"
                break
        # what is left of the case's share of a run budget caps the sampling
        cap = None if share is None else max(0.0, share - (time.perf_counter() - t0))
        start, done = time.perf_counter(), bool(samples)
        while not done:
            run.reset()
            timer = PhaseTimer(session)
            run.sample(timer)
            samples.append(timer.finish())
            if verify_each:
                run.verify()
            done, why = rule.check([s.total_s for s in samples], time.perf_counter() - start, cap)
        if not verify_each:
            run.verify()
        rows = case_rows(scenario, case, samples, why, ctx.info_dict, run.extra)
        run.finish_rows(rows)  # figures the op derives from several phases
        um = getattr(session, "um", None)
        # 'sample' mode: one counted sample after the timed ones, for cases that use managed memory
        if um is not None and not um.counting and scenario.op.counts_um and run.uses_managed_memory:
            if over:
                for r in rows:
                    r["stop_reason"] += "; UM not counted (over the case's budget)"
            else:
                _add_counted_sample(run, session, rows)
        if um is not None and hasattr(run, "check_rows"):
            run.check_rows(rows)  # the op's own sanity check of the counters
        return rows
    except CaseSkipped as e:
        return [status_row(scenario, case, "skipped", str(e), run.extra)]
    except CaseFailed as e:
        return [status_row(scenario, case, "failed", str(e), run.extra)]
    except Exception as e:
        return [status_row(scenario, case, "failed", _reason(e), run.extra)]
    finally:
        try:
            run.close()
        except Exception:
            pass


def _reason(e: Exception) -> str:
    """An unexpected error as one line: its type and its first line."""
    text = (str(e).strip().splitlines() or [""])[0]
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def _add_counted_sample(run, session, rows) -> None:
    """Run one more sample with CUPTI's UM counters on and put its counts in the rows.

    Counting slows page faults down, so the timed samples run without it; the counts of a
    sample do not depend on how long it took.
    """
    um = session.um
    um.drain()
    um.enable()
    try:
        run.reset()
        timer = PhaseTimer(session)
        run.sample(timer)
        counted = timer.finish()
    finally:
        um.disable()
    run.verify()
    for r in rows:
        r.update(counted.extra.get(r["phase"], {}))
        r["um_samples"] = 1


def run_meta(argv, rules) -> dict:
    import pandas

    meta = {
        "umprof": __version__, "argv": list(argv), "host": platform.node(),
        "time": datetime.now(timezone.utc).isoformat(timespec="seconds"), "python": platform.python_version(),
        "numpy": np.__version__, "pandas": pandas.__version__, "nvtx": nvtx.available(),
        "timing": {name: vars(r) for name, r in rules.items()},
    }
    try:
        import pycuda

        meta["pycuda"] = pycuda.VERSION_TEXT
    except Exception:
        pass
    return meta


def compiled_kernels(session, scenarios):
    """A KernelCache with every kernel the scenarios' cases launch already compiled and loaded,
    so that no compilation happens inside a timed region."""
    from umprof.measure.kernels import KernelCache

    kernels = KernelCache(session)
    for s in scenarios:
        for ref, sig, opts in s.op.kernel_refs(s):
            kernels.get(ref, sig, opts)
    return kernels


class ContextLost(Exception):
    """A case left the CUDA context broken (a kernel trapped, an illegal address): the driver
    refuses all further work in this process, so the rest of the run must go on in a fresh
    one (:func:`umprof.api.run` does that, resuming the result file)."""

    def __init__(self, case: str):
        super().__init__(f"the CUDA context was lost in case {case}")
        self.case = case


def run_scenarios(scenarios, *, output, force=False, device=0, timing=None, allow_oversubscription=False,
                  argv=None, console=None, progress=True, um_counters="sample", budget=None, resume=False):
    """Run every case of every scenario; returns (ResultSet, cases failed). Saves as it goes.

    ``budget``: seconds for the whole run (None: none); each case gets its share of what is
    left (:class:`~umprof.measure.budget.RunBudget`). ``resume``: keep the cases already in
    ``output`` and run the others. A case that breaks the CUDA context (a kernel that traps) is
    recorded as failed, saved, and :class:`ContextLost` raised for the rest to go on elsewhere.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from umprof.measure import device as devmod
    from umprof.measure.budget import RunBudget, format_seconds, plan_run
    from umprof.measure.gpu import open_session
    from umprof.measure.ops import RunContext

    t_start = time.perf_counter()
    timing = timing or {}
    rules = {s.name: rule_for(s, timing) for s in scenarios}  # validated before the GPU is touched
    plan = [(s, s.cases()) for s in scenarios]
    writer = ResultWriter(output, run_meta(argv or sys.argv, rules), force=force, resume=resume)
    plan = [(s, [c for c in cases if (s.name, c.label) not in writer.done]) for s, cases in plan]
    estimate = plan_run(plan, rules, um_counters == "sample")
    writer.meta["budget_s"] = budget
    writer.meta["estimate_s"] = round(estimate.total_s, 1)
    session = open_session(device, allow_oversubscription, um_counters=um_counters != "off")
    if session.um is not None and um_counters == "sample":
        session.um.disable()  # timed samples run uncounted; each case adds one counted sample
    writer.meta["um_counters"] = (f"{session.um_note}, mode {um_counters}" if session.um is not None
                                  else session.um_note if um_counters != "off" else "off (--um-counters off)")
    if console is not None and progress:
        console.print(estimate.describe(budget))
    if um_counters != "off" and session.um is None and console is not None:
        console.print(f"[yellow]unified-memory counters {session.um_note}[/]")
    failed = 0
    try:
        info = devmod.query(session)
        info.d2d_bytes_per_s = devmod.measure_d2d(session)
        info_dict = info.to_dict()
        writer.devices = [info_dict]
        writer.meta["driver"] = info.driver
        kernels = compiled_kernels(session, scenarios)
        writer.meta["kernels_compiled"] = kernels.compiled
        writer.meta["setup_s"] = round(time.perf_counter() - t_start, 2)
        shares = RunBudget(estimate, budget)
        total = sum(len(c) for _, c in plan)
        columns = [TextColumn("[bold]{task.fields[scenario]}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), TextColumn("{task.fields[left]}"), TextColumn("{task.fields[case]}")]
        with Progress(*columns, console=console, disable=not progress, transient=True) as bar:
            task = bar.add_task("run", total=total, scenario="", case="",
                                left=f"~{format_seconds(shares.time_left())} left")
            for s, cases in plan:
                ctx = RunContext(session, kernels, info, s, info_dict)
                with nvtx.range(f"scenario {s.name}", category="scenario"):
                    for case in cases:
                        bar.update(task, scenario=s.name, case=case.label)
                        with nvtx.range(f"case {case.label}", category="case"):
                            rows = measure_case(ctx, case, rules[s.name], shares.share(time.perf_counter() - t_start))
                        lost = False
                        if any(r["status"] == "failed" for r in rows):
                            failed += 1
                            lost = not session.healthy()  # a sticky error: nothing more runs in this process
                            if lost:
                                for r in rows:
                                    r["reason"] += " (the CUDA context was lost: the run went on in a fresh process)"
                                writer.meta.setdefault("context_lost_in", []).append(f"{s.name} {case.label}")
                        writer.add(rows)
                        if lost:
                            raise ContextLost(f"{s.name} {case.label}")
                        shares.finished(rows[0]["case_wall_s"])
                        bar.update(task, advance=1, left=f"~{format_seconds(shares.time_left())} left")
        if session.um is not None:  # the whole process' UM traffic, resets and warm-ups included
            session.um.drain()
            writer.meta["um_totals"] = dict(session.um.totals)
        writer.meta["wall_s"] = round(time.perf_counter() - t_start, 2)
        writer.flush()
    finally:
        session.close()
    return writer.result(), failed


def profile_pass(scenarios, *, device=0, launches_path, console=None):
    """One untimed sample per case with every kernel launch logged (for a profiler that runs this
    process, such as Nsight Compute); writes ``[{scenario, case, kernels}]`` to launches_path."""
    from umprof.measure import device as devmod
    from umprof.measure import kernels as kmod
    from umprof.measure.gpu import open_session
    from umprof.measure.ops import RunContext
    from umprof.nsight.ncu import write_launches

    session = open_session(device, False, um_counters=False)
    launches = []
    try:
        info = devmod.query(session)
        info_dict = info.to_dict()
        kernels = compiled_kernels(session, scenarios)
        for s in scenarios:
            ctx = RunContext(session, kernels, info, s, info_dict)
            for case in s.cases():
                try:
                    run = s.op.prepare(ctx, case)
                except (CaseSkipped, UmprofError):
                    continue
                log = []
                try:
                    run.reset()
                    with kmod.logged_launches() as log:
                        timer = PhaseTimer(session)
                        run.sample(timer)
                        timer.finish()
                    run.verify()
                except Exception as e:  # noqa: BLE001 — a case that fails here was reported by the timed run
                    if console is not None:
                        console.print(f"[yellow]ncu pass: {s.name} {case.label}: {e}[/]")
                    session.synchronize()
                finally:
                    # every kernel ncu profiled must be in the log, even a failed case's, or the order means nothing
                    launches.append({"scenario": s.name, "case": case.label, "kernels": log})
                    run.close()
    finally:
        write_launches(launches_path, launches)
        session.close()
