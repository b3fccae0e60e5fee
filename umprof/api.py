"""umprof's Python API: what the command line does, as functions a notebook or a script calls.

Every command of the CLI is a thin wrapper over these; they raise :class:`UmprofError`
subclasses (``UsageError`` for a bad argument, ``GpuUnavailable`` without a GPU) instead of
printing and exiting. Only :func:`run`, :func:`calibrate` and a :func:`recommend` or
:func:`verify` that has to measure touch the GPU; everything else works on saved results,
on any machine.

This layer may import every layer below it (core, nsight, measure, model, views), always
inside the functions, so ``import umprof`` stays light and needs no GPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

from umprof.core.errors import UsageError
from umprof.core.results import ResultSet


def default_output(command: str) -> str:
    """Where a command saves its results when not told: umprof-results/<command>-<time>.parquet."""
    return str(Path("umprof-results") / f"{command}-{datetime.now():%Y%m%d-%H%M%S}.parquet")


def axis_overrides(axes) -> list[str]:
    """Axis overrides as the CLI's ``-a NAME=VALUES`` strings, from a mapping
    (``{"bytes": "pow2:24..26", "strategy": ["pinned", "managed"]}``) or a list of such strings."""
    if axes is None:
        return []
    if isinstance(axes, Mapping):
        return [f"{k}={v if isinstance(v, str) else ','.join(map(str, v))}" for k, v in axes.items()]
    if isinstance(axes, str):
        return [axes]
    return list(axes)


def select(scenario=(), axes=None) -> list:
    """Scenarios resolved (names, groups or TOML paths; empty: the default suite) with the axis
    overrides applied, one measured in rounds as its rounds (Scenario.in_rounds). Every mistake
    is a UsageError, before the GPU is touched."""
    from umprof.measure.scenario import Scenario, apply_overrides, resolve

    items = _listed(scenario, (str, Path, Scenario))
    chosen = [] if items else resolve([])
    for s in items:
        chosen += [s] if isinstance(s, Scenario) else resolve([str(s)])
    if not chosen:
        raise UsageError("no scenario selected: the default suite is empty; name a scenario (see `umprof list`)")
    apply_overrides(chosen, axis_overrides(axes))
    return [r for s in chosen for r in s.in_rounds()]  # a scenario measured in rounds: each round its own


def run(scenario=(), axes=None, output=None, *, device=None, force: bool = False, timing: dict | None = None,
        um_counters: str = "sample", allow_oversubscription: bool = False, progress: bool = False,
        console=None, argv=None, budget: float | None = None, mpi: str = "auto") -> ResultSet:
    """Measure scenarios on the GPU and return their ResultSet (also saved to ``output``, case by case).

    ``scenario``: a name, group or TOML path, a list of them, or Scenario objects from :func:`select`;
    ``axes``: overrides as ``{"bytes": "pow2:24..26"}``; ``device``: a GPU index, a list of them
    or ``"all"`` (each scenario runs on each GPU; p2p, host-links and um-peers span them), default
    0; ``timing``: the stopping rule's ``min_samples``, ``min_time``, ``max_noise``, ``timeout``
    (each case's budget), ``warmup``; ``budget``: seconds for the whole run, shared among the
    cases (see :func:`estimate`). Failed cases are rows with ``status == "failed"`` and their
    reason (:meth:`ResultSet.failed_cases` counts them). A case that breaks the CUDA context (a
    kernel that traps) fails alone: the cases after it run in a fresh process, added to the same file.

    ``mpi``: 'auto' (default) joins an MPI run when a launcher (mpirun, srun) started several
    processes; 'on' requires one; 'off' never. In an MPI run each rank takes its node-local GPU
    (unless ``device`` says otherwise), writes ``<output>.rank<R>`` as cases finish, and rank 0
    merges them into ``output`` and returns the merged result; the other ranks return their own,
    with ``meta["rank"]`` set.
    """
    from umprof.core.ranks import join, rank_path

    chosen = select(scenario, axes)
    world = join(mpi)
    output = str(output or default_output("run"))
    if world.several and Path(output).exists() and not force:
        raise UsageError(f"{output}: already exists; pass --force to overwrite it or -o to write elsewhere")
    settings = dict(output=str(rank_path(output, world.rank)) if world.several else output,
                    device=(world.local_rank if world.several else 0) if device is None else device,
                    timing=timing, allow_oversubscription=allow_oversubscription, um_counters=um_counters,
                    budget=budget, host=world.host, rank=world.rank,
                    argv=argv or ["umprof.run", *[s.name for s in chosen]])
    if not world.several:
        return _run_here(chosen, settings, force=force, resume=False, progress=progress, console=console)
    outcome, rs = None, None
    try:
        rs = _run_here(chosen, settings, force=True, resume=False, progress=progress and world.rank == 0,
                       console=console)
    except Exception as e:  # every rank must reach the merge, or the others wait for it forever
        outcome = (f"rank {world.rank} on {world.host}: {e}", getattr(e, "exit_code", 1))
    return _merge_ranks(world, output, settings["output"], rs, outcome, console)


def _merge_ranks(world, output: str, mine: str, rs, outcome, console) -> ResultSet:
    """Rank 0 merges every rank's file into ``output`` (removing them once it is saved) and gets
    the merged result, the other ranks their own; any rank's failure is every rank's error."""
    from umprof.core.errors import UmprofError
    from umprof.core.results import merge_results

    reports = world.gather({"rank": world.rank, "host": world.host, "file": mine, "error": outcome,
                            "rows": 0 if rs is None else len(rs.frame), "failed": 0 if rs is None else rs.failed_cases(),
                            "wall_s": None if rs is None else rs.meta.get("wall_s")})
    merged_error = None
    if world.rank == 0:
        files = [Path(r["file"]) for r in reports]
        present = [f for f in files if f.is_file()]
        try:
            if present:
                merged = merge_results([ResultSet.load(f) for f in present],
                                       ranks=[{k: v for k, v in r.items() if k != "file"} for r in reports])
                merged.save(output)
                for f in present:
                    f.unlink()
            errors = [r["error"] for r in reports if r["error"]]
            if errors:
                merged_error = ("; ".join(m for m, _ in errors) + (f" (the other ranks' cases are in {output})" if present else ""),
                                max(code for _, code in errors))
        except Exception as e:
            merged_error = (f"merging the ranks' files ({', '.join(map(str, files))}) failed: {e}", 1)
        if console is not None and not merged_error:
            console.print(f"merged {len(present)} ranks' results into {output}")
    merged_error = world.bcast(merged_error)
    if merged_error:
        error = UmprofError(merged_error[0])
        error.exit_code = merged_error[1]  # the ranks' own (3: no GPU, 2: a usage error)
        raise error
    if world.rank:
        rs.meta["rank"] = world.rank  # tells the caller its rows are in rank 0's merged file
        return rs
    return ResultSet.load(output)


def _run_here(chosen, settings: dict, *, force: bool, resume: bool, progress: bool, console) -> ResultSet:
    """Run in this process; if the CUDA context is lost, hand the rest to a fresh one."""
    import time

    from umprof.measure.runner import ContextLost, run_scenarios

    start = time.perf_counter()
    try:
        rs, _ = run_scenarios(chosen, force=force, resume=resume, progress=progress, console=console, **settings)
        return rs
    except ContextLost as e:
        if console is not None:
            console.print(f"[yellow]{e}; the rest of the run goes on in a fresh process[/]")
        budget = settings.get("budget")
        if budget:  # what is left of it
            settings = dict(settings, budget=max(1.0, budget - (time.perf_counter() - start)))
        return _run_in_child(chosen, settings, progress)


def _run_in_child(chosen, settings: dict, progress: bool) -> ResultSet:
    """``umprof run-rest``: the same scenarios in a fresh Python process, resuming the result file."""
    import json
    import subprocess
    import sys
    import tempfile

    spec = dict(settings, progress=progress,
                scenarios=[{"path": str(s.path), "data": s.to_data()} for s in chosen])
    with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="umprof-rest-", delete=False) as f:
        json.dump(spec, f)
    try:
        subprocess.run([sys.executable, "-m", "umprof", "run-rest", f.name], check=False)
    finally:
        Path(f.name).unlink(missing_ok=True)
    return ResultSet.load(settings["output"])


def run_rest(spec_path, console=None) -> ResultSet:
    """The child's side of a run whose context was lost: the spec's scenarios, resuming its output."""
    import json

    from umprof.measure.scenario import scenario_from_data

    spec = json.loads(Path(spec_path).read_text())
    chosen = [scenario_from_data(s["data"], Path(s["path"])) for s in spec.pop("scenarios")]
    progress = spec.pop("progress", False)
    return _run_here(chosen, spec, force=False, resume=True, progress=progress, console=console)


def estimate(scenarios, timing: dict | None = None, um_counters: str = "sample"):
    """How long running the scenarios (from :func:`select`) should take, before it starts:
    a :class:`~umprof.measure.budget.Plan` (``.total_s``, per case ``.names``/``.estimates``)."""
    from umprof.measure.budget import plan_run
    from umprof.measure.runner import rule_for

    rules = {s.name: rule_for(s, timing or {}) for s in scenarios}
    return plan_run([(s, s.cases()) for s in scenarios], rules, um_counters == "sample")


def load(path) -> ResultSet:
    """A saved result file (.parquet, .csv or .json): ``.frame`` is the tidy table (a row per
    case × phase), ``.meta`` the run's metadata, ``.devices`` the GPUs it ran on."""
    return ResultSet.load(path)


def _listed(value, single: tuple) -> list:
    """``value`` as a list: itself alone where it is one of the ``single`` types, else its items
    (the API takes one source or several wherever it takes sources)."""
    return [value] if isinstance(value, single) else list(value)


def _result_sets(sources) -> list[ResultSet]:
    return [s if isinstance(s, ResultSet) else ResultSet.load(s) for s in _listed(sources, (str, Path, ResultSet))]


def _runs_frame(sets: list[ResultSet], names: list[str] | None = None):
    """The sets' rows as one frame, each marked with the run (file) it came from
    (``umprof.model.predict.RUN``: 0, 1, ...): a case measured in two runs is two samples of it. A
    file that pools several runs already (a shipped calibration of several runs) keeps them apart.
    With the sets' ``names``, the frame's ``attrs["runs"]`` names each run, in order ("FILE", or
    "FILE, run k" for the runs a file pools)."""
    import pandas as pd

    from umprof.model.calibration import RUN

    frames, offset, runs_named = [], 0, []
    for i, rs in enumerate(sets):
        n = 1
        if RUN in rs.frame.columns:
            runs = rs.frame[RUN].fillna(0).astype(int)
            frames.append(rs.frame.assign(**{RUN: runs + offset}))
            n = int(runs.max()) + 1 if len(runs) else 1
        else:
            frames.append(rs.frame.assign(**{RUN: offset}))
        offset += n
        if names:
            runs_named += [names[i]] if n == 1 else [f"{names[i]}, run {k}" for k in range(n)]
    frame = pd.concat(frames, ignore_index=True)
    if names:
        frame.attrs["runs"] = runs_named
    return frame


def load_calibration(sources, device: int | None = None):
    """A Calibration from saved calibrations (paths or ResultSets; several pool case by case); a
    quick calibration is completed by the shipped calibration it names (see :func:`calibrations`);
    ``device``: only the rows measured on that GPU (a calibration run with ``--device all``)."""
    from umprof.core import calibrations as store
    from umprof.model.predict import Calibration

    items = _listed(sources, (str, Path, ResultSet))
    if not items:
        raise UsageError("no calibration given: pass result files of `umprof calibrate -o FILE`")
    key = None
    if not any(isinstance(s, ResultSet) for s in items) and all(Path(s).is_file() for s in items):
        key = ("files", tuple(_file_key(s) for s in items), device)
        if key in _BUILT:
            return _BUILT[key]
    sets = [s if isinstance(s, ResultSet) else _calibration_rows(store.describe(s)) for s in items]
    frame = _runs_frame(sets)  # several calibrations pool case by case, each case's gaps against its own run
    infos = [d for r in sets for d in r.devices]
    if device is not None:
        if "device" in frame and (frame["device"] == device).any():
            frame = frame[frame["device"] == device]
        elif "device" in frame:
            have = sorted({int(x) for x in frame["device"].dropna()})
            raise UsageError(f"option '--device': the calibration was measured on GPU {have}, not GPU {device}")
        infos = [d for d in infos if d.get("index") == device] or infos
    device = infos[0] if infos else {}
    names = [str(s) for s in items if not isinstance(s, ResultSet)]
    cal = Calibration(frame, device, ", ".join(names))
    if key is not None:
        _BUILT[key] = cal
    return cal


def _calibration_rows(cf) -> ResultSet:
    """A calibration file's rows; a quick one's completed by its shipped base: the base's scenarios
    that the quick calibration did not measure, beside every row it did (each scenario whole from
    one or the other)."""
    import pandas as pd

    from umprof.core import calibrations as store
    from umprof.measure.scenario import round_base
    from umprof.model.calibration import RUN

    rs = ResultSet.load(cf.path)
    if cf.profile != "quick":
        return rs
    base = store.SHIPPED_DIR / str(cf.base or "")
    if not cf.base or not base.is_file():
        raise UsageError(f"{cf.path}: a quick calibration completed by {cf.base!r}, which this umprof does not "
                         "ship: measure a full one with `umprof calibrate`")
    whole = ResultSet.load(base)
    mine = set(round_base(rs.frame["scenario"].astype(str)))
    keep = ~round_base(whole.frame["scenario"].astype(str)).isin(mine)
    own = rs.frame
    if RUN in whole.frame.columns:  # a base of several runs: the quick calibration's rows are a run of their own
        own = own.assign(**{RUN: int(whole.frame[RUN].max()) + 1})
    return ResultSet(pd.concat([whole.frame[keep], own], ignore_index=True), rs.meta, rs.devices)


def calibrations() -> list:
    """The calibrations this umprof can answer from: shipped ones (one per GPU model its release was
    measured on), then this machine's (``umprof calibrate``), as
    :class:`~umprof.core.calibrations.CalibrationFile` (GPU, profile, date, host, driver, path)."""
    from umprof.core import calibrations as store

    return store.shipped() + store.cached()


def calibration_estimate(profile: str = "full", gpu: str | None = None) -> float:
    """Seconds a calibration of this profile should take: the shipped calibration of the same GPU's
    case times for the cases it measured (its first run's, else the first run that measured the case), the
    run's own estimate for the rest (all of them where no calibration of that GPU is shipped)."""
    from umprof.core import calibrations as store
    from umprof.measure import calibration as profiles

    chosen = profiles.scenarios(profile)
    own = estimate(chosen, um_counters="off")
    base = next((c for c in store.shipped() if gpu and c.matches(gpu)), None)
    if base is None:
        return own.total_s
    from umprof.model.calibration import RUN

    shipped = ResultSet.load(base.path)
    frame = shipped.frame
    totals = frame[frame["phase"] == "total"]
    if RUN in totals.columns:  # a shipped calibration of several runs: the first is the full calibration; a
        # scenario measured alone (another run) is timed by its own run
        totals = totals.iloc[totals[RUN].fillna(0).argsort(kind="stable")]
    totals = totals.drop_duplicates(["scenario", "case"]).set_index(["scenario", "case"])
    rules = shipped.meta.get("timing") or {}
    estimates = dict(zip(own.names, own.estimates))
    seconds = 0.0
    for s in chosen:
        for c in s.cases():
            if (s.name, c.label) not in totals.index:
                seconds += estimates[f"{s.name} {c.label}"]
                continue
            row = totals.loc[(s.name, c.label)]
            t, timeout = float(row["case_wall_s"]), s.timing.get("timeout")
            was = (rules.get(s.name) or {}).get("timeout")
            # a case that sampled until its timeout takes the profile's shorter one in its place
            if timeout and was and timeout < was and "timeout" in str(row.get("stop_reason", "")):
                t *= timeout / was
            seconds += t
    return seconds + 15.0  # opening the GPU, measuring its device copy, compiling the kernels


def calibrate(output=None, *, quick: bool = False, device: int = 0, force: bool = False, console=None, argv=None):
    """Measure this GPU's calibration (``quick``: about a minute, completed by the GPU model's shipped
    calibration; else the full one, about 5 minutes) into the user's cache (or ``output``) and return
    its :class:`~umprof.core.calibrations.CalibrationFile`. An unfinished one there (Ctrl-C) is resumed:
    the cases it measured are kept. One that is complete is returned as it is, unless ``force``."""
    from umprof.core import calibrations as store
    from umprof.measure import calibration as profiles
    from umprof.measure.budget import format_seconds
    from umprof.measure.gpu import identify

    gpu = identify(device)  # no GPU: say so before promising a calibration
    profile = "quick" if quick else "full"
    base = None
    if profiles.profile(profile).needs_base:
        base = next((c for c in store.shipped() if c.matches(gpu["name"], gpu["memory_bytes"])), None)
        if base is None:
            raise UsageError(f"option '--quick': a quick calibration takes the kernels' figures from the shipped "
                             f"calibration of its GPU, and umprof ships none for {gpu['name']} (it ships: "
                             f"{', '.join(store.known_gpus()) or 'none'}); run `umprof calibrate` for a full one")
    import platform

    if output:
        path = Path(output)
    else:
        store.writable_cache()  # an unwritable cache is said before anything is measured
        path = store.cache_path(gpu["name"], gpu["memory_bytes"], gpu["driver"], platform.node(), profile)
    resume = False
    if path.exists() and not force:
        earlier = store.describe(path)
        if earlier.complete and earlier.profile == profile:
            if console is not None:
                console.print(f"already calibrated: {path} ({earlier.summary()}); --force measures it again")
            return earlier
        resume = earlier.profile == profile
        if not resume:
            raise UsageError(f"{path}: already exists and holds a {earlier.profile} calibration; pass --force to "
                             "overwrite it or -o to write elsewhere")
    chosen = profiles.scenarios(profile)
    total = sum(len(s.cases()) for s in chosen)
    if console is not None:
        what = "resuming" if resume else "calibrating"
        console.print(f"{what} {gpu['name']} ({profile}: {total} cases, about "
                      f"{format_seconds(calibration_estimate(profile, gpu['name']))}); saving to {path}")
    facts = {"profile": profile, "base": base.name if base else None, "complete": False, "cases": total}
    # a case that loses the CUDA context is recorded as failed and the rest runs in a fresh process,
    # as `umprof run` does: a long calibration is not lost to one sticky error
    settings = dict(output=str(path), device=device, um_counters="off", argv=argv or ["umprof.calibrate"],
                    meta={store.META_KEY: facts})
    rs = _run_here(chosen, settings, force=force, resume=resume, progress=console is not None, console=console)
    measured = int(rs.frame.loc[rs.frame["phase"] == "total", ["scenario", "case"]].drop_duplicates().shape[0])
    rs.meta[store.META_KEY] = dict(facts, complete=measured >= total, cases=measured)
    rs.save(path)
    return store.describe(path, "cached" if not output else "file")


def calibration_for(*, gpu: str | None = None, device: int = 0, calibrate_now: bool = False, console=None):
    """The calibration that answers here, and what it is: ``gpu`` names a shipped GPU model (answers
    offline, no GPU needed); else this machine's GPU's cached calibration, then its model's shipped one;
    with none, ``calibrate_now`` measures one, else a UsageError says how long one takes. Returns
    ``(Calibration, CalibrationFile, differences)``: what differs between this machine and where the
    calibration was measured, in words (empty when nothing does, or offline)."""
    from umprof.core import calibrations as store
    from umprof.core.errors import GpuUnavailable
    from umprof.measure.budget import format_seconds
    from umprof.measure.gpu import identify

    if gpu is not None:
        cf = store.shipped_for(gpu)
        return _loaded(cf), cf, []
    try:
        here = identify(device)
    except GpuUnavailable as e:
        known = ", ".join(store.known_gpus()) or "none"
        raise GpuUnavailable(f"{e}; to answer without a GPU pass --gpu NAME (shipped: {known}) or --from FILE") from None
    import platform

    cf = store.for_gpu(here["name"], here["memory_bytes"], here["driver"], platform.node())
    if cf is None:
        if not calibrate_now:
            raise UsageError(f"no calibration of {here['name']} here: `umprof calibrate` measures one (about "
                             f"{format_seconds(calibration_estimate('full', here['name']))}), or pass --calibrate-now")
        cf = calibrate(device=device, console=console)
    return _loaded(cf), cf, _differences(cf, here)


def check_calibration_gpu(sources, gpu: str | None = None, device: int = 0) -> None:
    """Refuse calibration files of another GPU than the one answered for: ``gpu`` where given (a
    model's name, 'H100'), else this machine's GPU where there is one (offline, any file answers)."""
    from umprof.core import calibrations as store
    from umprof.core.errors import GpuUnavailable
    from umprof.measure.gpu import identify

    files = [store.describe(s) for s in _listed(sources, (str, Path, ResultSet)) if not isinstance(s, ResultSet)]
    for cf in files:
        store.check(cf)
    if gpu is not None:
        want = gpu
    else:
        try:
            want = identify(device)["name"]
        except GpuUnavailable:
            return
    for cf in files:
        if want.lower() not in cf.gpu.lower():
            raise UsageError(f"{cf.path}: a calibration of {cf.gpu}, not of {want}; pass --gpu "
                             f"{cf.gpu.replace('NVIDIA ', '')!r} to answer for that GPU with it")


# Calibrations built in this process, by their files' paths, sizes and times: building one's curves costs
# seconds of CPU, and a job's worker advises trace after trace with the same calibration.
_BUILT: dict[tuple, object] = {}


def _file_key(path) -> tuple:
    st = Path(path).stat()
    return str(Path(path).resolve()), st.st_size, st.st_mtime_ns


def _loaded(cf):
    from umprof.core import calibrations as store
    from umprof.model.predict import Calibration

    store.check(cf)
    base = store.SHIPPED_DIR / str(cf.base or "") if cf.profile == "quick" and cf.base else None
    key = (_file_key(cf.path), _file_key(base) if base is not None and base.is_file() else None, cf.summary())
    if key not in _BUILT:
        rs = _calibration_rows(cf)
        _BUILT[key] = Calibration(rs.frame, rs.devices[0] if rs.devices else {}, cf.summary())
    return _BUILT[key]


def _differences(cf, here: dict) -> list[str]:
    """What differs between this machine and the one the calibration was measured on."""
    import platform

    from umprof.measure.runner import host_cpu

    out = []
    if cf.driver and here.get("driver") and cf.driver != here["driver"]:
        out.append(f"driver {here['driver']} here, {cf.driver} there")
    cpu = host_cpu()
    if cf.cpu and cf.cpu != cpu:
        out.append(f"host CPU {cpu} here, {cf.cpu} there")
    if cf.origin == "shipped" and cf.host and cf.host != platform.node():
        out.append("another machine of the same GPU model: `umprof calibrate --quick` measures this one's host "
                   "memory and link in about a minute")
    return out


def workloads(spec) -> list:
    """Workloads from a Workload, a mapping of its keys (``{"bytes": "256MiB", "reuse": 16}``),
    a TOML file's path, or a list of any of these."""
    from umprof.model.workload import Workload, from_mapping, load_workloads

    items = _listed(spec, (Workload, Mapping, str, Path))
    out = []
    for i, w in enumerate(items):
        if isinstance(w, Workload):
            out.append(w)
        elif isinstance(w, Mapping):
            out.append(from_mapping(dict(w), f"workload {i}"))
        else:
            out.extend(load_workloads(w))
    if not out:
        raise UsageError("no workload given")
    return out


def recommend(workload, calibration=None, *, steady: bool = False, gpu: str | None = None, device: int = 0,
              calibrate_now: bool = False, console=None):
    """Strategies ranked for a workload: a :class:`~umprof.model.recommend.Recommendation`
    (``.ranked`` predictions with their phases, ``.reason``, ``.to_frame()``) for one Workload or
    mapping; a list of them for a TOML file or a list.

    ``calibration``: saved calibrations (paths or ResultSets) or a Calibration; None: the one
    :func:`calibration_for` finds (``gpu``: a shipped GPU model's, offline; else this machine's
    cached one, then its GPU model's shipped one; ``calibrate_now`` measures one where there is
    none). ``steady``: rank by the steady iteration alone (a loop that runs for hours) instead of
    the whole run of the workload's iterations.
    """
    from umprof.model import recommend as rmod
    from umprof.model.predict import Calibration
    from umprof.model.workload import Workload

    ws = workloads(workload)  # bad workloads are reported before any calibration is read or measured
    if isinstance(calibration, Calibration):
        cal = calibration
    elif calibration is None:
        cal = calibration_for(gpu=gpu, device=device, calibrate_now=calibrate_now, console=console)[0]
    else:
        cal = load_calibration(calibration)
    recs = rmod.recommend_all(cal, ws, steady)
    return recs[0] if isinstance(workload, (Workload, Mapping)) else recs


def _recommendations(recommendations) -> list:
    """One Recommendation or several, as a list."""
    from umprof.model import recommend as rmod

    return _listed(recommendations, (rmod.Recommendation,))


def verify(recommendations, *, top: int | None = 3, measured=None, output=None, device: int = 0,
           force: bool = False, console=None, argv=None, rounds: int | None = None) -> tuple[list, str]:
    """Measure each recommendation's workload under its ``top`` strategies (None: all ranked) in
    ``rounds`` rounds (None: VERIFY_ROUNDS; each strategy's figure the median over them; even
    rounds in reverse order), or read earlier verification runs (``measured``: a path, a ResultSet, a list of them or
    the frame :func:`measured_frame` made of them), and check the predictions: ``(verdicts, where the measurements are)``, a verdict (or None) per
    recommendation."""
    from umprof.measure.runner import run_scenarios
    from umprof.model import recommend as rmod

    recs = _recommendations(recommendations)
    if measured is not None:
        frame, where = measured_frame(measured)
        return rmod.verify_all(recs, frame), where
    scenarios = rmod.verification_rounds([r.workload for r in recs], [[p.strategy for p in r.ranked[:top]] for r in recs],
                                         rmod.VERIFY_ROUNDS if rounds is None else rounds)
    output = output or default_output("verify")
    rs, _ = run_scenarios(scenarios, output=output, force=force, device=device,
                          argv=argv or ["umprof.verify"], console=console, progress=console is not None)
    return rmod.verify_all(recs, rs.frame), str(output)


def runs_agree(recommendations, measured) -> dict | None:
    """How often the strategy measured fastest in one verification run of ``measured`` (paths,
    ResultSets, or the frame :func:`measured_frame` made of them) was within 5% of the fastest in
    another, over the recommendations' workloads (:func:`umprof.model.recommend.runs_agree`): how
    repeatable the verdict itself is. None for fewer than two runs."""
    from umprof.model import recommend as rmod

    return rmod.runs_agree(_recommendations(recommendations), measured_frame(measured)[0])


def phase_drift(recommendations, measured) -> dict:
    """How the verified steady steps ran against the calibration's predictions of them, by family
    (:func:`umprof.model.recommend.phase_drift`), in earlier verification runs (paths, ResultSets,
    or the frame :func:`measured_frame` made of them)."""
    from umprof.model import recommend as rmod

    return rmod.phase_drift(_recommendations(recommendations), measured_frame(measured)[0])


def measured_frame(measured) -> tuple:
    """Earlier verification runs (a path, a ResultSet or a list of them) as one frame, each row
    marked with the run it came from (``umprof.model.predict.RUN``: 0, 1, ...; the frame's
    ``attrs["runs"]`` names each), and their names for messages; a frame this made is passed
    through (so that callers build it once)."""
    import pandas as pd

    if isinstance(measured, pd.DataFrame):
        return measured, "results"
    items = _listed(measured, (str, Path, ResultSet))
    names = [str(m) if not isinstance(m, ResultSet) else "results" for m in items]
    return _runs_frame(_result_sets(items), names), ", ".join(names)


def compare(a, b, *, phases: str = "total", across_devices: bool = False, floor: float | None = None):
    """Match two runs' cases and call each SAME, FAST or SLOW (b against a) against their noise:
    a :class:`~umprof.model.compare.Comparison` (``.frame``, ``.counts()``). ``a``, ``b``: paths
    or ResultSets."""
    from umprof.model import compare as cmpmod

    (ra,), (rb,) = _result_sets(a), _result_sets(b)
    name = lambda x: str(x) if not isinstance(x, ResultSet) else "results"  # noqa: E731
    return cmpmod.compare(ra, rb, phases, across_devices, cmpmod.FLOOR if floor is None else floor,
                          name_a=name(a), name_b=name(b))


def report(results, path="umprof-report.html", *, workloads_from=None, traces=(), force: bool = False) -> Path:
    """Write one self-contained HTML report of result files (paths or ResultSets) and return its path.
    Its recommendation section uses ``workloads_from`` (TOML paths; default: the six typical loops
    of ``scenarios/workloads/typical.toml``) when the results hold a calibration; ``traces``
    (Nsight Systems traces) add a section of :func:`advise`'s advice with each one's timeline; several traces are
    one job's ranks (:func:`advise_job`): a timeline per host, a row per rank group."""
    from umprof.core.resources import scenarios_dir
    from umprof.views import html

    out = Path(path)
    if out.suffix.lower() not in (".html", ".htm"):
        raise UsageError(f"report path: expected a file ending in .html, got {str(path)!r}")
    if out.exists() and not force:
        raise UsageError(f"{out}: already exists; pass --force to overwrite it or -o to write elsewhere")
    items = _listed(results, (str, Path, ResultSet))
    if not items and not traces:
        raise UsageError("report: give result files, traces (--trace), or both")
    names = [str(r) if not isinstance(r, ResultSet) else f"results {i}" for i, r in enumerate(items)]
    files = list(workloads_from or [scenarios_dir() / "workloads" / "typical.toml"])
    traces = _listed(traces, (str, Path))
    job = advise_job(traces) if len(traces) > 1 else None  # several traces: one job's ranks
    advice = [] if job else [a for t in traces for a in advise(t)]
    text = html.build(_result_sets(items), names + [str(t) for t in traces], workloads(files), advice, job)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return out


def advise(trace, calibration=None, *, gpu: str | None = None, nsys: str | None = None,
           all_processes: bool = False, wall_s: float | None = None, tables=None) -> list:
    """Advice for an application from its Nsight Systems trace (``.sqlite``, or ``.nsys-rep`` exported
    once with nsys): a :class:`~umprof.model.advise.AppAdvice` per process and GPU that ran CUDA work,
    the busiest first (every GPU of the busiest process unless ``all_processes``): its flows, loop, unified
    memory, current strategy, each strategy's predicted time and saving, and the advice.

    ``calibration``: saved calibrations (paths or ResultSets) or a Calibration; ``gpu``: a shipped GPU
    model's; else the calibration for the trace's GPU (this machine's cached one of that GPU, then the
    shipped one), one line naming the GPU where there is none. ``wall_s``: the program's untraced wall time in
    seconds, against which the tracing's overhead is measured (else it is estimated from the trace). ``tables``: the
    trace already read (a caller that read it for its host and rank)."""
    from umprof.model import advise as amod
    from umprof.model import frameworks
    from umprof.model.advice.result import Limit
    from umprof.model.application import GRAPH_NODES, advised, applications
    from umprof.nsight.trace_db import open_trace

    check_wall_s(wall_s)
    t = tables if tables is not None else open_trace(trace, nsys)
    if not t.has_cuda and len(t.graphs):
        raise UsageError(f"{trace}: its GPU work ran in {len(t.graphs)} CUDA graph launches, traced whole (nsys's "
                         f"default): the copies and kernels inside them are not in the trace; {GRAPH_NODES}")
    if not t.has_cuda:
        raise UsageError(f"{trace}: a trace with no CUDA activity (no copies, kernels or memsets): trace the "
                         "application with `nsys profile -t cuda ...`")
    apps = advised(applications(t), all_processes)
    framework = frameworks.evidence(t)
    cals: dict[str, tuple] = {}
    out = []
    for app in apps:
        if app.gpu not in cals:
            cals[app.gpu] = _calibration_for(app, trace, calibration, gpu)
        cal, source = cals[app.gpu]
        adv = amod.advise(app, cal, source, wall_s=wall_s, framework=framework, ranges=t.ranges,
                          tracer=t.source)
        adv.limits += [Limit("trace-lacks", note) for note in _advice_notes(app, t.notes)]
        out.append(adv)
    return out


def _calibration_for(app, trace, calibration, gpu: str | None) -> tuple:
    """The calibration an application's advice is priced by, and its source: the one given, else a shipped GPU
    model's (``gpu``), else the one for the trace's GPU; one UsageError naming the GPU where there is none."""
    from umprof.core import calibrations as store
    from umprof.model.predict import Calibration

    if isinstance(calibration, Calibration):
        return calibration, calibration.source
    if calibration is not None:
        cal = load_calibration(calibration)
        return cal, cal.source
    cf = store.shipped_for(gpu) if gpu else store.for_gpu(app.gpu, app.memory_bytes or None)
    if cf is None:
        known = ", ".join(store.known_gpus()) or "none"
        raise UsageError(f"{trace}: traced on {app.gpu}, which no calibration here describes (shipped: {known}); "
                         "run `umprof calibrate` on a machine with that GPU and pass --from FILE, or --gpu NAME to "
                         "answer as if it were a shipped one")
    return _loaded(cf), cf.summary()


def check_wall_s(wall_s, name: str = "wall_s") -> None:
    """One UsageError naming ``name`` (the argument, or the option that gave it) unless ``wall_s`` is None or a
    program's wall time: a finite number of seconds above 0."""
    if wall_s is not None and (isinstance(wall_s, bool) or not isinstance(wall_s, (int, float)) or not wall_s > 0
                               or wall_s == float("inf")):
        raise UsageError(f"{name}: expected the program's untraced wall time in seconds, more than 0, got {wall_s!r}")


def _advice_notes(app, notes: list) -> list:
    """What the trace's reader found missing that bears on the advice: its own notes (a torch.profiler trace holds
    no unified memory; copies without a size), and the tables nsys left out only where the program needs them (the
    page-fault tables of a program on managed memory)."""
    from umprof.nsight.trace_db import MISSING

    faults = {MISSING["CUDA_UM_GPU_PAGE_FAULT_EVENTS"], MISSING["CUDA_UM_CPU_PAGE_FAULT_EVENTS"]}
    return [n for n in notes if n not in MISSING.values() or (n in faults and app.um["managed"])]


def advise_program(command, calibration=None, *, runs: int = 3, output=None, gpu: str | None = None,
                   nsys: str | None = None, all_processes: bool = False, say=None) -> tuple[list, object]:
    """Run a program and advise it: ``command`` (a list: the program and its arguments) traced once under nsys (again
    with unified-memory page faults where the trace shows managed memory, and with torch's operators as NVTX ranges
    where it shows a PyTorch program without them) and run ``runs`` times untraced
    (:func:`umprof.nsight.program.run_program`); its trace advised as :func:`advise` does, against the median of the
    untraced wall times. ``output``: a prefix that keeps the report and its export (``PREFIX.nsys-rep``,
    ``PREFIX.sqlite``), else they are written to a temporary folder and removed; ``say``: called with a progress
    line at each step. Returns the advice and the :class:`~umprof.nsight.program.ProgramRuns` (its ``trace`` None
    where the trace was not kept)."""
    import shutil
    import tempfile

    from umprof.nsight.program import run_program

    folder = None if output else tempfile.mkdtemp(prefix="umprof-advise-")
    first: dict = {}  # the first trace's tables, read to ask it of PyTorch: advised as read where it is the last
    try:
        ran = run_program(list(command), runs=runs, prefix=output or Path(folder) / "trace", nsys=nsys,
                          say=say or (lambda line: None),
                          torch_without_ops=lambda sqlite: _torch_without_ops(sqlite, first))
        again = ran.um_faults or ran.torch_ops
        found = advise(ran.trace, calibration, gpu=gpu, nsys=nsys, all_processes=all_processes, wall_s=ran.wall_s,
                       tables=None if again else first.get("tables"))
    finally:
        if folder:
            shutil.rmtree(folder, ignore_errors=True)
    if folder:
        ran.trace = None
    return found, ran


def _torch_without_ops(sqlite: Path, keep: dict | None = None) -> str:
    """What in an Nsight Systems export shows a PyTorch program that records none of torch's operators ('' where
    none does); the tables read kept in ``keep["tables"]`` where given."""
    from umprof.model.frameworks import torch_without_ops
    from umprof.nsight.trace_db import read_sqlite

    tables = read_sqlite(Path(sqlite))
    if keep is not None:
        keep["tables"] = tables
    return torch_without_ops(tables)


def import_nsys(trace, *, scenario: str | None = None, against=None, merge_numbered: bool = True,
                nsys: str | None = None) -> ResultSet:
    """umprof's phase breakdown of an NVTX-annotated Nsight Systems trace (``.sqlite``, or ``.nsys-rep``
    exported once with nsys): a row per scenario, range and phase (ranges named as :mod:`umprof.nvtx`
    names them), its unified-memory totals and what the trace lacked in the metadata.

    ``scenario``: the name of ranges outside any ``scenario`` range (the trace's file name); ``against``:
    umprof's results of the same run (a path or ResultSet), whose GPU time per phase is set beside Nsight's
    (``agrees``: within 5%; the table in ``meta["agreement"]``); ``merge_numbered``: 'iteration 0',
    'iteration 1', ... as one case. A trace without phase ranges is a UsageError that points to
    :func:`advise`."""
    from umprof.nsight.nsys_import import agreement, attach_agreement, default_scenario_name, import_trace
    from umprof.nsight.trace_db import open_trace

    measured = against if against is None or isinstance(against, ResultSet) else load(against)
    tables = open_trace(trace, nsys)
    imported = import_trace(tables, scenario=scenario or default_scenario_name(Path(trace)),
                            merge_numbered=merge_numbered, devices=measured.devices if measured else [])
    if imported.frame.empty:
        raise UsageError(f"{trace}: no phase ranges found: annotate phases with umprof.nvtx.phase('h2d') and the like "
                         "and trace with `nsys profile -t cuda,nvtx`; for what an application's copies and kernels "
                         "do without them, run `umprof advise` on the trace")
    if measured is not None:
        agree = agreement(imported.frame, measured.frame)
        imported.meta["agreement"] = agree.to_dict("records")
        imported.frame = attach_agreement(imported.frame, agree)
    return imported


def job_traces(paths) -> list[str]:
    """A job's trace files: each path given, and the traces under each folder given
    (:func:`umprof.nsight.trace_db.folder_traces`), in name order."""
    from umprof.nsight.trace_db import folder_traces

    out: list[str] = []
    for p in _listed(paths, (str, Path)):
        out += [str(f) for f in folder_traces(p)] if Path(p).is_dir() else [str(p)]
    return out


def advise_job(paths, calibration=None, *, gpu: str | None = None, nsys: str | None = None,
               scheduler: str | None = None, workers: int | None = None, links=()) -> dict:
    """One answer for a job's traces (one per rank; files or folders of them): each trace read and advised as a
    Dask task (a local cluster, or the running scheduler at ``scheduler``; a local process pool without
    dask[distributed]), then the ranks grouped by host and behaviour, stragglers, shared links priced (against
    the host-links results in ``links``) and the job's saving: {"schema", "job": {...}, "ranks": [...]} (see
    :func:`umprof.model.job.job_answer`). A rank that fails is a problem in ``job["problems"]``, not an error."""
    from functools import partial

    from umprof.cluster.execute import map_tasks
    from umprof.model.job import job_answer
    from umprof.model.shared_links import concurrent_figures

    traces = job_traces(paths)
    figures = concurrent_figures((str(p), load(p)) for p in _listed(links, (str, Path)))
    task = partial(_advise_rank, calibration=calibration, gpu=gpu, nsys=nsys)
    ranks = map_tasks(task, traces, _failed_rank, scheduler=scheduler, workers=workers, what="traces advised")
    return job_answer(ranks, figures)


def _advise_rank(path, calibration=None, gpu: str | None = None, nsys: str | None = None) -> dict:
    """One rank's record for :func:`advise_job` (a Dask task: small, plain data, never the trace's tables); a trace
    that cannot be advised gives the record of its error."""
    try:
        return _rank_record(path, calibration, gpu, nsys)
    except Exception as e:  # a rank's failure is its record: the job's other ranks are advised all the same
        return _failed_rank(path, e)


def _rank_record(path, calibration, gpu: str | None, nsys: str | None) -> dict:
    import os
    import resource
    import socket
    import time

    from umprof.core.version import __version__
    from umprof.nsight.rank_info import collective_kernels, rank_info
    from umprof.nsight.trace_db import open_trace

    t0, cpu0 = time.perf_counter(), time.process_time()
    tables = open_trace(path, nsys)
    who = rank_info(tables)
    found = advise(path, calibration, gpu=gpu, nsys=nsys, tables=tables)
    return {"path": str(path), "host": who.host, "rank": who.rank, "world_size": who.world_size,
            "rank_from": who.how, "source": str(getattr(tables, "source", None) or "nsys"), "umprof": __version__,
            "collectives": collective_kernels(tables), "applications": [a.to_dict() for a in found], "error": None,
            "seconds": time.perf_counter() - t0, "cpu_s": time.process_time() - cpu0,
            "worker": f"{socket.gethostname()}:{os.getpid()}",
            "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}


def _failed_rank(path, error: Exception) -> dict:
    """The record of a rank whose trace could not be advised: its error in one line."""
    from umprof.core.errors import UmprofError

    text = str(error) if isinstance(error, UmprofError) else f"{type(error).__name__}: {error}"
    return {"path": str(path), "host": "", "rank": None, "applications": [], "error": text.splitlines()[0] if text else
            type(error).__name__}
