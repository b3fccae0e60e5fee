"""`umprof recommend`: rank the host-memory strategies for a workload, and verify the ranking."""

from __future__ import annotations

import click

from umprof import api
from umprof.cli import common
from umprof.core.errors import UsageError
from umprof.model.recommend import VERIFY_ROUNDS
from umprof.model.workload import FIRST_WRITES, HOST_PAGES, HOST_READERS, PATTERNS, from_mapping


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
    return [from_mapping(given, "recommend", options=True)]


@click.command()
@click.option("--from", "sources", multiple=True, type=click.Path(dir_okay=False), metavar="RESULTS",
              help="Predict from a saved calibration (`umprof calibrate -o F`; repeatable: several pool case by "
                   "case). Default: this machine's cached calibration, else the shipped one of its GPU model.")
@click.option("--gpu", "gpu_name", default=None, metavar="NAME",
              help="Answer for a GPU model umprof ships a calibration of (H100, H200), offline: no GPU needed "
                   "(`umprof calibrations` lists them).")
@click.option("--calibrate-now", is_flag=True,
              help="Where no calibration answers for this GPU, measure one first (5-6 minutes) instead of saying so.")
@click.option("--workload", "workload_files", multiple=True, type=click.Path(dir_okay=False), metavar="FILE",
              help="A workload TOML file ([workload] or [[workload]] tables; see scenarios/workloads/example.toml).")
@click.option("--bytes", "bytes", metavar="SIZE", default=None, help="The buffer's size: 64MiB, 1GiB (a multiple of 64 KiB).")
@click.option("--reuse", type=int, default=None, help="Kernel passes per iteration [1].")
@click.option("--touched", type=float, default=None, help="Fraction of the 64 KiB pages each pass touches, in (0, 1] [1.0].")
@click.option("--pattern", type=click.Choice(PATTERNS), default=None,
              help="How a pass walks the touched pages [streaming].")
@click.option("--stride", type=int, default=None, help="Strided pattern: words between touched words, a power of two [8].")
@click.option("--iterations", type=int, default=None, help="Iterations of the application's loop [1].")
@click.option("--host-writes", type=float, default=None, metavar="F",
              help="Fraction of the buffer the host writes before each iteration; 0: data produced once [0].")
@click.option("--gpu-writes", type=float, default=None, metavar="F",
              help="Fraction of what a kernel pass touches that it writes; 0: a read-only input [1].")
@click.option("--host-reads", type=float, default=None, metavar="F",
              help="Fraction of the buffer the host reads after each iteration; 0: only a small result [1].")
@click.option("--pingpong/--no-pingpong", default=None, help="Shorthand for --host-writes 1 --gpu-writes 1 --host-reads 1.")
@click.option("--copies", type=int, default=None, metavar="N",
              help="Explicit copies each way per iteration, in equal parts (records sent one cudaMemcpy each) [1].")
@click.option("--host-pages", type=click.Choice(HOST_PAGES), default=None,
              help="How the application's pageable memory is backed: numpy (a Python program's arrays) or malloc "
                   "(a C or C++ program's buffers) [numpy].")
@click.option("--first-write", type=click.Choice(FIRST_WRITES), default=None,
              help="How the host writes the buffer first: copy (its data copied in, as umprof's loop does) or stores "
                   "(each word stored as a program computes it) [copy].")
@click.option("--host-reader", type=click.Choice(HOST_READERS), default=None, help="How the host reads the buffer "
              "back: numpy (a vectorized sum, a Python program's) or words (a compiled program's loop) [numpy].")
@click.option("--split/--in-place", "split", default=None,
              help="Whether the host reads another part of the buffer than it writes (separate input and output "
                   "buffers) or the part it wrote [in place: the one layout --verify measures].")
@click.option("--steady", is_flag=True,
              help="Rank by the steady iteration alone (a loop that runs for hours), not the whole run of --iterations.")
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON document: under 'recommendations', per workload, its ranking (setup, steady and "
                   "whole, each phase), reason, tie and verification ({'gpus': [...]}, one each, for several GPUs).")
@click.option("--fits/--no-fits", default=None, help="Whether the buffer fits in device memory [from the device's memory].")
@click.option("--verify", is_flag=True, help="Measure the workload under the top strategies and print predicted vs measured.")
@click.option("--verify-top", default="3", show_default=True, metavar="N|all", help="How many of the top strategies --verify measures.")
@click.option("--verify-rounds", type=click.IntRange(min=1), default=VERIFY_ROUNDS, show_default=True, metavar="N",
              help="Rounds --verify measures every strategy in (even ones in reverse order, each case sampled "
                   "briefly); each figure is the median over them.")
@click.option("--measured", multiple=True, type=click.Path(dir_okay=False), metavar="RESULTS",
              help="Verify against earlier --verify runs' results instead of measuring again (repeatable: each "
                   "strategy's figure is the median over the files and rounds; with two or more, also how often "
                   "one file's fastest held in another).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Where --verify saves its measurements. Default: umprof-results/verify-<time>.parquet")
