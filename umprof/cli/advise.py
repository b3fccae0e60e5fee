"""`umprof advise`: read an application's Nsight Systems trace, or run the program under it, and say what its
transfers should use."""

from __future__ import annotations

import click
from click.core import ParameterSource

from umprof import api
from umprof.cli import common, job
from umprof.core.errors import UsageError


class _ProgramAfterDashes(click.Command):
    """A command whose arguments after ``--`` are a program to run and its own arguments, kept apart from TRACE."""

    def parse_args(self, ctx, args):
        if "--" in args:
            i = args.index("--")
            ctx.meta["umprof.program"] = list(args[i + 1:])
            args = list(args[:i])
        return super().parse_args(ctx, args)


@click.command(cls=_ProgramAfterDashes)
@click.argument("traces", nargs=-1, type=click.Path(), metavar="[TRACE... | -- CMD [ARGS...]]")
@click.option("--runs", type=int, default=3, show_default=True, metavar="N",
              help="With -- CMD: the untraced runs whose median wall time the advice is set against.")
@click.option("-o", "--output", default=None, metavar="PREFIX",
              help="With -- CMD: keep the trace as PREFIX.nsys-rep and PREFIX.sqlite (default: a temporary folder).")
@click.option("--wall", "wall_s", type=float, default=None, metavar="SECONDS",
              help="With a TRACE: the program's own wall time untraced, against which the tracing's overhead is "
                   "taken out.")
@click.option("--from", "sources", multiple=True, type=click.Path(dir_okay=False), metavar="RESULTS",
              help="Predict from this calibration (repeatable). Default: the one of the trace's GPU: this machine's "
                   "cached one, else the shipped one.")
@click.option("--gpu", "gpu_name", default=None, metavar="NAME",
              help="Predict with a shipped GPU model's calibration (H100, H200) whatever the trace ran on.")
@click.option("--nsys", default=None, metavar="PATH", help="nsys: to run the program under it, or to export an "
                                                           ".nsys-rep (once; kept beside it).")
@click.option("--all", "all_processes", is_flag=True,
              help="Every process of the trace, not only the busiest (whose GPUs are all advised).")
@click.option("--json", "as_json", is_flag=True,
              help="JSON: gpu, totals, flows, loop, advice, ... (under 'applications', one each, for several).")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="A job's traces: advise them on this running Dask scheduler (default: a local cluster).")
@click.option("--workers", type=click.IntRange(1), default=None, metavar="N", help="A job's traces: local workers (default: a core each).")
@click.option("--links", multiple=True, type=click.Path(dir_okay=False), metavar="RESULTS",
              help="A job's traces: host-links results of its hosts' GPUs, to price ranks copying at once (repeatable).")
@click.pass_context
def advise(ctx, traces, runs, output, wall_s, sources, gpu_name, nsys, all_processes, as_json, scheduler,
           workers, links):
    """Read an application's trace, or run it, and say what its transfers should use, and what that saves.

    TRACE is what `nsys profile -t cuda[,nvtx] -o app ./app` wrote (app.nsys-rep; exported once to
    app.sqlite beside it, which needs nsys), that export itself (read without nsys), or a torch.profiler
    trace (`prof.export_chrome_trace("trace.json")`, .json or .json.gz, recorded with CPU and CUDA activity). Annotations
    are not needed; an application that launches CUDA graphs is traced with --cuda-graph-trace=node too
    (so that the copies and kernels inside them are in the trace). The advice is for the application's
    loop (its repeating CUDA calls) and for each flow of copies, predicted from the calibration of the
    trace's GPU; a process that drives several GPUs is advised on each. --json writes one document, or,
    for several GPUs or processes, {"trace": ..., "applications": [...]}.

    `umprof advise -- CMD [ARGS...]` runs the program itself: once under nsys (-t cuda,nvtx,osrt, CUDA graphs
    node by node; traced again, and said, with unified-memory page faults where the trace shows managed memory, and
    with torch's operators as NVTX ranges where it shows a PyTorch program and nsys takes --pytorch), then --runs
    times untraced, timed by the host's clock, and advises its trace against the median untraced time.

    Several TRACEs or a folder are a job (a trace per rank): each advised as a Dask task, then its ranks grouped by
    host and behaviour, its stragglers, its ranks' shared links and its saving (--json: {"schema", "job", "ranks"});
    exit 1 when some rank's trace could not be advised.
    """
    program = ctx.meta.get("umprof.program")
    as_job = not program and job.is_job(traces, scheduler)
    _check_inputs(traces, program, output, wall_s, all_processes, as_job)
    _check_unused(program, as_job, {"--workers": workers, "--links": links,
                                    "--runs": ctx.get_parameter_source("runs") != ParameterSource.DEFAULT})
    if sources and gpu_name:
        api.check_calibration_gpu(list(sources), gpu_name)
    if as_job:
        return job.advise_job(traces, sources, gpu_name, nsys, scheduler, workers, links, as_json)
    ran = None
    trace = traces[0] if traces else None
    if program:
        progress = common.err()

        def say(line):
            progress.print(f"umprof: {line}", highlight=False, markup=False)
        found, ran = api.advise_program(program, list(sources) or None, runs=runs, output=output, gpu=gpu_name,
                                        nsys=nsys, all_processes=all_processes, say=say)
    else:
        found = api.advise(trace, list(sources) or None, gpu=gpu_name, nsys=nsys, all_processes=all_processes,
                           wall_s=wall_s)
    _show(found, ran, trace, wall_s, as_json)


