"""`umprof show`, `umprof plot` and `umprof report`: saved results as tables, figures and HTML."""

from __future__ import annotations

import click

from umprof import api
from umprof.cli import common
from umprof.core.errors import UsageError


@click.command()
@click.argument("result", type=click.Path(dir_okay=False))
@click.option("-s", "--scenario", default=None, help="Only this scenario.")
@click.option("--um", "um", is_flag=True, help="The unified-memory table (migrations, faults) instead of the timing summary.")
@common.FORMAT
def show(result, scenario, um, fmt):
    """Print the summary of a saved result file (works on any machine)."""
    from umprof.views.terminal import print_results, print_um

    rs = api.load(result)
    if scenario and scenario not in set(rs.frame["scenario"]):
        raise UsageError(f"option '--scenario': {result} has no scenario {scenario!r}; it has: "
                         f"{', '.join(sorted(set(rs.frame['scenario'])))}")
    if fmt == "json":
        frame = rs.frame if not scenario else rs.frame[rs.frame["scenario"] == scenario]
        common.echo_json({"file": result, "meta": rs.meta, "devices": rs.devices, "rows": common.records(frame)})
        return
    (print_um if um else print_results)(rs, common.out(), scenario)


@click.command()
@click.argument("result", type=click.Path(dir_okay=False))
@click.option("-o", "--outdir", type=click.Path(file_okay=False), default="umprof-plots", show_default=True,
              help="Folder for the PNG files.")
def plot(result, outdir):
    """Draw the figures a result file supports (PNG): time and UM faults per case; kernel GB/s
    against stride, offset, threads per block, blocks or unrolling beside the sector model's
    prediction; a heat map of 2D block shapes."""
    from umprof.views.plots import save_plots

    written = save_plots(api.load(result), outdir)
    if not written:
        raise UsageError(f"{result}: nothing to plot (no scenario in it has unified-memory counters or a swept "
                         "stride, offset, threads, blocks, unroll or 2D block shape)")
    for p in written:
        click.echo(str(p))


@click.command()
@click.argument("results", nargs=-1, type=click.Path(dir_okay=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False), default="umprof-report.html", show_default=True,
              help="The HTML file to write.")
@click.option("--workload", "workload_files", multiple=True, type=click.Path(dir_okay=False), metavar="FILE",
              help="Workloads to recommend for (default: scenarios/workloads/typical.toml when the results hold a calibration).")
@click.option("--trace", "traces", multiple=True, type=click.Path(dir_okay=False), metavar="TRACE",
              help="An application's trace, as `umprof advise` reads it (Nsight Systems' .nsys-rep or .sqlite, "
                   "torch.profiler's .json or .json.gz): its advice and timeline (repeatable).")
@click.option("--force", is_flag=True, help="Overwrite the HTML file if it exists.")
def report(results, output, workload_files, traces, force):
    """One self-contained HTML report (figures embedded) from result files and traces: ceilings, advice for
    traced applications, strategy breakdown, copies, crossovers, unified memory, access patterns and the
    recommendation."""
    if not output.lower().endswith((".html", ".htm")):
        raise UsageError(f"option '-o': expected a file ending in .html, got {output!r}")
    path = api.report(list(results), output, workloads_from=list(workload_files) or None, traces=list(traces),
                      force=force)
    common.out().print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB)")


COMMANDS = [show, plot, report]
