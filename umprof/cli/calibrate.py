"""`umprof calibrate` and `umprof calibrations`: measure this machine's calibration, list the known ones."""

from __future__ import annotations

import sys

import click
from rich.table import Table

from umprof import api
from umprof.cli import common


@click.command()
@click.option("--quick", is_flag=True,
              help="About a minute: the host's memory, the link, allocation and managed faults; the kernels' figures "
                   "from the shipped calibration of this GPU's model.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Where to save it. Default: the user's cache, where recommend and advise find it.")
@click.option("--device", "device_index", type=int, default=0, show_default=True, help="The GPU to calibrate.")
@click.option("--force", is_flag=True, help="Measure again, even where a complete calibration is saved.")
def calibrate(quick, output, device_index, force):
    """Measure this machine's calibration (what recommend and advise predict from).

    The full one takes 5-6 minutes on an H100 or an H200; Ctrl-C keeps what was measured and a later
    `umprof calibrate` resumes it. Later answers on this machine use it before a shipped one.
    """
    err = common.err()
    try:
        cf = api.calibrate(output, quick=quick, device=device_index, force=force, console=err, argv=common.argv())
    except KeyboardInterrupt:
        err.print("[yellow]interrupted: the cases measured are saved; `umprof calibrate` again resumes[/]")
        sys.exit(130)
    common.out().print(f"saved {cf.path}: {cf.summary()}, {cf.cases} cases"
                       + (f", {cf.wall_s:.0f} s" if cf.wall_s else ""))


@click.command()
@common.FORMAT
def calibrations(fmt):
    """The calibrations umprof answers from: shipped (one per GPU model) and this machine's cached ones."""
    files = api.calibrations()
    rows = [{"origin": c.origin, "gpu": c.gpu, "memory_gib": round(c.memory_bytes / 2**30) if c.memory_bytes else None,
             "profile": c.profile, "measured": c.date, "host": c.host, "driver": c.driver, "cases": c.cases or None,
             "wall_s": c.wall_s, "complete": c.complete, "path": str(c.path)} for c in files]
    if fmt == "json":
        common.echo_json(rows)
        return
    table = Table(header_style="bold")
    for col in ("origin", "GPU", "profile", "measured", "host", "driver", "cases", "took", "file"):
        table.add_column(col)
    for r in rows:
        took = f"{r['wall_s']:.0f} s" if r["wall_s"] else "-"
        table.add_row(r["origin"], r["gpu"], r["profile"] + ("" if r["complete"] else " (unfinished)"), r["measured"],
                      r["host"], r["driver"] or "-", str(r["cases"] or "-"), took, r["path"])
    console = common.out()
    console.print(table)
    from umprof.core.calibrations import cache_dir

    console.print(f"cache: {cache_dir()} (`umprof calibrate` adds to it; UMPROF_CACHE_DIR moves it)")


COMMANDS = [calibrate, calibrations]
