"""scripts/ship_run.py: a measured run joined to a shipped calibration as a run of its own."""

import contextlib
import io
import sys
from types import SimpleNamespace
from unittest import mock

import pandas as pd

from tests.unit.data import SHIPPED, load_script
from umprof.core.results import ResultSet
from umprof.model.calibration import RUN


def _script(*args) -> SimpleNamespace:
    """scripts/ship_run.py run with these arguments in this process (its command line's main()): its exit status
    and what it wrote to stderr, as a subprocess would give them."""
    err = io.StringIO()
    with mock.patch.object(sys, "argv", ["ship_run.py", *map(str, args)]), contextlib.redirect_stderr(err), \
            contextlib.redirect_stdout(io.StringIO()):
        try:
            load_script("scripts/ship_run.py").main()
            code = 0
        except SystemExit as e:  # sys.exit(message) exits 1 with the message on stderr, as the interpreter does
            code = e.code if isinstance(e.code, int) else 1
            err.write("" if isinstance(e.code, int) or e.code is None else str(e.code))
    return SimpleNamespace(returncode=code, stderr=err.getvalue())


def _files(tmp_path):
    """A small 'shipped' file (the H200's setup loop of its first run) and a 'measured' one (its copies in parts
    and its setup loop again), each of one GPU and one run."""
    rs = ResultSet.load(SHIPPED / "nvidia-h200.parquet")
    f = rs.frame
    first = f[f[RUN] == 0].drop(columns=[RUN])
    setup = first[first["scenario"].astype(str).str.startswith("calibration-loop-setup")]
    copies = first[first["scenario"].astype(str).str.startswith("calibration-loop-copies")]
    meta = dict(rs.meta, calibration={"profile": "full", "cases": int(setup.loc[setup["phase"] == "total", "case"].nunique())})
    ResultSet(setup, meta, rs.devices).save(tmp_path / "shipped.parquet")
    ResultSet(pd.concat([setup, copies]), rs.meta, rs.devices).save(tmp_path / "measured.parquet")
    return setup, copies


def _ship(tmp_path, *extra):
    return _script(tmp_path / "shipped.parquet", tmp_path / "measured.parquet", "2026-11-25, another run", *extra)


def test_a_run_is_numbered_after_the_file_s_own_and_described(tmp_path):
    setup, copies = _files(tmp_path)
    p = _ship(tmp_path, "--without", "write-combined")
    assert p.returncode == 0, p.stderr
    out = ResultSet.load(tmp_path / "shipped.parquet")
    f = out.frame
    assert sorted(f[RUN].unique()) == [0, 1]
    added = f[f[RUN] == 1]
    assert not (added["axis.strategy"].astype(str) == "write-combined").any()  # --without
    assert len(added) == len(setup) + len(copies) - ((setup["axis.strategy"].astype(str) == "write-combined").sum()
                                                     + (copies["axis.strategy"].astype(str) == "write-combined").sum())
    cal = out.meta["calibration"]
    assert cal["runs"][-1] == "2026-11-25, another run" and len(cal["runs"]) == 2
    fresh = copies.loc[(copies["phase"] == "total") & (copies["axis.strategy"].astype(str) != "write-combined"), "case"]
    assert cal["cases"] == setup.loc[setup["phase"] == "total", "case"].nunique() + fresh.nunique()  # only new cases


def test_a_file_of_another_gpu_is_refused(tmp_path):
    _files(tmp_path)
    rs = ResultSet.load(tmp_path / "measured.parquet")
    ResultSet(rs.frame, rs.meta, [dict(rs.devices[0], name="NVIDIA H100 80GB HBM3")]).save(tmp_path / "measured.parquet")
    p = _ship(tmp_path)
    assert p.returncode != 0 and "NVIDIA H100 80GB HBM3" in p.stderr and "NVIDIA H200" in p.stderr
    assert RUN not in ResultSet.load(tmp_path / "shipped.parquet").frame.columns  # nothing written


def test_a_step_measured_anew_leaves_the_earlier_runs_rows_of_it_out_and_says_so(tmp_path):
    """--supersede free: the shipped file's free rows of the scenarios the new run holds are left out (the new
    run's are that step's alone), its other steps pool as before, other scenarios keep theirs, and each run that
    lost rows says so; a phase the measured run lacks is refused, naming the phases it has, and nothing written."""
    setup, copies = _files(tmp_path)
    rs = ResultSet.load(tmp_path / "measured.parquet")
    ResultSet(copies, rs.meta, rs.devices).save(tmp_path / "copies.parquet")
    assert (copies["phase"] == "free").any() and (setup["phase"] == "free").any()
    assert _script(tmp_path / "shipped.parquet", tmp_path / "copies.parquet", "2026-11-25, the copies").returncode == 0  # run 1
    p = _ship(tmp_path, "--supersede", "free", "--without", "write-combined")  # run 2: setup and copies, anew
    assert p.returncode == 0, p.stderr
    out = ResultSet.load(tmp_path / "shipped.parquet")
    f = out.frame
    free = f[f["phase"] == "free"]
    assert set(free[RUN]) == {2}  # the earlier runs' free rows of both scenarios left out
    assert len(free) == (setup["phase"] == "free").sum() + (copies["phase"] == "free").sum() - (
        (setup["phase"] == "free") & (setup["axis.strategy"].astype(str) == "write-combined")).sum() - (
        (copies["phase"] == "free") & (copies["axis.strategy"].astype(str) == "write-combined")).sum()
    alloc = f[f["phase"] == "alloc"]
    assert set(alloc[RUN]) == {0, 1, 2}  # the other steps pool every run
    runs = out.meta["calibration"]["runs"]
    assert len(runs) == 3 and runs[0].endswith("(its free rows left out: run 2 measured them anew)")
    assert runs[1].endswith("(its free rows left out: run 2 measured them anew)") and runs[2] == "2026-11-25, another run"
    before = len(f)
    p = _ship(tmp_path, "--supersede", "teardown")
    assert p.returncode == 2 and "no phase teardown" in p.stderr and "free" in p.stderr
    assert len(ResultSet.load(tmp_path / "shipped.parquet").frame) == before
