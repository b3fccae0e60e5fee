"""cli: the ``umprof`` command line (click), thin: parse, call the library, print.

One module per command group: ``info`` (list, devices), ``run`` (run, the ncu pass),
``calibrate`` (calibrate, calibrations), ``decide`` (recommend), ``advise`` (advise), ``analyse`` (crossovers, compare), ``present`` (show, plot, report),
``nsight`` (trace, import-nsys). Shared options and helpers are in ``common``.

Exit codes: 0 done; 1 a case failed (the others were still measured and saved);
2 a usage error (bad option, scenario file, axis or value); 3 no GPU, driver or pycuda;
130 interrupted (what was measured is saved).

May import every layer (core, nsight, measure, model, views, and the API in ``umprof.api``).
"""

from __future__ import annotations

import click

from umprof.cli import advise, analyse, calibrate, decide, info, nsight, present, run
from umprof.core.errors import UmprofError
from umprof.core.version import __version__


# click 8.2's error for a command given no arguments that shows its help instead (none before 8.2)
NO_ARGS_IS_HELP = getattr(click.exceptions, "NoArgsIsHelpError", ())


class _Group(click.Group):
    """Turns umprof's own errors, and click's on a bad option or argument, into one line and an exit code, never a
    traceback or a usage block."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except UmprofError as e:
            click.echo(f"umprof: error: {e}", err=True)
            ctx.exit(e.exit_code)
        except click.UsageError as e:  # a command's bad option or argument, or an unknown command
            if isinstance(e, NO_ARGS_IS_HELP):  # a command with no arguments shows its help
                raise
            command = e.ctx.command_path if e.ctx is not None else ctx.command_path
            click.echo(f"umprof: error: {e.format_message()} (see `{command} --help`)", err=True)
            ctx.exit(e.exit_code)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="umprof")
def cli():
    """Profile how data moves between host and NVIDIA GPUs, and choose a host-memory strategy."""


for _module in (info, run, calibrate, decide, advise, analyse, present, nsight):
    for _command in _module.COMMANDS:
        cli.add_command(_command)


def main():
    cli(prog_name="umprof")
