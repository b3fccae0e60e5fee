"""Figures and tables from the committed H200 access-pattern results (no GPU needed)."""


import pytest
from click.testing import CliRunner

from tests.unit.data import RESULTS
from umprof.cli import cli

RESULT = RESULTS / "nvidia-h200-access.parquet"
pytestmark = pytest.mark.skipif(not RESULT.is_file(), reason="committed results missing")


def test_plot_draws_the_sweeps_and_the_heat_map(tmp_path):
    res = CliRunner().invoke(cli, ["plot", str(RESULT), "-o", str(tmp_path)])
    assert res.exit_code == 0, res.output
    names = {p.name for p in tmp_path.glob("*.png")}
    assert {"coalescing-stride-stride.png", "coalescing-offset-offset.png", "launch-threads-threads.png",
            "launch-blocks-blocks.png", "matrix-add-blocks-blocks.png"} <= names
    assert all(p.stat().st_size > 10_000 for p in tmp_path.glob("*.png"))


def test_show_puts_prediction_and_copy_ceiling_beside_the_figure():
    res = CliRunner().invoke(cli, ["show", str(RESULT), "-s", "coalescing-stride"], env={"COLUMNS": "250"})
    assert res.exit_code == 0, res.output
    assert "predicted use" in res.output and "% of copy" in res.output and "occupancy" in res.output
    assert "ld 50% (8.0/req)" in res.output


def test_committed_results_meet_the_targets():
    """The README's claims, read back from the committed file."""
    from umprof.core.results import ResultSet

    rs = ResultSet.load(RESULT)
    f = rs.frame
    k = f[f["phase"] == "kernel"]
    assert (f.drop_duplicates(["scenario", "case"])["status"] == "ok").all()
    copy = k[(k["axis.access"] == "copy") & (k["axis.width"] == "f32x4")]["d2d_util"].max()
    read = k[(k["scenario"] == "read-peak")]["bytes_per_s"].max()
    assert copy >= 0.98
    assert read >= 4541e9