@click.option("--force", is_flag=True, help="Overwrite result files that exist.")
@click.option("--device", "device_index", type=common.DEVICES, default=None,
              help="GPUs to answer for: an index, a list (0,1) or all; each gets its own calibration and ranking "
                   "(with --from: the calibration rows measured on that GPU). Default: 0.")
def recommend(sources, gpu_name, calibrate_now, workload_files, steady, as_json, verify, verify_top, verify_rounds,
              measured, output, force, device_index, **workload):
    """Rank the host-memory strategies for a workload, with predicted time per phase and the reason.

    Each answer has two figures: setup (allocation, registration, first touch, free) and the
    steady iteration; the whole run is setup + iterations × steady, and ranks by default.
    Predictions come from a calibration: this machine's (`umprof calibrate`), the one shipped for
    its GPU model, a shipped one named by --gpu (offline), or files (--from). --verify then
    measures the workload itself.
    """
    from umprof.views.terminal import print_recommendations

    _check_recommend_options(steady, workload["iterations"], verify_top, gpu_name, verify, device_index)
    # the workload's options, as the workload's keys name them (--bytes is "bytes")
    workloads = _workloads(workload_files, workload)
    console, err = common.out(), common.err()
    gpus = _gpus(device_index, sources)
    if sources:
        api.check_calibration_gpu(list(sources), gpu_name, gpus[0])
    # the earlier runs read and pooled once, before any calibration: the verdicts, the agreement and the drift of every GPU
    earlier, earlier_names = api.measured_frame(list(measured)) if measured else (None, "")
    docs = []
    for gpu in gpus:
        if len(gpus) > 1 and not as_json:
            console.rule(f"GPU {gpu}")
        cal, differences = common.calibration_said(sources, gpu, gpus, gpu_name, device_index, calibrate_now,
                                                   err)
        recs = api.recommend(workloads, cal, steady=steady)
        verdicts, source = [None] * len(recs), ""
        if verify or measured:
            verdicts, source = api.verify(recs, top=None if verify_top == "all" else int(verify_top),
                                          measured=earlier, output=_per_gpu(output, gpu, gpus),
                                          device=gpu, force=force, console=err, argv=common.argv(),
                                          rounds=verify_rounds)
            if measured:
                source = earlier_names
            else:
                err.print(f"verification results: {source}")
        # the drift is judged on what was verified: the earlier runs, or the run just measured (read back once)
        judged = earlier if measured else (api.measured_frame(source)[0] if verify else None)
        agree = api.runs_agree(recs, earlier) if measured else None  # None for one run
        drift = api.phase_drift(recs, judged) if any(v is not None for v in verdicts) else {}
        if as_json:
            docs.append(dict(document(cal, recs, verdicts, source), gpu=gpu, runs_agree=agree, phase_drift=drift,
                             calibration_differs=differences))
        else:
            runs = (earlier.attrs.get("runs") or list(measured)) if agree else None
            print_recommendations(recs, verdicts, source, agree, drift, runs, console)
    if as_json:
        common.echo_json(docs[0] if len(docs) == 1 else {"gpus": docs})


def _check_recommend_options(steady, iterations, verify_top, gpu_name, verify, device_index) -> None:
    """recommend's options that contradict each other, or a --verify-top that is no count: one line each."""
    if steady and iterations is not None:
        raise UsageError("options '--steady' and '--iterations': --steady ranks by one steady iteration, which the number "
                         "of iterations does not change; give --iterations N to rank the whole run, or --steady alone")
    if verify_top != "all" and (not verify_top.isdigit() or int(verify_top) < 1):
        raise UsageError(f"option '--verify-top': expected a positive integer or 'all', got {verify_top!r}")
    if gpu_name is not None and (verify or device_index is not None):
        raise UsageError("option '--gpu' answers for a GPU model offline; --verify and --device measure or read this "
                         "machine's GPUs: give one or the other")


def _gpus(spec, sources) -> list[int]:
    """The GPUs ``--device`` names; 'all' with --from: every GPU the calibration was measured on."""
    if spec is None:
        return [0]
    if spec != "all":
        return list(spec)
    if sources:
        import pandas as pd

        frames = [api.load(s).frame for s in sources]
        col = pd.concat([f["device"] for f in frames if "device" in f])
        return sorted(int(x) for x in col.dropna().unique()) or [0]
    from umprof.measure.gpu import device_count

    return list(range(device_count()))


def _per_gpu(path, gpu, gpus):
    """One file per GPU when several are answered for: calibration.parquet → calibration.gpu1.parquet."""
    if path is None or len(gpus) == 1:
        return path
    from pathlib import Path

    p = Path(path)
    return str(p.with_name(f"{p.stem}.gpu{gpu}{p.suffix}"))


def document(cal, recs, verdicts, source) -> dict:
    """`recommend --json`: one document a script reads."""
    from umprof.core.version import __version__

    return {"umprof": __version__, "calibration": cal.source, "device": cal.device.get("name"),
            "verified_against": source or None,
            "recommendations": [r.to_dict(v) for r, v in zip(recs, verdicts)]}


COMMANDS = [recommend]
