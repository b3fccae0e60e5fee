"""`umprof trace` and `umprof import-nsys`: runs under Nsight Systems, and traces read back."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click

from umprof import api
from umprof.cli import common
from umprof.core.errors import ToolUnavailable


@click.command()
@click.argument("scenarios", nargs=-1)
@common.run_options
@click.option("--nsys", "nsys_path", metavar="PATH", default=None, help="The nsys executable (default: $UMPROF_NSYS, then PATH).")
@click.option("--um-faults/--no-um-faults", default=True, show_default=True,
              help="Trace unified-memory CPU and GPU page faults (slows faulting cases down).")
def trace(scenarios, axes, output, force, device_index, min_samples, min_time, max_noise, timeout, warmup,
          allow_oversubscription, quiet, nsys_path, um_faults):
    """Run scenarios under Nsight Systems; read its trace and check it against umprof's timing.

    Writes the result file, the trace beside it (.nsys-rep) and its SQLite export (.sqlite), and
    the trace's phase breakdown (<name>-nsys.<suffix>, a result file like any other), then prints
    where Nsight's GPU time and umprof's differ by over 5%.
    """
    from umprof.core.results import format_for
    from umprof.nsight import nsys as nsysmod
    from umprof.nsight import nvtx
    from umprof.nsight.trace_db import export_sqlite
    from umprof.views.terminal import print_agreement, print_trace_extras

    chosen = api.select(scenarios, axes)
    device = common.one_device(device_index, "trace")
    nsys = nsysmod.find_nsys(nsys_path)
    if not nvtx.available():  # the run would carry no ranges: nothing to read its phases from
        raise ToolUnavailable("the nvtx package is not installed, so umprof's runs mark no NVTX ranges to trace: "
                              "pip install nvtx (it comes with umprof's gpu extra)")
    output = Path(output or api.default_output("trace"))
    format_for(output)
    stem = output.with_suffix("")
    rep, db, phases_out = Path(f"{stem}.nsys-rep"), Path(f"{stem}.sqlite"), Path(f"{stem}-nsys{output.suffix}")
    nsysmod.refuse_existing((output, rep, db, phases_out), force)
    child = common.child_command("run", chosen, axes, device) + ["-o", str(output), "--force"]
    for flag, v in common.timing(min_samples, min_time, max_noise, timeout, warmup).items():
        if v is not None:
            child += [f"--{flag.replace('_', '-')}", str(v)]
    child += ["--allow-oversubscription"] * allow_oversubscription + ["-q"] * quiet
    err = common.err()
    output.parent.mkdir(parents=True, exist_ok=True)
    db.unlink(missing_ok=True)  # an export of an earlier trace of the same name is not this one's
    cmd = nsysmod.profile_command(nsys, stem, child, um_faults=um_faults)
    err.print(f"tracing: {' '.join(cmd)}")
    try:
        proc = subprocess.run(cmd, env=dict(os.environ, UMPROF_UNDER_NSYS="1"))
    except KeyboardInterrupt:
        err.print(f"interrupted: the cases measured so far are in {output}")
        sys.exit(130)
    if not output.is_file():
        raise ToolUnavailable(f"the traced run wrote no results (nsys exit {proc.returncode}); see the lines above")
    if not rep.is_file():
        raise ToolUnavailable(f"nsys wrote no trace at {rep} (exit {proc.returncode}); see the lines above")
    imported = api.import_nsys(export_sqlite(rep, nsys), scenario=stem.name, against=output)
    imported.meta.update({"argv": common.argv(), "nsys": nsysmod.nsys_version(nsys), "results": str(output)})
    imported.save(phases_out)
    console = common.out()
    print_trace_extras(imported, console)
    print_agreement(imported.meta["agreement"], console)
    err.print(f"results: {output}\ntrace: {rep} (exported: {db})\nphases from the trace: {phases_out}")
    if proc.returncode not in (0, 1):
        raise ToolUnavailable(f"the traced run ended with exit code {proc.returncode}")
    if proc.returncode == 1:
        sys.exit(1)


@click.command("import-nsys")
@click.argument("trace_file", metavar="TRACE")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Write the phase breakdown as a result file (.parquet, .csv or .json).")
@click.option("--force", is_flag=True, help="Overwrite the output file if it exists.")
@click.option("--nsys", "nsys_path", metavar="PATH", default=None, help="The nsys executable (default: $UMPROF_NSYS, then PATH).")
@click.option("--scenario", default=None, help="Name for ranges outside any 'scenario' range [the trace's file name].")
@click.option("--against", type=click.Path(dir_okay=False), default=None,
              help="An umprof result file of the same run: check Nsight's GPU times against it (5% tolerance).")
@click.option("--keep-numbers", is_flag=True, help="Keep 'iteration 0', 'iteration 1', ... apart (default: one case, many samples).")
def import_nsys(trace_file, output, force, nsys_path, scenario, against, keep_numbers):
    """Turn an Nsight Systems trace into umprof's phase breakdown per NVTX range.

    TRACE is a .sqlite export, read directly (no nsys needed), or a .nsys-rep report, exported
    once with nsys (the .sqlite kept beside it). Phases are ranges named as umprof.nvtx names
    them (h2d, kernel, d2h, ...); works on any application annotated that way, not only on
    umprof's own runs. For an application's copies and kernels without such ranges, run
    `umprof advise TRACE`.
    """
    from umprof.core.results import format_for
    from umprof.nsight import nsys as nsysmod
    from umprof.views.terminal import print_agreement, print_results, print_trace_extras

    if output:
        format_for(Path(output))
        nsysmod.refuse_existing([output], force)
    imported = api.import_nsys(trace_file, scenario=scenario, against=against, merge_numbered=not keep_numbers,
                               nsys=nsys_path)
    imported.meta["argv"] = common.argv()
    console = common.out()
    print_results(imported, console)
    print_trace_extras(imported, console)
    if against:
        print_agreement(imported.meta["agreement"], console)
    if output:
        imported.save(output)
        common.err().print(f"results: {output}")


COMMANDS = [trace, import_nsys]
