"""Every kernel compiles with nvcc for sm_80 and sm_90 with no register spills (no GPU needed)."""

import shutil

import pytest

from umprof.kernels import resource_usage
from umprof.resources import kernels_dir

SOURCES = sorted(kernels_dir().glob("*.cu"))
pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("path", SOURCES, ids=[p.name for p in SOURCES])
def test_compiles_without_spills(path, arch):
    usage = resource_usage(path, arch)
    assert usage, f"{path.name}: no kernels found"
    for name, u in usage.items():
        assert u["spill_stores"] == 0 and u["spill_loads"] == 0, f"{name} spills on {arch}: {u}"
        assert 0 < u["registers"] <= 255


def test_lifecycle_expected_closed_form():
    import numpy as np

    from umprof.ops.lifecycle import initial_pattern, lifecycle_expected

    x = initial_pattern(4096)
    y = x.copy()
    for r in range(1, 10):
        y = y * np.uint32(3) + np.uint32(1)
        assert np.array_equal(lifecycle_expected(x, r), y)
