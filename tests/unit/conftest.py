"""Fixtures shared by the unit tests."""

import pytest

from tests.unit.data import CAL


@pytest.fixture(scope="module")
def cal():
    """The committed H200 calibration."""
    from umprof.core.results import ResultSet
    from umprof.model.predict import Calibration

    return Calibration.from_results(ResultSet.load(CAL), str(CAL))
