"""The ``umprof`` command line (click).

Exit codes: 0 done; 1 a case failed (the others were still measured and saved);
2 a usage error (bad option, scenario file, axis or value); 3 no GPU, driver or pycuda;
130 interrupted (what was measured is saved).
"""

from __future__ import annotations

import json
import os
import sys
from datetime import datetime
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from umprof import __version__
from umprof.errors import ToolUnavailable, UmprofError, UsageError
from umprof.timing import StoppingRule
from umprof.units import format_rate, format_size
from umprof.workload import PATTERNS


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
    """Shipped scenarios: their op, axes and number of cases (* = in the default suite), and their groups."""
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
    groups = {}
    for name, path in shipped_scenarios().items():
        s = load_scenario(path)
        if s.group:
            groups.setdefault(s.group, []).append(name)
        axes_txt = "; ".join(f"{k}: {_values(s.op.axes.by_name[k], v)}" for k, v in s.axes.items())
        table.add_row(("* " if s.default else "  ") + name, s.op.name, str(len(s.cases())), axes_txt, s.about)
    console.print(table)
    console.print("* = run by a plain `umprof run`; override axes with -a NAME=VALUES")
    for group, names in groups.items():
        console.print(f"group {group}: `umprof run {group}` runs {len(names)} scenarios ({', '.join(names)})")


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


