"""What the commands share: the console, the options of `run` and `trace`, the child command a
profiler runs, the calibration that answers for a GPU, said."""

from __future__ import annotations

import json
import math
import sys

import click
from rich.console import Console

from umprof import api
from umprof.measure.timing import StoppingRule

RULE = StoppingRule()  # the defaults the run options' help texts show


def out() -> Console:
    """The console for results (stdout; wide when redirected, so tables are not cut)."""
    return Console(highlight=False, soft_wrap=False, width=200 if not sys.stdout.isatty() else None)


def err() -> Console:
    """The console for progress and notes (stderr)."""
    return Console(stderr=True)


def argv() -> list[str]:
    """The command line as the results' metadata records it."""
    return ["umprof", *sys.argv[1:]]


class DeviceSpec(click.ParamType):
    """``--device``: one GPU index, a list (0,1) or all (:func:`umprof.core.devices.parse_devices`)."""

    name = "GPUS"

    def convert(self, value, param, ctx):
        from umprof.core.devices import parse_devices
        from umprof.core.errors import UsageError

        if value is None or isinstance(value, tuple) or value == "all":
            return value
        try:
            return parse_devices(value)
        except UsageError as e:
            self.fail(str(e).split(": ", 1)[-1], param, ctx)


DEVICES = DeviceSpec()


def one_device(spec, what: str) -> int:
    """The single GPU a command that profiles one GPU takes from ``--device``."""
    from umprof.core.errors import UsageError

    if spec is None:
        return 0
    if spec == "all" or len(spec) != 1:
        raise UsageError(f"option '--device': {what} uses one GPU; expected one index, got {spec if spec == 'all' else ','.join(map(str, spec))}")
    return spec[0]


def run_options(fn):
    """The options `run` and `trace` share (axes, output, device, stopping rule, guards)."""
    options = [
        click.option("-a", "--axis", "axes", multiple=True, metavar="NAME=VALUES",
                     help="Override an axis: bytes=pow2:24..28, strategy=pinned,managed (repeatable)."),
        click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
                     help="Result file (.parquet, .csv or .json). Default: umprof-results/<command>-<time>.parquet"),
        click.option("--force", is_flag=True, help="Overwrite the result file if it exists."),
        click.option("--device", "device_index", type=DEVICES, default=None,
                     help="GPUs: an index, a list (0,1) or all; each scenario runs on each in turn, and p2p / "
                          "host-links / um-peers span them. Default: 0 (under MPI: the rank's GPU on its node)."),
        click.option("--min-samples", type=click.IntRange(min=1), default=None,
                     help=f"Samples per case at least [{RULE.min_samples}]."),
        click.option("--min-time", type=click.FloatRange(min=0), default=None,
                     help=f"Measured seconds per case at least [{RULE.min_time}]."),
        click.option("--max-noise", type=click.FloatRange(min=0), default=None,
                     help=f"Stop once the relative stdev is under this [{RULE.max_noise}]."),
        click.option("--timeout", type=click.FloatRange(min=0), default=None,
                     help=f"Seconds of sampling per case: past it, a case stops once it has --min-samples (flagged "
                          f"when the noise target is unmet), and at 4x it regardless; a warm-up longer than "
                          f"4x it is the case's one sample [{RULE.timeout}]."),
        click.option("--warmup", type=click.IntRange(min=0), default=None, help=f"Untimed samples before timing [{RULE.warmup}]."),
        click.option("--allow-oversubscription", is_flag=True,
                     help="Allow managed allocations beyond the GPU's free memory. Can hang the GPU: only on a machine you own."),
        click.option("-q", "--quiet", is_flag=True, help="No progress bar and no summary table."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def timing(min_samples, min_time, max_noise, timeout, warmup) -> dict:
    """The stopping rule's overrides as the runner takes them."""
    return dict(min_samples=min_samples, min_time=min_time, max_noise=max_noise, timeout=timeout, warmup=warmup)


def child_command(command: str, chosen, axes, device_index) -> list[str]:
    """This umprof, run again as a profiler's child on the same scenarios, axes and device."""
    child = [sys.executable, "-m", "umprof", command, *[str(s.path) for s in chosen], "--device", str(device_index)]
    for a in axes:
        child += ["-a", a]
    return child


FORMAT = click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True,
                      help="A table to read, or one JSON document a script reads.")


def plain(v):
    """numpy numbers, timestamps and NaN as JSON has them."""
    v = getattr(v, "item", lambda: v)()
    if isinstance(v, float) and math.isnan(v):
        return None
    return v if isinstance(v, (str, int, float, bool, type(None), list, dict)) else str(v)


def echo_json(doc) -> None:
    """One JSON document on stdout (NaN as null)."""
    click.echo(json.dumps(_nulls(doc), indent=1, default=plain))


def records(frame) -> list[dict]:
    """A DataFrame's rows as JSON-ready dicts (NaN → null)."""
    return [{k: _nulls(plain(v)) for k, v in r.items()} for r in frame.to_dict(orient="records")]


def _nulls(v):
    if isinstance(v, float) and math.isnan(v):
        return None
    if isinstance(v, dict):
        return {k: _nulls(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_nulls(x) for x in v]
    return v


def calibration_said(sources, gpu, gpus, gpu_name, device_index, calibrate_now, err):
    """The calibration that answers for ``gpu`` (the files given, else the machine's, cached or shipped, or --gpu's
    model), said on stderr with how it differs from the machine, and those differences."""
    differences = []
    if sources:
        cal = api.load_calibration(sources, device=gpu if len(gpus) > 1 or device_index is not None else None)
    else:
        cal, _, differences = api.calibration_for(gpu=gpu_name, device=gpu, calibrate_now=calibrate_now, console=err)
    # the calibration's GPU, not --gpu's name: the loop's next GPU still answers from its own
    model = cal.device.get("name", "unknown GPU")
    said = cal.source or "a calibration"
    err.print(f"predicted from {said}" + ("" if model in said else f" ({model})"))
    for d in differences:
        err.print(f"[yellow]note:[/] {d}")
    return cal, differences
