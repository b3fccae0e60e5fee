"""The sector model on the cases the seeds work out by hand."""

import math

import numpy as np
import pytest

from umprof.measure import sectors as sm


def test_coalesced_float_is_one_line_four_sectors():
    p = sm.predict(sm.strided(4), 4)
    assert p.efficiency == 1.0 and p.line_efficiency == 1.0
    assert p.sectors_per_request == 4


def test_stride_two_halves_the_useful_bytes():
    p = sm.predict(sm.strided(4, stride=2), 4)
    assert p.efficiency == pytest.approx(0.5)
    assert p.sectors_per_request == 8


def test_stride_32_floats_uses_one_word_per_sector():
    p = sm.predict(sm.strided(4, stride=32), 4)
    assert p.efficiency == pytest.approx(4 / 32)
    assert p.sectors_per_request == 32


def test_misaligned_by_one_float_is_80_percent_with_sectors_50_with_lines():
    # seed 004: "misaligned and coalesced: 5 segments; bus utilization 80%" (uncached), two 128-byte lines cached
    p = sm.predict(sm.strided(4, offset=1), 4)
    assert p.efficiency == pytest.approx(0.8)
    assert p.sectors_per_request == 5
    assert p.line_efficiency == pytest.approx(0.5)


def test_same_address_for_every_lane():
    # seed 004: "4 bytes requested / 128 bytes loaded = 3.125%" cached, 12.5% uncached
    p = sm.predict(np.zeros((1, 32), dtype=np.int64), 4)
    assert p.line_efficiency == pytest.approx(0.03125)
    assert p.efficiency == pytest.approx(0.125)


def _matrix_add(order, bx, by, n=16384):
    x, y = sm.grid_2d(bx, by, [(0, 0), (1, 0), (0, 1), (3, 5)])
    return sm.predict(sm.to_bytes(sm.matrix_index(x, y, n, order), 4), 4)


def test_seed_001_row_major_tables():
    assert _matrix_add("row", 32, 32).line_efficiency == 1.0  # gld_efficiency 100%
    assert _matrix_add("row", 32, 16).line_efficiency == 1.0
    p = _matrix_add("row", 16, 16)  # a warp spans two half rows: two lines for 128 bytes
    assert p.line_efficiency == pytest.approx(0.5)  # gld_efficiency 50.0%
    assert p.efficiency == 1.0  # gst_efficiency 100% (stores go in 32-byte segments)


def test_seed_001_column_major_tables():
    p = _matrix_add("col", 32, 32)
    assert p.line_efficiency == pytest.approx(0.03125)  # gld_efficiency 3.125%
    assert p.efficiency == pytest.approx(0.125)  # gst_efficiency 12.50%
    p = _matrix_add("col", 16, 16)
    assert p.line_efficiency == pytest.approx(0.0625)  # 6.25%
    assert p.efficiency == pytest.approx(0.25)  # 25.00%


def test_float4_requests_sixteen_sectors():
    p = sm.predict(sm.strided(16), 16)
    assert p.efficiency == 1.0 and p.sectors_per_request == 16


def test_partial_warp_lanes_are_ignored():
    tx, ty = sm.block_warps(48)
    assert tx.shape == (2, 32) and (tx[1] == -1).sum() == 16
    p = sm.predict(sm.to_bytes(np.where(tx >= 0, tx, -1), 4), 4)
    assert p.requests == 2 and p.requested_bytes == 48 * 4 and p.sectors == 6


def test_aos_reading_one_field_wastes_half():
    # seed 004: reading x of {float x, y} costs half the bandwidth
    p = sm.predict(sm.strided(4, stride=2), 4)
    assert p.efficiency == pytest.approx(0.5)


def test_empty_prediction_is_nan():
    p = sm.predict(np.full((1, 32), -1), 4)
    assert p.requests == 0 and math.isnan(p.efficiency) and math.isnan(p.sectors_per_request)


def test_columns_names():
    cols = sm.columns(sm.predict(sm.strided(4), 4), None)
    assert set(cols) == {"pred_ld_eff", "pred_ld_line_eff", "pred_ld_sectors_per_req"}
