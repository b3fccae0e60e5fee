"""The ``umprof`` command line (click).

Exit codes: 0 done; 1 a case failed (the others were still measured and saved);
2 a usage error (bad option, scenario file, axis or value); 3 no GPU, driver or pycuda;
130 interrupted (what was measured is saved).
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from umprof import __version__
from umprof.errors import UmprofError, UsageError
from umprof.timing import StoppingRule
from umprof.units import format_rate, format_size


_RULE = StoppingRule()  # the defaults the run options' help texts show


class _Group(click.Group):
    """Turns umprof's own errors into one line and an exit code, never a traceback."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except UmprofError as e:
            click.echo(f"umprof: error: {e}", err=True)
            ctx.exit(e.exit_code)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="umprof")
def cli():
    """Profile how data moves between host and NVIDIA GPUs, and choose a host-memory strategy."""


def _out() -> Console:
    return Console(highlight=False, soft_wrap=False, width=200 if not sys.stdout.isatty() else None)


@cli.command("list")
@click.option("--cases", "cases_of", metavar="SCENARIO", help="List every case of one scenario.")
@click.option("-a", "--axis", "axes", multiple=True, metavar="NAME=VALUES", help="Override an axis (with --cases).")
def list_cmd(cases_of, axes):
    """Shipped scenarios: their op, axes and number of cases (* = in the default suite)."""
    from umprof.scenario import apply_overrides, load_scenario, resolve, shipped_scenarios

    console = _out()
    if cases_of:
        scenarios = resolve([cases_of])
        apply_overrides(scenarios, list(axes))
        for c in scenarios[0].cases():
            console.print(c.label)
        return
    table = Table(header_style="bold")
    for col in ("scenario", "op", "cases", "axes", "about"):
        table.add_column(col)
    for name, path in shipped_scenarios().items():
        s = load_scenario(path)
        axes_txt = "; ".join(f"{k}: {_values(s.op.axes.by_name[k], v)}" for k, v in s.axes.items())
        table.add_row(("* " if s.default else "  ") + name, s.op.name, str(len(s.cases())), axes_txt, s.about)
    console.print(table)
    console.print("* = run by a plain `umprof run`; override axes with -a NAME=VALUES")


def _values(spec, values) -> str:
    shown = [spec.format(v) for v in values]
    return ", ".join(shown) if len(shown) <= 6 else ", ".join(shown[:3] + ["…"] + shown[-2:]) + f" ({len(shown)})"


@cli.command()
@click.option("--device", "device_index", type=int, default=None, help="Only this GPU (default: all).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option("--measure/--no-measure", default=True, show_default=True,
              help="Measure the device-to-device copy ceiling (about a second per GPU).")
def devices(device_index, as_json, measure):
    """What each GPU and its link can do, with the ceilings umprof measures against."""
    from umprof import device as devmod
    from umprof.gpu import load_pycuda, open_session

    cuda = load_pycuda()
    indices = [device_index] if device_index is not None else list(range(cuda.Device.count()))
    infos = []
    for i in indices:
        s = open_session(i)
        try:
            info = devmod.query(s)
            if measure:
                info.d2d_bytes_per_s = devmod.measure_d2d(s)
            infos.append(info)
        finally:
            s.close()
    if as_json:
        click.echo(json.dumps([i.to_dict() for i in infos], indent=1))
        return
    console = _out()
    for info in infos:
        t = Table(title=f"GPU {info.index}: {info.name}", title_justify="left", show_header=False)
        t.add_column(style="bold")
        t.add_column()
        yes = lambda v: "-" if v is None else ("yes" if v else "no")  # noqa: E731
        rows = [
            ("compute capability", info.cc), ("SMs", str(info.sms)),
            ("memory", f"{format_size(info.memory_total_bytes)} total, {format_size(info.memory_free_bytes)} free"),
            ("L2", format_size(info.l2_bytes) if info.l2_bytes else "-"),
            ("driver", f"{info.driver // 1000}.{info.driver % 1000 // 10}"),
            ("managed memory", yes(info.managed_memory)), ("concurrent managed access", yes(info.concurrent_managed_access)),
            ("pageable memory access (HMM)", yes(info.pageable_memory_access)), ("maps host memory", yes(info.can_map_host_memory)),
            ("PCIe link", f"gen {info.pcie_gen} x{info.pcie_width} (now gen {info.pcie_gen_current} x{info.pcie_width_current})"
             if info.pcie_gen else "unknown"),
            ("PCIe ceiling", (format_rate(info.pcie_bytes_per_s) + " per direction") if info.pcie_bytes_per_s else "-"),
            ("DRAM ceiling", (format_rate(info.dram_bytes_per_s) + f" theoretical ({info.memory_clock_khz // 1000} MHz × "
                              f"{info.bus_width_bits} bit × 2)") if info.dram_bytes_per_s else "-"),
            ("device copy", (format_rate(info.d2d_bytes_per_s) + " measured, read+write") if info.d2d_bytes_per_s else "-"),
        ]
        for k, v in rows:
            t.add_row(k, v)
        console.print(t)
        for n in info.notes:
            console.print(f"[yellow]note:[/] {n}")


