"""benchmarks/advise_scale.py's export at a small size: what it builds is read as it says, and advised (its speed
is the benchmark's to measure, not a test's)."""

import sqlite3

from click.testing import CliRunner

from tests.unit.data import load_script
from umprof.cli import cli
from umprof.nsight.trace_db import open_trace

scale = load_script("benchmarks/advise_scale.py")


def test_the_export_holds_the_records_and_the_loop_it_is_asked_for(tmp_path):
    trace = scale.build_trace(tmp_path / "s.sqlite", 20_000, 5_000)
    con = sqlite3.connect(trace)
    rows = sum(con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in
               ("CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_KERNEL"))
    # the columns are a real export's (nsys 2025.3), made by its CREATE statements
    columns = {r[1] for r in con.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_KERNEL)")}
    assert rows == 20_000 and {"shortName", "gridId", "registersPerThread"} <= columns
    t = open_trace(trace)
    assert len(t.copies) == 5_000 and len(t.kernels) == 5_000 and set(t.copies["kind"]) == {"h2d"}


def test_a_trace_of_a_loop_of_5000_iterations_is_advised(tmp_path):
    trace = scale.build_trace(tmp_path / "s.sqlite", 20_000, 5_000, frame=1 << 20, result=1 << 16)
    r = CliRunner().invoke(cli, ["advise", str(trace), "--gpu", "H100"])
    assert r.exit_code == 0, r.output
    assert "loop: 5000 iterations (2 CUDA calls each" in r.stdout
