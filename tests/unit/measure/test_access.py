"""Access-pattern scenarios without a GPU: expansion, merges, the sector model per op."""

import pytest
from click.testing import CliRunner

from umprof.cli import cli
from umprof.core.errors import UsageError
from umprof.measure.ops.access import accessed, coalescing_prediction, layout_prediction
from umprof.measure.ops.matrix import (
    matrix_add_prediction,
    transpose_prediction,
    traversal_prediction,
)
from umprof.measure.ops.reduction import reduction_prediction
from umprof.measure.scenario import resolve

ACCESS = {"coalescing-stride", "coalescing-offset", "coalescing-width", "coalescing-peak", "read-peak", "caches", "layout",
          "traversal", "launch-threads", "launch-blocks", "matrix-add", "matrix-add-blocks", "transpose", "reduction"}


def test_access_group_resolves_to_every_seed_scenario():
    assert {s.name for s in resolve(["access"])} == ACCESS


def test_unknown_name_lists_groups():
    with pytest.raises(UsageError, match=r"a group \(access, calibration, crossovers, lifecycle-calibration, multi-gpu, streams\)"):
        resolve(["nope"])


def _cases(name, **axes):
    s = resolve([name])[0]
    for k, v in axes.items():
        s.override(k, v)
    return s.cases()


def test_expansions():
    assert len(_cases("matrix-add")) == 24  # 5 valid 2D shapes x 2 orders + 7 + 7 one-dimensional blocks
    assert len(_cases("matrix-add-blocks")) == 66  # every power-of-two shape with at most 1024 threads
    assert len(_cases("launch-threads-fine")) == 1009
    assert len(_cases("coalescing-offset")) == 99
    labels = [c.label for c in _cases("transpose", block_x="32", block_y="8")]
    assert not any("diag" in x for x in labels)  # the diagonal mapping needs a square grid
    assert any(x.startswith("variant=smem ") for x in labels) and "block_x" not in labels[-1]


def test_unroll_only_where_instantiated():
    cases = _cases("coalescing-width", unroll="2")
    assert {c.params["width"] for c in cases} == {"f32x4"}


def test_accessed_elements():
    assert accessed(10, 3, 1) == 3  # 1, 4, 7
    assert accessed(10, 1, 0) == 10
    assert accessed(10, 1, 10) == 0


def test_coalescing_predictions():
    assert coalescing_prediction("read", 4, 2, 0)["pred_ld_eff"] == pytest.approx(0.5)
    cols = coalescing_prediction("copy", 4, 1, 1)
    assert cols["pred_ld_eff"] == pytest.approx(0.8) and cols["pred_st_eff"] == pytest.approx(0.8)
    assert "pred_ld_eff" not in coalescing_prediction("write", 4, 1, 0)
    assert coalescing_prediction("read", 16, 1, 0)["pred_ld_sectors_per_req"] == 16


def test_traversal_predictions():
    assert traversal_prediction("rows", 4, 8192, 256)["pred_ld_eff"] == 1.0
    assert traversal_prediction("rows", 4, 8192, 100)["pred_ld_eff"] < 0.9  # seed 000: odd block sizes misalign
    assert traversal_prediction("cols", 4, 8192, 256)["pred_ld_eff"] == pytest.approx(0.125)
    assert traversal_prediction("cols", 16, 8192, 256)["pred_ld_eff"] == pytest.approx(0.5)


def test_matrix_predictions():
    p = matrix_add_prediction("2d-2d", "col", 32, 32, 16384)
    assert p["pred_ld_line_eff"] == pytest.approx(0.03125) and p["pred_st_eff"] == pytest.approx(0.125)
    assert matrix_add_prediction("1d-1d", None, 256, None, 16384)["pred_ld_eff"] == 1.0
    t = transpose_prediction("naive-rowcol", 32, 8, 8192)  # seed 004: loads 100%, stores 4 of 32 bytes
    assert t["pred_ld_eff"] == 1.0 and t["pred_st_eff"] == pytest.approx(0.125)
    t = transpose_prediction("naive-colrow", 16, 16, 8192)  # a warp spans two rows: 8 bytes per sector
    assert t["pred_ld_eff"] == pytest.approx(0.25) and t["pred_st_eff"] == 1.0
    assert transpose_prediction("smem-pad", None, None, 8192)["pred_st_eff"] == 1.0


def test_layout_and_reduction_predictions():
    assert layout_prediction("aos")["pred_ld_eff"] == pytest.approx(0.5)
    assert layout_prediction("aos-aligned")["pred_ld_eff"] == 1.0
    r = reduction_prediction("chunked", 128)
    assert r["pred_ld_eff"] == pytest.approx(0.25) and r["pred_ld_sectors_per_req"] == 32
    assert reduction_prediction("grid-stride", None)["pred_ld_eff"] == 1.0


def test_run_group_dry_run():
    res = CliRunner().invoke(cli, ["run", "access", "--dry-run"])
    assert res.exit_code == 0
    for name in ACCESS:
        assert name in res.output