def _run_options(fn):
    """The options `run` and `trace` share (axes, output, device, stopping rule, guards)."""
    options = [
        click.option("-a", "--axis", "axes", multiple=True, metavar="NAME=VALUES",
                     help="Override an axis: bytes=pow2:24..28, strategy=pinned,managed (repeatable)."),
        click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
                     help="Result file (.parquet, .csv or .json). Default: umprof-results/<command>-<time>.parquet"),
        click.option("--force", is_flag=True, help="Overwrite the result file if it exists."),
        click.option("--device", "device_index", type=int, default=0, show_default=True, help="GPU index."),
        click.option("--min-samples", type=click.IntRange(min=1), default=None,
                     help=f"Samples per case at least [{_RULE.min_samples}]."),
        click.option("--min-time", type=click.FloatRange(min=0), default=None,
                     help=f"Measured seconds per case at least [{_RULE.min_time}]."),
        click.option("--max-noise", type=click.FloatRange(min=0), default=None,
                     help=f"Stop once the relative stdev is under this [{_RULE.max_noise}]."),
        click.option("--timeout", type=click.FloatRange(min=0), default=None,
                     help=f"Give up on the noise target after this many seconds per case [{_RULE.timeout}]."),
        click.option("--warmup", type=click.IntRange(min=0), default=None, help=f"Untimed samples before timing [{_RULE.warmup}]."),
        click.option("--allow-oversubscription", is_flag=True,
                     help="Allow managed allocations beyond the GPU's free memory. Can hang the GPU: only on a machine you own."),
        click.option("-q", "--quiet", is_flag=True, help="No progress bar and no summary table."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _chosen(scenarios, axes):
    """Resolve and override scenarios; every mistake is a UsageError before the GPU is touched."""
    from umprof.scenario import apply_overrides, resolve

    chosen = resolve(list(scenarios))
    if not chosen:
        raise UsageError("no scenario selected: the default suite is empty; name a scenario (see `umprof list`)")
    apply_overrides(chosen, list(axes))
    return chosen


def _child_command(command: str, chosen, axes, device_index) -> list[str]:
    """This umprof, run again as a profiler's child on the same scenarios, axes and device."""
    child = [sys.executable, "-m", "umprof", command, *[str(s.path) for s in chosen], "--device", str(device_index)]
    for a in axes:
        child += ["-a", a]
    return child


def _default_output(command: str) -> str:
    return str(Path("umprof-results") / f"{command}-{datetime.now():%Y%m%d-%H%M%S}.parquet")


@cli.command()
@click.argument("scenarios", nargs=-1)
@_run_options
@click.option("--dry-run", is_flag=True, help="List the cases and exit; touches no GPU.")
@click.option("--um-counters", type=click.Choice(["sample", "all", "off"]), default="sample", show_default=True,
              help="Unified-memory faults and migrations through CUPTI (needs cupti-python; off under Nsight Systems): "
                   "'sample' counts one extra sample per case so the timed ones run unperturbed; 'all' counts every sample.")
@click.option("--ncu", "with_ncu", is_flag=True,
              help="After timing, run each case once under Nsight Compute and add its measured sectors per request "
                   "and bytes used per sector fetched beside the sector model's prediction.")
@click.option("--ncu-path", metavar="PATH", default=None, help="The ncu executable (default: $UMPROF_NCU, then PATH, then the usual install folders).")
def run(scenarios, axes, output, force, device_index, min_samples, min_time, max_noise, timeout, warmup,
        allow_oversubscription, quiet, dry_run, um_counters, with_ncu, ncu_path):
    """Run scenarios (names or groups from `umprof list`, or TOML files; none: the default suite)."""
    chosen = _chosen(scenarios, axes)
    ncu = None
    if with_ncu and not dry_run:
        from umprof.ncu import find_ncu

        ncu = find_ncu(ncu_path)  # before anything is measured: a missing tool fails fast
    timing = dict(min_samples=min_samples, min_time=min_time, max_noise=max_noise, timeout=timeout, warmup=warmup)
    console = _out()
    if dry_run:
        for s in chosen:
            cases = s.cases()
            console.print(f"[bold]{s.name}[/] ({s.op.name}, {len(cases)} cases)")
            for c in cases:
                console.print(f"  {c.label}")
        return
    output = output or _default_output("run")
    from umprof.report import print_results
    from umprof.runner import run_scenarios

    err = Console(stderr=True)
    try:
        rs, failed = run_scenarios(chosen, output=output, force=force, device=device_index, timing=timing,
                                   allow_oversubscription=allow_oversubscription, argv=["umprof", *sys.argv[1:]],
                                   console=err, progress=not quiet, um_counters=um_counters)
    except KeyboardInterrupt:
        err.print(f"interrupted: the cases measured so far are in {output}")
        sys.exit(130)
    if ncu is not None:
        rs = _add_ncu(rs, ncu, chosen, axes, device_index, output, err)
    if not quiet:
        print_results(rs, console)
    err.print(f"results: {output}")
    if failed:
        err.print(f"[red]{failed} case(s) failed[/] (see the notes column)")
        sys.exit(1)


def _add_ncu(rs, ncu, chosen, axes, device_index, output, err):
    """Run the cases once more under Nsight Compute and merge its counters into the saved results."""
    import subprocess

    from umprof import ncu as ncumod

    out = Path(output)
    log, launches = out.with_name(out.stem + "-ncu.csv"), out.with_name(out.stem + "-ncu-launches.json")
    child = _child_command("ncu-pass", chosen, axes, device_index) + ["--launches", str(launches)]
    cmd = ncumod.profile_command(ncu, log, child)
    err.print(f"Nsight Compute pass: {' '.join(cmd)}")
    proc = subprocess.run(cmd)
    if proc.returncode != 0 or not log.is_file() or not launches.is_file():
        raise UmprofError(f"the Nsight Compute pass failed (exit {proc.returncode}); see {log}. "
                          f"The timed results are saved in {output}")
    try:
        per_case = ncumod.attribute(ncumod.parse_csv(log.read_text(encoding="utf-8", errors="replace")),
                                    ncumod.read_launches(launches))
    except ValueError as e:
        raise UmprofError(f"{log}: {e}; the timed results are saved in {output}") from None
    ncumod.merge(rs.frame, per_case)
    rs.save(output)
    err.print(f"Nsight Compute counters for {len(per_case)} cases added (raw: {log})")
    return rs


@cli.command("ncu-pass", hidden=True)
@click.argument("scenarios", nargs=-1)
@click.option("-a", "--axis", "axes", multiple=True)
@click.option("--device", "device_index", type=int, default=0)
@click.option("--launches", type=click.Path(dir_okay=False), required=True)
def ncu_pass(scenarios, axes, device_index, launches):
    """Internal: one untimed sample per case, launches logged (what `run --ncu` profiles)."""
    from umprof.runner import profile_pass

    profile_pass(_chosen(scenarios, axes), device=device_index, launches_path=launches, console=Console(stderr=True))


def _workloads(files, size, reuse, touched, pattern, stride, iterations, pingpong, fits):
    """Workloads from --workload files or from the options (not both)."""
    from umprof.workload import from_mapping, load_workloads

    opts = {k: v for k, v in dict(bytes=size, reuse=reuse, touched=touched, pattern=pattern, stride=stride,
                                  iterations=iterations, pingpong=pingpong, fits=fits).items() if v is not None}
    if files and opts:
        raise UsageError(f"give either --workload FILE or the workload's options, not both "
                         f"(got --workload and --{', --'.join(opts)})")
    if files:
        return [w for f in files for w in load_workloads(f)]
    if "bytes" not in opts:
        raise UsageError("no workload: give --bytes SIZE (and --reuse, --touched, ... as needed) or --workload FILE "
                         "(see scenarios/workloads/example.toml)")
    return [from_mapping(opts, "options")]


def _calibration(sources, save, force, device_index, console):
    """The Calibration: from saved results, or measured now (the calibration group) and saved."""
    from umprof.predict import Calibration
    from umprof.results import ResultSet

    if sources:
        sets = [ResultSet.load(p) for p in sources]
        import pandas as pd

        frame = pd.concat([r.frame for r in sets], ignore_index=True)
        devices = next((r.devices for r in sets if r.devices), [])
        return Calibration(frame, devices[0] if devices else {}, ", ".join(sources))
    from umprof.runner import run_scenarios
    from umprof.scenario import resolve

    from umprof.gpu import load_pycuda

    load_pycuda()  # no GPU: say so before promising a calibration
    save = save or _default_output("calibration")
    console.print(f"calibrating on GPU {device_index} (`umprof run calibration`, a few minutes); saving to {save}")
    rs, _ = run_scenarios(resolve(["calibration"]), output=save, force=force, device=device_index,
                          argv=["umprof", *sys.argv[1:]], console=console)
    return Calibration.from_results(rs, save)


@cli.command()
@click.option("--from", "sources", multiple=True, type=click.Path(dir_okay=False), metavar="RESULTS",
              help="Predict from saved results with lifecycle cases (`umprof run calibration -o F`; repeatable). "
                   "Default: calibrate on this GPU now.")
@click.option("--workload", "workload_files", multiple=True, type=click.Path(dir_okay=False), metavar="FILE",
              help="A workload TOML file ([workload] or [[workload]] tables; see scenarios/workloads/example.toml).")
@click.option("--bytes", "size", metavar="SIZE", default=None, help="The buffer's size: 64MiB, 1GiB (a multiple of 64 KiB).")
@click.option("--reuse", type=int, default=None, help="Kernel passes per transfer [1].")
@click.option("--touched", type=float, default=None, help="Fraction of the 64 KiB pages each pass touches, in (0, 1] [1.0].")
@click.option("--pattern", type=click.Choice(PATTERNS), default=None,
              help="How a pass walks the touched pages [streaming].")
@click.option("--stride", type=int, default=None, help="Strided pattern: words between touched words, a power of two [8].")
@click.option("--iterations", type=int, default=None, help="Rounds of reuse passes [1].")
@click.option("--pingpong/--no-pingpong", default=None, help="The host reads and updates the buffer between rounds [no].")
@click.option("--fits/--no-fits", default=None, help="Whether the buffer fits in device memory [from the device's memory].")
@click.option("--verify", is_flag=True, help="Measure the workload under the top strategies and print predicted vs measured.")
@click.option("--verify-top", default="3", show_default=True, metavar="N|all", help="How many of the top strategies --verify measures.")
@click.option("--measured", type=click.Path(dir_okay=False), default=None, metavar="RESULTS",
              help="Verify against an earlier --verify run's results instead of measuring again.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Where --verify saves its measurements. Default: umprof-results/verify-<time>.parquet")
@click.option("--save-calibration", type=click.Path(dir_okay=False), default=None,
              help="Where a calibration measured now is saved. Default: umprof-results/calibration-<time>.parquet")
@click.option("--force", is_flag=True, help="Overwrite result files that exist.")
@click.option("--device", "device_index", type=int, default=0, show_default=True, help="GPU index.")
def recommend(sources, workload_files, size, reuse, touched, pattern, stride, iterations, pingpong, fits, verify,
              verify_top, measured, output, save_calibration, force, device_index):
    """Rank the host-memory strategies for a workload, with predicted time per phase and the reason.

    Predictions come from lifecycle measurements: saved ones (--from, e.g. measured on
    another machine) or a calibration run on this GPU now. --verify then measures the
    workload itself under the top strategies.
    """
    from umprof import recommend as rmod
    from umprof.report import print_recommendation, verification_summary
    from umprof.results import ResultSet

    workloads = _workloads(workload_files, size, reuse, touched, pattern, stride, iterations, pingpong, fits)
    if verify_top != "all" and (not verify_top.isdigit() or int(verify_top) < 1):
        raise UsageError(f"option '--verify-top': expected a positive integer or 'all', got {verify_top!r}")
    if measured and not verify:
        verify = True
    console, err = _out(), Console(stderr=True)
    cal = _calibration(sources, save_calibration, force, device_index, err)
    recs = rmod.recommend_all(cal, workloads)
    if cal.device:
        err.print(f"predicted from {cal.source or 'a calibration'} ({cal.device.get('name', 'unknown GPU')})")
    verdicts, source = [None] * len(recs), ""
    if verify:
        top = None if verify_top == "all" else int(verify_top)
        picks = [[p.strategy for p in r.ranked[:top]] for r in recs]
        scenarios = [rmod.verification_scenario(r.workload, pk, index=i) for i, (r, pk) in enumerate(zip(recs, picks))]
        if measured:
            frame, source = ResultSet.load(measured).frame, measured
        else:
            from umprof.runner import run_scenarios

            output = output or _default_output("verify")
            rs, _ = run_scenarios(scenarios, output=output, force=force, device=device_index,
                                  argv=["umprof", *sys.argv[1:]], console=err)
            frame, source = rs.frame, output
            err.print(f"verification results: {output}")
        verdicts = rmod.verify_all(recs, frame)
    for r, v in zip(recs, verdicts):
        print_recommendation(r, console, v, source)
    if sum(v is not None for v in verdicts) > 1:
        console.print(verification_summary(list(zip(recs, verdicts))))


@cli.command()
@click.argument("results", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--pair", metavar="A,B", default=None, help="Only this pair of strategies: pinned,zero-copy.")
@click.option("--axis", type=click.Choice(["bytes", "reuse", "touched", "iterations"]), default=None,
              help="Only crossings along this axis.")
@click.option("-o", "--outdir", type=click.Path(file_okay=False), default=None, help="Also draw each sweep (PNG) here.")
def crossovers(results, pair, axis, outdir):
    """Where the faster of two strategies changes along size, reuse or touched fraction (measured)."""
    import pandas as pd

    from umprof import crossover
    from umprof.plots import _pyplot
    from umprof.report import crossover_table
    from umprof.results import ResultSet

    if pair is not None:
        from umprof.strategies import STRATEGIES

        parts = [p.strip() for p in pair.split(",")]
        if len(parts) != 2 or any(p not in STRATEGIES for p in parts):
            raise UsageError(f"option '--pair': expected two strategies as A,B (of {', '.join(STRATEGIES)}), got {pair!r}")
        pair = tuple(parts)
    frame = pd.concat([ResultSet.load(r).frame for r in results], ignore_index=True)
    if next(crossover.sweeps(frame), None) is None:
        raise UsageError(f"{', '.join(results)}: no lifecycle sweep of bytes, reuse, touched or iterations with two "
                         "strategies; run `umprof run crossovers` first")
    console = _out()
    console.print(crossover_table(crossover.find(frame, pair, axis)))
    if outdir:
        plt = _pyplot()
        Path(outdir).mkdir(parents=True, exist_ok=True)
        for stem, fig in crossover.figures(frame, pair):
            path = Path(outdir) / f"{stem}.png"
            fig.savefig(path, dpi=110)
            plt.close(fig)
            console.print(f"wrote {path}")


@cli.command()
@click.argument("a", type=click.Path(dir_okay=False))
@click.argument("b", type=click.Path(dir_okay=False))
@click.option("--phase", "phases", default="total", show_default=True, metavar="total|all|PHASE",
              help="Compare the whole case (total), every phase, or one phase (kernel, h2d, ...).")
@click.option("--floor", type=click.FloatRange(min=0), default=None,
              help="No change under this relative difference is called FAST or SLOW, however quiet the runs [0.03].")
@click.option("--across-devices", is_flag=True, help="Match cases measured on different GPUs.")
@click.option("--all", "show_all", is_flag=True, help="List SAME cases too (default: only FAST and SLOW).")
@click.option("--fail-on-slow", is_flag=True, help="Exit 1 when any case is SLOW (for CI).")
def compare(a, b, phases, floor, across_devices, show_all, fail_on_slow):
    """Match the cases of two result files and call each SAME, FAST or SLOW (B against A) against their noise.

    Exits 2 when no case matches, 1 with --fail-on-slow when any case got slower.
    """
    from umprof import compare as cmpmod
    from umprof.report import print_comparison
    from umprof.results import ResultSet

    floor = cmpmod.FLOOR if floor is None else floor
    result = cmpmod.compare(ResultSet.load(a), ResultSet.load(b), phases, across_devices, floor, name_a=a, name_b=b)
    print_comparison(result, _out(), a, b, show_all)
    if fail_on_slow and result.counts()["SLOW"]:
        sys.exit(1)


@cli.command()
@click.argument("results", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False), default="umprof-report.html", show_default=True,
              help="The HTML file to write.")
@click.option("--workload", "workload_files", multiple=True, type=click.Path(dir_okay=False), metavar="FILE",
              help="Workloads to recommend for (default: scenarios/workloads/verify.toml when the results hold a calibration).")
@click.option("--force", is_flag=True, help="Overwrite the HTML file if it exists.")
def report(results, output, workload_files, force):
    """One self-contained HTML report (figures embedded) from result files: ceilings, strategy breakdown,
    copies, crossovers, unified memory, access patterns and the recommendation."""
    from umprof import html_report
    from umprof.resources import scenarios_dir
    from umprof.results import ResultSet
    from umprof.workload import load_workloads

    out = Path(output)
    if out.suffix.lower() not in (".html", ".htm"):
        raise UsageError(f"option '-o': expected a file ending in .html, got {output!r}")
    if out.exists() and not force:
        raise UsageError(f"{out}: already exists; pass --force to overwrite it or -o to write elsewhere")
    sets = [ResultSet.load(r) for r in results]
    files = list(workload_files) or [scenarios_dir() / "workloads" / "verify.toml"]
    workloads = [w for f in files for w in load_workloads(f)]
    text = html_report.build(sets, list(results), workloads)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    _out().print(f"wrote {out} ({len(text) / 1e6:.1f} MB)")


@cli.command()
@click.argument("scenarios", nargs=-1)
@_run_options
@click.option("--nsys", "nsys_path", metavar="PATH", default=None, help="The nsys executable (default: $UMPROF_NSYS, then PATH).")
@click.option("--um-faults/--no-um-faults", default=True, show_default=True,
              help="Trace unified-memory CPU and GPU page faults (slows faulting cases down).")
def trace(scenarios, axes, output, force, device_index, min_samples, min_time, max_noise, timeout, warmup,
          allow_oversubscription, quiet, nsys_path, um_faults):
    """Run scenarios under Nsight Systems; read its reports and check them against umprof's timing.

    Writes the result file, the trace beside it (.nsys-rep), the exported reports (a -nsys
    folder of CSVs) and the trace's phase breakdown (<name>-nsys.<suffix>, a result file
    like any other), then prints where Nsight's GPU time and umprof's differ by over 5%.
    """
    import subprocess

    from umprof import nsys as nsysmod
    from umprof.nsys_import import agreement, attach_agreement, import_trace
    from umprof.report import print_agreement, print_trace_extras
    from umprof.results import ResultSet, format_for

    chosen = _chosen(scenarios, axes)
    nsys = nsysmod.find_nsys(nsys_path)
    output = Path(output or _default_output("trace"))
    format_for(output)
    stem = output.with_suffix("")
    rep = Path(f"{stem}.nsys-rep")
    phases_out = Path(f"{stem}-nsys{output.suffix}")
    for p in (output, rep, phases_out):
        if p.exists() and not force:
            raise UsageError(f"{p}: already exists; pass --force to overwrite it or -o to write elsewhere")
    child = _child_command("run", chosen, axes, device_index) + ["-o", str(output), "--force"]
    for flag, v in (("--min-samples", min_samples), ("--min-time", min_time), ("--max-noise", max_noise),
                    ("--timeout", timeout), ("--warmup", warmup)):
        if v is not None:
            child += [flag, str(v)]
    if allow_oversubscription:
        child.append("--allow-oversubscription")
    if quiet:
        child.append("-q")
    err = Console(stderr=True)
    output.parent.mkdir(parents=True, exist_ok=True)
    cmd = nsysmod.profile_command(nsys, stem, child, um_faults=um_faults)
    err.print(f"tracing: {' '.join(cmd)}")
    env = dict(os.environ, UMPROF_UNDER_NSYS="1")
    try:
        proc = subprocess.run(cmd, env=env)
    except KeyboardInterrupt:
        err.print(f"interrupted: the cases measured so far are in {output}")
        sys.exit(130)
    if not output.is_file():
        raise ToolUnavailable(f"the traced run wrote no results (nsys exit {proc.returncode}); see the lines above")
    if not rep.is_file():
        raise ToolUnavailable(f"nsys wrote no trace at {rep} (exit {proc.returncode}); see the lines above")
    reports = nsysmod.export_reports(nsys, rep, Path(f"{stem}-nsys") / stem.name)
    measured = ResultSet.load(output)
    imported = import_trace(reports, scenario=stem.name, devices=measured.devices,
                            meta={"argv": ["umprof", *sys.argv[1:]], "nsys": nsysmod.nsys_version(nsys), "results": str(output)})
    agree = agreement(imported.frame, measured.frame)
    imported.frame = attach_agreement(imported.frame, agree)
    imported.save(phases_out)
    console = _out()
    print_trace_extras(imported, reports, console)
    print_agreement(agree, console)
    err.print(f"results: {output}\ntrace: {rep}\nreports: {stem}-nsys/\nphases from the trace: {phases_out}")
    if proc.returncode not in (0, 1):
        raise ToolUnavailable(f"the traced run ended with exit code {proc.returncode}")
    if proc.returncode == 1:
        sys.exit(1)


@cli.command("import-nsys")
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

    TRACE is a .nsys-rep or .sqlite file (exported with nsys stats), or the PREFIX of
    reports already exported with `nsys stats --format csv --output PREFIX`. Phases are
    ranges named as umprof.nvtx names them (h2d, kernel, d2h, ...); works on any
    application annotated that way, not only on umprof's own runs.
    """
    import tempfile

    from umprof import nsys as nsysmod
    from umprof.nsys_import import agreement, attach_agreement, default_scenario_name, import_trace
    from umprof.report import print_agreement, print_results, print_trace_extras
    from umprof.results import ResultSet, format_for

    if output:
        format_for(Path(output))
        if Path(output).exists() and not force:
            raise UsageError(f"{output}: already exists; pass --force to overwrite it or -o to write elsewhere")
    measured = ResultSet.load(against) if against else None
    path = Path(trace_file)
    if path.suffix in (".nsys-rep", ".qdrep", ".sqlite"):
        if not path.is_file():
            raise UsageError(f"{path}: no such trace file")
        nsys = nsysmod.find_nsys(nsys_path)
        with tempfile.TemporaryDirectory(prefix="umprof-nsys-") as tmp:
            reports = nsysmod.export_reports(nsys, path, Path(tmp) / "r")
        version = nsysmod.nsys_version(nsys)
    elif list(path.parent.glob(path.name + "_*.csv")):
        reports = nsysmod.load_reports(path)
        version = None
    else:
        raise UsageError(f"{trace_file}: expected a .nsys-rep or .sqlite trace, or the prefix of CSV reports "
                         f"exported by `nsys stats --format csv --output PREFIX` (no {path.name}_*.csv found)")
    imported = import_trace(reports, scenario=scenario or default_scenario_name(path), merge_numbered=not keep_numbers,
                            devices=measured.devices if measured else [],
                            meta={"argv": ["umprof", *sys.argv[1:]], "nsys": version})
    if imported.frame.empty:
        raise UsageError(f"{trace_file}: no phase ranges found: annotate phases with umprof.nvtx.phase('h2d') and the like "
                         "and trace with `nsys profile -t cuda,nvtx`")
    console = _out()
    agree = None
    if measured is not None:
        agree = agreement(imported.frame, measured.frame)
        imported.frame = attach_agreement(imported.frame, agree)
    print_results(imported, console)
    print_trace_extras(imported, reports, console)
    if agree is not None:
        print_agreement(agree, console)
    if output:
        imported.save(output)
        Console(stderr=True).print(f"results: {output}")


@cli.command()
@click.argument("result", type=click.Path(dir_okay=False))
@click.option("-s", "--scenario", default=None, help="Only this scenario.")
@click.option("--um", "um", is_flag=True, help="The unified-memory table (migrations, faults) instead of the timing summary.")
def show(result, scenario, um):
    """Print the summary of a saved result file (works on any machine)."""
    from umprof.report import print_results, print_um
    from umprof.results import ResultSet

    rs = ResultSet.load(result)
    if scenario and scenario not in set(rs.frame["scenario"]):
        raise UsageError(f"option '--scenario': {result} has no scenario {scenario!r}; it has: "
                         f"{', '.join(sorted(set(rs.frame['scenario'])))}")
    if um:
        print_um(rs, _out(), scenario)
    else:
        print_results(rs, _out(), scenario)


@cli.command()
@click.argument("result", type=click.Path(dir_okay=False))
@click.option("-o", "--outdir", type=click.Path(file_okay=False), default="umprof-plots", show_default=True,
              help="Folder for the PNG files.")
def plot(result, outdir):
    """Draw the figures a result file supports (PNG): time and UM faults per case; kernel GB/s
    against stride, offset, threads per block, blocks or unrolling beside the sector model's
    prediction; a heat map of 2D block shapes."""
    from umprof.plots import save_plots
    from umprof.results import ResultSet

    written = save_plots(ResultSet.load(result), outdir)
    if not written:
        raise UsageError(f"{result}: nothing to plot (no scenario in it has unified-memory counters or a swept "
                         "stride, offset, threads, blocks, unroll or 2D block shape)")
    for p in written:
        click.echo(str(p))


def main():
    cli(prog_name="umprof")
