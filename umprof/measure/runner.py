"""Runs scenarios: cases in order, samples until the stopping rule is met, rows saved as
each case finishes. Input is validated by the caller before the GPU is opened here."""

from __future__ import annotations

import math
import os
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
    if ceiling.startswith("pcie-x"):  # N GPUs' links at once (each GPU's link as the run's GPU's)
        return int(ceiling[len("pcie-x"):]) * _num(info.get("pcie_bytes_per_s")), None
    if ceiling == "dram":
        return _num(info.get("dram_bytes_per_s")), _num(info.get("d2d_bytes_per_s"))
    if ceiling.startswith(("peer:", "peer-duplex:")):  # the path between GPUs A-B (NVLink or PCIe), from NVML
        kind, pair = ceiling.split(":", 1)
        link = (info.get("links") or {}).get(pair) or {}
        return (2 if kind == "peer-duplex" else 1) * _num(link.get("bytes_per_s")), None
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
    """Per-sample counters (``sample.extra = {phase: {name: value}}``) → their medians; except a
    sample's wall clock readings (``wall_s`` and the other ``wall_*``), which add up only within
    one sample (a loop's whole run = setup + iterations × steady): all of them come from the
    sample whose ``wall_s`` is the median (the lower one of an even count)."""
    acc = {}
    for s in samples:
        for phase, values in s.extra.items():
            for k, v in values.items():
                acc.setdefault(phase, {}).setdefault(k, []).append(v)
    out = {ph: {k: float(np.median(v)) for k, v in d.items()} for ph, d in acc.items()}
    for ph, d in acc.items():
        walls = [k for k in d if k.startswith("wall_")]
        if "wall_s" in d and all(len(d[k]) == len(d["wall_s"]) for k in walls):
            mid = int(np.argsort(d["wall_s"], kind="stable")[(len(d["wall_s"]) - 1) // 2])
            out[ph].update({k: float(d[k][mid]) for k in walls})
    return out


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
            # a trace's instances are then the samples umprof times (a warm-up kept below as the one
            # sample stays marked: the trace leaves that rare case out of its comparison)
            with nvtx.untimed("warm-up"):
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
        kept_warmup = not samples and rule.warmup and rule.is_long([warm.total_s])
        if kept_warmup:  # a long sample's warm-up is its first sample (StoppingRule.long_sample)
            samples = [warm]
        # what is left of the case's share of a run budget caps the sampling
        cap = None if share is None else max(0.0, share - (time.perf_counter() - t0))
        start, done = time.perf_counter(), bool(samples) and not kept_warmup
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
        with nvtx.untimed("counted sample"):
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

    from umprof.measure.gpu import driver_version

    meta = {
        "umprof": __version__, "argv": list(argv), "host": platform.node(), "cpu": host_cpu(),
        "driver_version": driver_version(),
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


def host_cpu() -> str:
    """The host's CPU model and core count ('AMD EPYC 9454 48-Core Processor, 16 cores'), as a
    calibration records where it was measured."""
    name = platform.processor()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            name = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), name)
    except OSError:
        pass
    return f"{name or 'unknown CPU'}, {os.cpu_count()} cores"


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


def device_plan(scenarios, devices: list[int]) -> list[tuple[int, object, list]]:
    """(GPU, scenario, cases) in run order: every scenario on each GPU in turn, except those whose
    op spans GPUs (p2p, host links, managed memory across GPUs), which run once, from the first
    GPU, over the cases their op makes of the run's GPUs (``pair=all``: every pair). A spanning
    case with no GPUs to span (one GPU) stays, to be recorded as skipped with the op's reason."""
    out = []
    for d in devices:
        for s in scenarios:
            if not getattr(s.op, "spans_devices", False):
                out.append((d, s, s.cases()))
            elif d == devices[0]:
                out.append((d, s, device_cases(s, devices)))
    return out


def device_cases(scenario, devices: list[int]) -> list:
    """A spanning scenario's cases for the run's GPUs (see :func:`device_plan`)."""
    from umprof.measure.scenario import Case

    op, out, seen = scenario.op, [], set()
    for case in scenario.cases():
        made = op.device_cases(case.params, devices) if op.device_cases else [case.params]
        if not made:  # nothing to span: kept, and skipped when its turn comes
            made = [dict(case.params)]
        for params in made:
            c = Case(scenario.name, params, op.label(params))
            if c.key() not in seen:
                seen.add(c.key())
                out.append(c)
    return out


def run_scenarios(scenarios, *, output, force=False, device=0, timing=None, allow_oversubscription=False,
                  argv=None, console=None, progress=True, um_counters="sample", budget=None, resume=False,
                  host=None, rank=0, meta=None):
    """Run every case of every scenario; returns (ResultSet, cases failed). Saves as it goes.

    ``device``: a GPU index, a list of them, or 'all' (:func:`umprof.core.devices.parse_devices`):
    each scenario runs on each GPU in turn (:func:`device_plan`), every row tagged with its GPU,
    ``host`` and ``rank`` (an MPI run's process). ``budget``: seconds for the whole run (None:
    none); each case gets its share of what is left (:class:`~umprof.measure.budget.RunBudget`).
    ``resume``: keep the cases already in ``output`` and run the others; ``meta``: more of the run's
    metadata (a calibration's profile). A case that breaks the
    CUDA context (a kernel that traps) is recorded as failed, saved, and :class:`ContextLost`
    raised for the rest to go on elsewhere.
    """
    from contextlib import nullcontext

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from umprof.core.devices import parse_devices, resolve_devices
    from umprof.measure import device as devmod
    from umprof.measure.budget import RunBudget, format_seconds, plan_run
    from umprof.measure.gpu import device_count, open_session
    from umprof.measure.ops import RunContext

    t_start = time.perf_counter()
    timing = timing or {}
    host = host or platform.node()
    rules = {s.name: rule_for(s, timing) for s in scenarios}  # validated before the GPU is touched
    spec = parse_devices(device)
    writer = ResultWriter(output, dict(run_meta(argv or sys.argv, rules), **(meta or {})), force=force, resume=resume)
    devices = resolve_devices(spec, device_count())
    plan = [(d, s, [c for c in cases if (s.name, c.label, d) not in writer.done])
            for d, s, cases in device_plan(scenarios, devices)]
    estimate = plan_run([(s, cases) for _, s, cases in plan], rules, um_counters == "sample")
    writer.meta.update(budget_s=budget, estimate_s=round(estimate.total_s, 1), gpus=devices)
    main = open_session(devices[0], allow_oversubscription, um_counters=um_counters != "off", um_devices=devices)
    if main.um is not None and um_counters == "sample":
        main.um.disable()  # timed samples run uncounted; each case adds one counted sample
    writer.meta["um_counters"] = (f"{main.um_note}, mode {um_counters}" if main.um is not None
                                  else main.um_note if um_counters != "off" else "off (--um-counters off)")
    if console is not None and progress:
        console.print(estimate.describe(budget))
    if um_counters != "off" and main.um is None and console is not None:
        console.print(f"[yellow]unified-memory counters {main.um_note}[/]")
    failed = 0
    tags = {"host": host, "rank": rank}
    try:
        sessions = {d: main.peer(d) for d in devices}
        enter = lambda d: nullcontext() if sessions[d] is main else sessions[d].current()  # noqa: E731
        infos = {}
        for d in devices:
            with enter(d):
                info = devmod.query(sessions[d])
                info.d2d_bytes_per_s = devmod.measure_d2d(sessions[d])
                info.host, info.rank = host, rank
                infos[d] = info
        devmod.peer_topology(list(infos.values()))
        info_dicts = {d: infos[d].to_dict() for d in devices}  # as saved, and what the ceilings read
        writer.devices = [info_dicts[d] for d in devices]
        writer.meta["driver"] = infos[devices[0]].driver
        kernels = {}
        spanning = [s for s in scenarios if getattr(s.op, "spans_devices", False)]
        for d in devices:  # an op that spans GPUs may launch on any of them
            with enter(d):
                kernels[d] = compiled_kernels(sessions[d], [s for e, s, _ in plan if e == d] + spanning)
        writer.meta["kernels_compiled"] = sum(k.compiled for k in kernels.values())
        writer.meta["setup_s"] = round(time.perf_counter() - t_start, 2)
        shares = RunBudget(estimate, budget)
        total = sum(len(c) for _, _, c in plan)
        columns = [TextColumn("[bold]{task.fields[scenario]}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), TextColumn("{task.fields[left]}"), TextColumn("{task.fields[case]}")]
        with Progress(*columns, console=console, disable=not progress, transient=True) as bar:
            task = bar.add_task("run", total=total, scenario="", case="",
                                left=f"~{format_seconds(shares.time_left())} left")
            for d, s, cases in plan:
                session = sessions[d]
                ctx = RunContext(session, kernels[d], infos[d], s, info_dicts[d], devices, kernels)
                shown = s.name if len(devices) == 1 else f"{s.name} GPU {d}"
                with enter(d), nvtx.range(f"scenario {s.name}" + (f" GPU {d}" if len(devices) > 1 else ""),
                                          category="scenario"):
                    for case in cases:
                        bar.update(task, scenario=shown, case=case.label)
                        with nvtx.range(f"case {case.label}", category="case"):
                            rows = measure_case(ctx, case, rules[s.name], shares.share(time.perf_counter() - t_start))
                        for r in rows:
                            r.update(tags, device=d)
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
                            writer.flush()  # the fresh process resumes from the file
                            raise ContextLost(f"{s.name} {case.label}")
                        shares.finished(rows[0]["case_wall_s"])
                        bar.update(task, advance=1, left=f"~{format_seconds(shares.time_left())} left")
        if main.um is not None:  # the whole process' UM traffic, resets and warm-ups included
            main.um.drain()
            writer.meta["um_totals"] = dict(main.um.totals)
        writer.meta["wall_s"] = round(time.perf_counter() - t_start, 2)
        writer.flush()
    finally:
        if writer.pending:  # Ctrl-C or an error: what was measured is saved
            writer.flush()
        main.close()
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
