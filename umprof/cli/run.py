"""`umprof run`: measure scenarios (and the hidden `ncu-pass` that `run --ncu` profiles)."""

from __future__ import annotations

import sys

import click

from umprof import api
from umprof.cli import common
from umprof.measure.budget import format_seconds

DEFAULT_SUITE_BUDGET_S = 100.0  # the default suite must answer in under two minutes, setup included


@click.command()
@click.argument("scenarios", nargs=-1)
@common.run_options
@click.option("--dry-run", is_flag=True, help="List the cases and the time they should take, and exit; touches no GPU.")
@click.option("--budget", type=click.FloatRange(min=0), default=None, metavar="SECONDS",
              help=f"Seconds for the whole run, shared among its cases in proportion to their estimates; a case "
                   f"past its share stops sampling, flagged. Default: {DEFAULT_SUITE_BUDGET_S:.0f} for the default suite, none otherwise; 0: none.")
@click.option("--um-counters", type=click.Choice(["sample", "all", "off"]), default="sample", show_default=True,
              help="Unified-memory faults and migrations through CUPTI (needs cupti-python; off under Nsight Systems): "
                   "'sample' counts one extra sample per case so the timed ones run unperturbed; 'all' counts every sample.")
@click.option("--ncu", "with_ncu", is_flag=True,
              help="After timing, run each case once under Nsight Compute and add its measured sectors per request "
                   "and bytes used per sector fetched beside the sector model's prediction.")
@click.option("--ncu-path", metavar="PATH", default=None, help="The ncu executable (default: $UMPROF_NCU, then PATH, then the usual install folders).")
@click.option("--mpi", type=click.Choice(["auto", "on", "off"]), default="auto", show_default=True,
              help="Under mpirun/srun (auto: when a launcher started several processes): one rank per GPU, each "
                   "writing its own file as cases finish (all.parquet: all.rank0.parquet, ...), merged by rank 0 into "
                   "OUTPUT. Needs mpi4py (the mpi extra).")
def run(scenarios, axes, output, force, device_index, min_samples, min_time, max_noise, timeout, warmup,
        allow_oversubscription, quiet, dry_run, budget, um_counters, with_ncu, ncu_path, mpi):
    """Run scenarios (names or groups from `umprof list`, or TOML files; none: the default suite)."""
    chosen = api.select(scenarios, axes)
    console, err = common.out(), common.err()
    timing = common.timing(min_samples, min_time, max_noise, timeout, warmup)
    if budget is None and not scenarios:
        budget = DEFAULT_SUITE_BUDGET_S
    if dry_run:
        plan = api.estimate(chosen, timing, um_counters)
        at = 0
        for s in chosen:
            cases = s.cases()
            spent = sum(plan.estimates[at:at + len(cases)])
            console.print(f"[bold]{s.name}[/] ({s.op.name}, {len(cases)} cases, ~{format_seconds(spent)})")
            for c in cases:
                console.print(f"  {c.label}")
            at += len(cases)
        console.print(plan.describe(budget))
        return
    ncu = None
    if with_ncu:
        from umprof.nsight.ncu import find_ncu

        ncu_device = common.one_device(device_index, "--ncu")
        ncu = find_ncu(ncu_path)  # before anything is measured: a missing tool fails fast
    output = output or api.default_output("run")
    try:
        rs = api.run(chosen, output=output, force=force, device=device_index,
                     timing=timing, allow_oversubscription=allow_oversubscription, argv=common.argv(), console=err,
                     progress=not quiet, um_counters=um_counters, budget=budget or None, mpi=mpi)
    except KeyboardInterrupt:
        err.print(f"interrupted: the cases measured so far are in {output}")
        sys.exit(130)
    if ncu is not None:
        from umprof.nsight.ncu import add_counters

        rs = add_counters(rs, ncu, common.child_command("ncu-pass", chosen, axes, ncu_device), output, err)
    if rs.meta.get("rank"):  # an MPI run's other ranks: rank 0 prints the merged results
        return
    if not quiet:
        from umprof.views.terminal import print_results

        print_results(rs, console)
    err.print(f"results: {output}")
    if rs.failed_cases():
        err.print(f"[red]{rs.failed_cases()} case(s) failed[/] (see the notes column)")
        sys.exit(1)


@click.command("ncu-pass", hidden=True)
@click.argument("scenarios", nargs=-1)
@click.option("-a", "--axis", "axes", multiple=True)
@click.option("--device", "device_index", type=int, default=0)
@click.option("--launches", type=click.Path(dir_okay=False), required=True)
def ncu_pass(scenarios, axes, device_index, launches):
    """Internal: one untimed sample per case, launches logged (what `run --ncu` profiles)."""
    from umprof.measure.runner import profile_pass

    profile_pass(api.select(scenarios, axes), device=device_index, launches_path=launches, console=common.err())





@click.command("run-rest", hidden=True)
@click.argument("spec", type=click.Path(exists=True, dir_okay=False))
def run_rest(spec):
    """Internal: the rest of a run whose CUDA context was lost, in this fresh process."""
    try:
        api.run_rest(spec, console=common.err())
    except KeyboardInterrupt:
        sys.exit(130)
COMMANDS = [run, ncu_pass, run_rest]
