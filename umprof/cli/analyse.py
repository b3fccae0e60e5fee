"""`umprof crossovers` and `umprof compare`: what saved results say about strategies and runs."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from umprof import api
from umprof.cli import common
from umprof.core.errors import UsageError


@click.command()
@click.argument("results", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--pair", metavar="A,B", default=None, help="Only this pair of strategies: pinned,zero-copy.")
@click.option("--axis", type=click.Choice(["bytes", "reuse", "touched", "iterations"]), default=None,
              help="Only crossings along this axis.")
@click.option("-o", "--outdir", type=click.Path(file_okay=False), default=None, help="Also draw each sweep (PNG) here.")
@common.FORMAT
def crossovers(results, pair, axis, outdir, fmt):
    """Where the faster of two strategies changes along size, reuse or touched fraction (measured)."""
    import pandas as pd

    from umprof.measure.strategies import STRATEGIES
    from umprof.model import crossover
    from umprof.views.terminal import crossover_table

    if pair is not None:
        parts = [p.strip() for p in pair.split(",")]
        if len(parts) != 2 or any(p not in STRATEGIES for p in parts):
            raise UsageError(f"option '--pair': expected two strategies as A,B (of {', '.join(STRATEGIES)}), got {pair!r}")
        pair = tuple(parts)
    frame = pd.concat([api.load(r).frame for r in results], ignore_index=True)
    if next(crossover.sweeps(frame), None) is None:
        raise UsageError(f"{', '.join(results)}: no lifecycle sweep of bytes, reuse, touched or iterations with two "
                         "strategies; run `umprof run crossovers` first")
    console = common.out()
    found = crossover.find(frame, pair, axis)
    if fmt == "json":
        common.echo_json({"files": list(results), "crossings": common.records(found)})
    else:
        console.print(crossover_table(found))
    if outdir:
        from umprof.views.plots import crossover_figures, save_figures

        for path in save_figures(crossover_figures(frame, pair), Path(outdir)):
            console.print(f"wrote {path}")


@click.command()
@click.argument("a", type=click.Path(dir_okay=False))
@click.argument("b", type=click.Path(dir_okay=False))
@click.option("--phase", "phases", default="total", show_default=True, metavar="total|all|PHASE",
              help="Compare the whole case (total), every phase, or one phase (kernel, h2d, ...).")
@click.option("--floor", type=click.FloatRange(min=0), default=None,
              help="No change under this relative difference is called FAST or SLOW, however quiet the runs [0.03].")
@click.option("--across-devices", is_flag=True, help="Match cases measured on different GPUs.")
@click.option("--all", "show_all", is_flag=True, help="List SAME cases too (default: only FAST and SLOW).")
@click.option("--fail-on-slow", is_flag=True, help="Exit 1 when any case is SLOW (for CI).")
@common.FORMAT
def compare(a, b, phases, floor, across_devices, show_all, fail_on_slow, fmt):
    """Match the cases of two result files and call each SAME, FAST or SLOW (B against A) against their noise.

    Exits 2 when no case matches, 1 with --fail-on-slow when any case got slower.
    """
    from umprof.views.terminal import print_comparison

    result = api.compare(a, b, phases=phases, across_devices=across_devices, floor=floor)
    if fmt == "json":
        rows = result.matched if show_all else result.matched[result.matched["verdict"] != "SAME"]
        common.echo_json({"a": a, "b": b, "device_a": result.device_a, "device_b": result.device_b,
                          "counts": result.counts(), "cases": common.records(rows),
                          "only_in_a": [list(x) for x in result.only_a], "only_in_b": [list(x) for x in result.only_b]})
    else:
        print_comparison(result, common.out(), a, b, show_all)
    if fail_on_slow and result.counts()["SLOW"]:
        sys.exit(1)


COMMANDS = [crossovers, compare]
