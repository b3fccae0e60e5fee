"""Nsight Compute's CSV and the join to cases, on a real capture from the H200 (tests/fixtures/ncu)."""

import math

import pandas as pd
import pytest

from tests.unit.data import ROOT
from umprof.nsight import ncu

FIX = ROOT / "tests" / "fixtures" / "ncu"


@pytest.fixture(scope="module")
def kernels():
    return ncu.parse_csv((FIX / "stride.csv").read_text())


@pytest.fixture(scope="module")
def launches():
    return ncu.read_launches(FIX / "stride-launches.json")


def test_parse_skips_prof_lines_and_units(kernels, launches):
    assert len(kernels) == sum(len(c["kernels"]) for c in launches) == 40
    assert [k["id"] for k in kernels] == sorted(k["id"] for k in kernels)
    assert all(not math.isnan(k["ld_requests"]) for k in kernels)


def test_measured_sectors_match_the_model_on_the_h200(kernels, launches):
    per_case = ncu.attribute(kernels, launches)
    for (scenario, case), counts in per_case.items():
        if "access=read" not in case:
            continue
        stride = int(case.split("stride=")[1].split()[0])
        offset = int(case.split("offset=")[1].split()[0])
        from umprof.measure.ops.access import coalescing_prediction

        pred = coalescing_prediction("read", 4, stride, offset)
        got = counts["ld_sectors"] / counts["ld_requests"]
        assert got == pytest.approx(pred["pred_ld_sectors_per_req"], rel=0.02), case


def test_columns_efficiency():
    cols = ncu.columns({"ld_sectors": 8.0, "ld_requests": 1.0, "st_sectors": 0.0, "st_requests": 0.0}, 128, 0)
    assert cols["ncu_ld_eff"] == 0.5 and cols["ncu_ld_sectors_per_req"] == 8
    assert math.isnan(cols["ncu_st_eff"]) and math.isnan(cols["ncu_st_sectors_per_req"])


def test_attribute_refuses_a_count_mismatch(kernels, launches):
    with pytest.raises(ValueError, match="profiled 39 kernels"):
        ncu.attribute(kernels[:-1], launches)


def test_attribute_refuses_a_different_kernel(kernels, launches):
    swapped = [dict(launches[0], kernels=["coalescing.cu:copy_f32_u4"])] + launches[1:]
    with pytest.raises(ValueError, match="launched copy_f32_u4"):
        ncu.attribute(kernels, swapped)


def test_merge_adds_columns_to_kernel_rows():
    frame = pd.DataFrame({"scenario": ["s", "s"], "case": ["c", "c"], "phase": ["kernel", "total"],
                          "useful_ld_bytes": [128.0, 128.0], "useful_st_bytes": [0.0, 0.0]})
    ncu.merge(frame, {("s", "c"): {"ld_sectors": 4.0, "ld_requests": 1.0, "st_sectors": 0.0, "st_requests": 0.0}})
    assert frame.loc[0, "ncu_ld_eff"] == 1.0 and math.isnan(frame.loc[1, "ncu_ld_eff"])


def test_missing_ncu_is_a_clear_error(monkeypatch, tmp_path):
    from click.testing import CliRunner

    from umprof.cli import cli

    monkeypatch.delenv(ncu.ENV_NCU, raising=False)
    monkeypatch.setattr(ncu, "_INSTALL_GLOBS", ())
    monkeypatch.setenv("PATH", str(tmp_path))
    res = CliRunner().invoke(cli, ["run", "coalescing-stride", "--ncu", "-o", str(tmp_path / "r.parquet")])
    assert res.exit_code == 3 and "ncu was not found" in res.output
    assert not (tmp_path / "r.parquet").exists()
