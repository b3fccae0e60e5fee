"""`umprof advise TRACE...` for a job's traces (several, or a folder): the job's answer, called by the advise
command. Exit 1 when some rank's trace could not be advised (the others are, and printed)."""

from __future__ import annotations

from pathlib import Path

import click

from umprof import api
from umprof.cli import common

# a folder of many unrelated files can leave hundreds of ranks out: the first few lines say what, --json says all
PROBLEM_LINES = 10


def is_job(traces, scheduler: str | None) -> bool:
    """Whether ``advise`` was given a job: several traces, a folder, or a Dask scheduler to run on."""
    return len(traces) > 1 or scheduler is not None or any(Path(t).is_dir() for t in traces)


def advise_job(traces, sources, gpu_name, nsys, scheduler, workers, links, as_json) -> None:
    """Advise the job's traces together and print its answer (JSON with ``as_json``)."""
    doc = api.advise_job(list(traces), list(sources) or None, gpu=gpu_name, nsys=nsys, scheduler=scheduler,
                         workers=workers, links=list(links))
    if as_json:
        common.echo_json(doc)
    else:
        from umprof.views.job import print_job

        print_job(doc, common.out())
    problems = doc["job"]["problems"]
    for p in problems[:PROBLEM_LINES]:
        click.echo(f"umprof: {p['text']}", err=True)
    if len(problems) > PROBLEM_LINES:
        click.echo(f"umprof: and {len(problems) - PROBLEM_LINES} more ranks left out (--json lists them)", err=True)
    if doc["job"]["totals"]["failed"]:
        click.get_current_context().exit(1)
