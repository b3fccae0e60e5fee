"""`umprof advise`: read an application's Nsight Systems trace and say what its transfers should use."""

from __future__ import annotations

import click

from umprof import api
from umprof.cli import common, job


@click.command()
@click.argument("traces", nargs=-1, required=True, type=click.Path(), metavar="TRACE...")
@click.option("--from", "sources", multiple=True, type=click.Path(dir_okay=False), metavar="RESULTS",
              help="Predict from this calibration (repeatable). Default: the one of the trace's GPU: this machine's "
                   "cached one, else the shipped one.")
@click.option("--gpu", "gpu_name", default=None, metavar="NAME",
              help="Predict with a shipped GPU model's calibration (H100, H200) whatever the trace ran on.")
@click.option("--nsys", default=None, metavar="PATH", help="nsys, to export an .nsys-rep (once; kept beside it).")
@click.option("--all", "all_processes", is_flag=True,
              help="Every process of the trace, not only the busiest (whose GPUs are all advised).")
@click.option("--json", "as_json", is_flag=True,
              help="JSON: gpu, totals, flows, loop, advice, ... (under 'applications', one each, for several).")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="A job's traces: advise them on this running Dask scheduler (default: a local cluster).")
@click.option("--workers", type=click.IntRange(1), default=None, help="A job's traces: local workers (default: a core each).")
@click.option("--links", multiple=True, type=click.Path(dir_okay=False), metavar="RESULTS",
              help="A job's traces: host-links results of its hosts' GPUs, to price ranks copying at once (repeatable).")
def advise(traces, sources, gpu_name, nsys, all_processes, as_json, scheduler, workers, links):
    """Read an application's trace and say what its transfers should use, and what that saves.

    TRACE is what `nsys profile -t cuda[,nvtx] -o app ./app` wrote (app.nsys-rep; exported once to
    app.sqlite beside it, which needs nsys) or that export itself (read without nsys). Annotations
    are not needed; an application that launches CUDA graphs is traced with --cuda-graph-trace=node too
    (so that the copies and kernels inside them are in the trace). The advice is for the application's
    loop (its repeating CUDA calls) and for each flow of copies, predicted from the calibration of the
    trace's GPU; a process that drives several GPUs is advised on each. --json writes one document, or,
    for several GPUs or processes, {"trace": ..., "applications": [...]}.

    Several TRACEs or a folder are a job (a trace per rank): each advised as a Dask task, then its ranks grouped by
    host and behaviour, its stragglers, its ranks' shared links and its saving (--json: {"schema", "job", "ranks"});
    exit 1 when some rank's trace could not be advised.
    """
    if sources and gpu_name:
        api.check_calibration_gpu(list(sources), gpu_name)
    if job.is_job(traces, scheduler):
        return job.advise_job(traces, sources, gpu_name, nsys, scheduler, workers, links, as_json, all_processes)
    trace = traces[0]
    found = api.advise(trace, list(sources) or None, gpu=gpu_name, nsys=nsys, all_processes=all_processes)
    if as_json:
        docs = [a.to_dict() for a in found]
        doc = dict(docs[0], trace=str(trace)) if len(docs) == 1 else {"trace": str(trace), "applications": docs}
        common.echo_json(doc)
        return
    from umprof.views.advice import print_advice

    console = common.out()
    for a in found:
        print_advice(a, console)


COMMANDS = [advise]
