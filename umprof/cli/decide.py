"""`umprof recommend`: rank the host-memory strategies for a workload, and verify the ranking."""

from __future__ import annotations

import click

from umprof import api
from umprof.cli import common
from umprof.core.errors import UsageError
from umprof.model.workload import PATTERNS


def _workloads(files, options: dict):
    """Workloads from --workload files or from the options (not both)."""
    given = {k: v for k, v in options.items() if v is not None}
    if files and given:
        raise UsageError(f"give either --workload FILE or the workload's options, not both "
                         f"(got --workload and --{', --'.join(given)})")
    if files:
        return api.workloads(list(files))
    if "bytes" not in given:
        raise UsageError("no workload: give --bytes SIZE (and --reuse, --touched, ... as needed) or --workload FILE "
                         "(see scenarios/workloads/example.toml)")
    return api.workloads([given])


@click.command()
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
    from umprof.views.terminal import print_recommendation, verification_summary

    workloads = _workloads(workload_files, dict(bytes=size, reuse=reuse, touched=touched, pattern=pattern, stride=stride,
                                                iterations=iterations, pingpong=pingpong, fits=fits))
    if verify_top != "all" and (not verify_top.isdigit() or int(verify_top) < 1):
        raise UsageError(f"option '--verify-top': expected a positive integer or 'all', got {verify_top!r}")
    console, err = common.out(), common.err()
    cal = api.load_calibration(sources) if sources else api.calibrate(save_calibration, device=device_index,
                                                                       force=force, console=err, argv=common.argv())
    recs = api.recommend(workloads, cal)
    if cal.device:
        err.print(f"predicted from {cal.source or 'a calibration'} ({cal.device.get('name', 'unknown GPU')})")
    verdicts, source = [None] * len(recs), ""
    if verify or measured:
        verdicts, source = api.verify(recs, top=None if verify_top == "all" else int(verify_top), measured=measured,
                                      output=output, device=device_index, force=force, console=err, argv=common.argv())
        if not measured:
            err.print(f"verification results: {source}")
    for r, v in zip(recs, verdicts):
        print_recommendation(r, console, v, source)
    if sum(v is not None for v in verdicts) > 1:
        console.print(verification_summary(list(zip(recs, verdicts))))


COMMANDS = [recommend]
