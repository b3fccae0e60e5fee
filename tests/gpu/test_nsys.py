"""Nsight Systems on the GPU machine: trace umprof's runs and an annotated app, and check
umprof's CUPTI counters and event times against what nsys saw."""

import os
import subprocess
import sys

import pandas as pd
from click.testing import CliRunner

from umprof.cli import cli
from umprof.core.results import ResultSet
from umprof.nsight import nsys as nsysmod

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXED = ["--min-samples", "3", "--max-noise", "1", "--min-time", "0", "--warmup", "1", "--timeout", "30"]


def _umprof(*args):
    proc = subprocess.run([sys.executable, "-m", "umprof", *args], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def test_trace_transfers_agrees_on_pinned(nsys, tmp_path):
    out = tmp_path / "t.parquet"
    _umprof("trace", "transfers", "-a", "strategy=pinned", "-a", "direction=h2d,d2h", "-a", "bytes=16MiB,256MiB",
            "-o", str(out), "-q")
    assert (tmp_path / "t.nsys-rep").is_file() and (tmp_path / "t.sqlite").is_file()
    phases = ResultSet.load(tmp_path / "t-nsys.parquet")
    f = phases.frame
    matched = f[f["agrees"].notna()]
    assert len(matched) == 4, f[["case", "phase", "agrees"]]
    # a 256 MiB copy takes ~5 ms: the microseconds between CUDA events and Nsight's copy record are
    # under 0.1% of it, so the two must agree within 5%; a 16 MiB copy (~0.3 ms) is matched, not judged
    # (those fixed microseconds alone are a few percent there: it failed on a fresh H200 so)
    big = matched[matched["case"].str.contains("256MiB")]
    assert len(big) == 2 and big["agrees"].astype(bool).all(), big[["case", "phase", "agreement_rel"]]
    h2d = f[(f["phase"] == "h2d") & (f["case"].str.contains("256MiB"))].iloc[0]
    assert abs(h2d["bytes"] - 256 * 1024**2) <= 1000  # one 256 MiB copy per phase (reps = 1 at this size)
    assert phases.devices and phases.devices[0]["name"]


def test_import_nsys_on_the_example_app(nsys, tmp_path):
    rep = tmp_path / "app"
    subprocess.run(nsysmod.profile_command(nsys, rep, [sys.executable, os.path.join(ROOT, "examples", "annotated_app.py"),
                                                       "--mib", "32", "--iterations", "4"], um_faults=False),
                   check=True, capture_output=True, cwd=ROOT)
    out = tmp_path / "app.csv"
    res = CliRunner().invoke(cli, ["import-nsys", f"{rep}.nsys-rep", "-o", str(out)])
    assert res.exit_code == 0, res.output
    f = ResultSet.load(out).frame.set_index(["case", "phase"])
    assert f.loc[("iteration", "h2d"), "samples"] == 4
    assert f.loc[("iteration", "h2d"), "bytes"] == 2 * 32 * 2**20  # x and y, to the byte
    assert f.loc[("iteration", "d2h"), "bytes"] == 32 * 2**20
    assert (tmp_path / "app.sqlite").is_file()  # exported once, beside the report
    assert f.loc[("iteration", "kernel"), "detail"] == "saxpy"
    assert 20e9 < f.loc[("iteration", "h2d"), "bytes_per_s"] < 64e9
    assert ("(top level)", "alloc") in f.index


def test_cupti_counters_match_nsys_migrations(nsys, tmp_path):
    args = ["um-pages", "-a", "bytes=64MiB", "-a", "page=64KiB", *FIXED]
    _umprof("run", *args, "--um-counters", "all", "-o", str(tmp_path / "cupti.parquet"), "-q")
    cupti = ResultSet.load(tmp_path / "cupti.parquet").meta["um_totals"]
    _umprof("trace", *args, "-o", str(tmp_path / "traced.parquet"), "-q")
    traced = ResultSet.load(tmp_path / "traced-nsys.parquet").meta["um"]
    for d in ("htod", "dtoh"):
        ours, theirs = cupti[f"um_{d}_bytes"], traced[f"{d}_bytes"]
        assert theirs > 0
        # CUPTI may lose records of large fault bursts (see um_pages' um_incomplete), so its count is a lower
        # bound: within 1% in every run until 2026-11-25, when it counted 4.0% less H2D than nsys on an H100
        # (773 of 805 MB) and 5.1% less on an H200 (764 of 805 MB). It never counted more.
        assert 0.85 <= ours / theirs <= 1.01, (d, ours, theirs)


def test_trace_overlap_agrees_with_umprofs_own_times(nsys, tmp_path):
    """Nsight Systems' projection of each phase's range onto the GPU against umprof's events,
    the pipelined phase included (its projection spans every stream's work, as its wall does)."""
    out = tmp_path / "o.parquet"
    _umprof("trace", "overlap", "-a", "chunk=4MiB", "-a", "streams=1,4", "-a", "compute=1.0", *FIXED,
            "-o", str(out), "-q")
    f = ResultSet.load(tmp_path / "o-nsys.parquet").frame
    matched = f[f["agrees"].notna()]
    pipelined = matched[matched["phase"] == "pipelined"]
    assert len(pipelined) == 2, f[["case", "phase", "agrees"]]
    judged = matched[matched["phase"].isin(["h2d", "d2h", "pipelined"])]
    # the warm-up is marked untimed: the trace's instances are the samples umprof timed (a median
    # over the warm-up too once disagreed by 5.2% on an H100, with 3 samples up to 16% apart)
    timed = ResultSet.load(out).frame.set_index(["case", "phase"])["samples"]
    instances = judged.set_index(["case", "phase"])["samples"]
    assert (instances == timed.loc[instances.index]).all(), pd.concat([instances, timed.loc[instances.index]], axis=1)
    assert judged["agrees"].astype(bool).all(), judged[["case", "phase", "agreement_rel"]].to_string()