@cli.command()
@click.argument("scenarios", nargs=-1)
@click.option("-a", "--axis", "axes", multiple=True, metavar="NAME=VALUES",
              help="Override an axis: bytes=pow2:24..28, strategy=pinned,managed (repeatable).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Result file (.parquet, .csv or .json). Default: umprof-results/run-<time>.parquet")
@click.option("--force", is_flag=True, help="Overwrite the result file if it exists.")
@click.option("--device", "device_index", type=int, default=0, show_default=True, help="GPU index.")
@click.option("--min-samples", type=click.IntRange(min=1), default=None, help=f"Samples per case at least [{_RULE.min_samples}].")
@click.option("--min-time", type=click.FloatRange(min=0), default=None, help=f"Measured seconds per case at least [{_RULE.min_time}].")
@click.option("--max-noise", type=click.FloatRange(min=0), default=None,
              help=f"Stop once the relative stdev is under this [{_RULE.max_noise}].")
@click.option("--timeout", type=click.FloatRange(min=0), default=None, help=f"Give up on the noise target after this many seconds per case [{_RULE.timeout}].")
@click.option("--warmup", type=click.IntRange(min=0), default=None, help=f"Untimed samples before timing [{_RULE.warmup}].")
@click.option("--allow-oversubscription", is_flag=True,
              help="Allow managed allocations beyond the GPU's free memory. Can hang the GPU: only on a machine you own.")
@click.option("--dry-run", is_flag=True, help="List the cases and exit; touches no GPU.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar and no summary table.")
def run(scenarios, axes, output, force, device_index, min_samples, min_time, max_noise, timeout, warmup,
        allow_oversubscription, dry_run, quiet):
    """Run scenarios (names from `umprof list` or TOML files; none: the default suite)."""
    from umprof.scenario import apply_overrides, resolve

    chosen = resolve(list(scenarios))
    if not chosen:
        raise UsageError("no scenario selected: the default suite is empty; name a scenario (see `umprof list`)")
    apply_overrides(chosen, list(axes))
    timing = dict(min_samples=min_samples, min_time=min_time, max_noise=max_noise, timeout=timeout, warmup=warmup)
    console = _out()
    if dry_run:
        for s in chosen:
            cases = s.cases()
            console.print(f"[bold]{s.name}[/] ({s.op.name}, {len(cases)} cases)")
            for c in cases:
                console.print(f"  {c.label}")
        return
    output = output or str(Path("umprof-results") / f"run-{datetime.now():%Y%m%d-%H%M%S}.parquet")
    from umprof.report import print_results
    from umprof.runner import run_scenarios

    err = Console(stderr=True)
    try:
        rs, failed = run_scenarios(chosen, output=output, force=force, device=device_index, timing=timing,
                                   allow_oversubscription=allow_oversubscription, argv=["umprof", *sys.argv[1:]],
                                   console=err, progress=not quiet)
    except KeyboardInterrupt:
        err.print(f"interrupted: the cases measured so far are in {output}")
        sys.exit(130)
    if not quiet:
        print_results(rs, console)
    err.print(f"results: {output}")
    if failed:
        err.print(f"[red]{failed} case(s) failed[/] (see the notes column)")
        sys.exit(1)


@cli.command()
@click.argument("result", type=click.Path(dir_okay=False))
@click.option("-s", "--scenario", default=None, help="Only this scenario.")
def show(result, scenario):
    """Print the summary of a saved result file (works on any machine)."""
    from umprof.report import print_results
    from umprof.results import ResultSet

    rs = ResultSet.load(result)
    if scenario and scenario not in set(rs.frame["scenario"]):
        raise UsageError(f"option '--scenario': {result} has no scenario {scenario!r}; it has: "
                         f"{', '.join(sorted(set(rs.frame['scenario'])))}")
    print_results(rs, _out(), scenario)


def main():
    cli(prog_name="umprof")