def _check_inputs(traces, program, output, wall_s, all_processes, as_job: bool) -> None:
    """One UsageError for a TRACE and a program both, or neither, or an option that goes with the other (--runs is
    checked where the program is run)."""
    trace = " ".join(traces)
    if trace and program:
        raise UsageError(f"advise: a TRACE ({trace}) and a program after -- ({' '.join(program)}): give one; "
                         "`umprof advise TRACE` reads a trace, `umprof advise -- CMD ARGS` runs CMD and traces it")
    if not trace and not program:
        raise UsageError("advise: expected a TRACE (app.nsys-rep, app.sqlite or a torch.profiler trace.json) or a "
                         "program to run after -- (umprof advise -- ./app ARGS)")
    if as_job and wall_s is not None:
        raise UsageError("option '--wall': gives one program's untraced wall time; a job's traces take none")
    if as_job and all_processes:
        raise UsageError("--all: a job's traces are read a rank each (its busiest process); give one trace for --all")
    if program and wall_s is not None:
        raise UsageError("option '--wall': gives a TRACE's untraced wall time; with -- CMD umprof measures it "
                         "(--runs N)")
    api.check_wall_s(wall_s, "option '--wall'")
    if trace and output is not None:
        raise UsageError("option '-o': keeps the trace of a program run after --; a TRACE is kept where it is")


def _check_unused(program, as_job: bool, given: dict) -> None:
    """One UsageError for an option given where it does nothing: a job's own options (--workers, --links) without a
    job, --runs without a program to run."""
    for name, value in given.items():
        if not value:
            continue
        if name == "--runs" and not program:
            raise UsageError("option '--runs': times a program run after -- (umprof advise -- CMD); a TRACE's "
                             "untraced time is given with --wall")
        if name != "--runs" and not as_job:
            raise UsageError(f"option '{name}': applies to a job's several traces (or a folder of them); "
                             f"{'a program run after --' if program else 'one trace'} was given")


def _show(found, ran, trace, wall_s, as_json) -> None:
    """The advice as tables or one JSON document, with the untraced time it was set against."""
    if as_json:
        docs = [a.to_dict() for a in found]
        where = str(trace) if trace else (str(ran.trace) if ran.trace else None)
        extra = {"trace": where, **({"runs": ran.to_dict()} if ran else {}),
                 **({"untraced_wall_s": wall_s} if wall_s is not None else {})}
        doc = dict(docs[0], **extra) if len(docs) == 1 else {**extra, "applications": docs}
        common.echo_json(doc)
        return
    from umprof.views.advice import print_advice

    console = common.out()
    timing = _timing(found, ran, wall_s)
    if timing:
        console.print(timing, highlight=False, markup=False)
    for a in found:
        print_advice(a, console)


def _timing(found, ran, wall_s) -> str:
    """'traced 1.28 s (first CUDA call to last GPU work), untraced 0.71 s (start to exit, median of 3)': the traced
    time (the busiest application's) and the untraced one, where there is one, each with what it spans."""
    from umprof.core.units import format_time

    if ran is None and wall_s is None:
        return ""
    traced = (format_time(found[0].app.wall_s) if found else "-") + " (first CUDA call to last GPU work)"
    if ran is None:
        return f"traced {traced}, untraced {format_time(wall_s)} (given by --wall)"
    runs = len(ran.untraced_s)
    how = f"start to exit, median of {runs}" if runs > 1 else "start to exit, one run"
    recorded = [what for what, on in (("unified-memory page faults", ran.um_faults),
                                      ("torch's operators", ran.torch_ops)) if on]
    also = f"; traced with {' and '.join(recorded)}" if recorded else ""
    return f"traced {traced}, untraced {format_time(ran.wall_s)} ({how}){also}"


COMMANDS = [advise]
