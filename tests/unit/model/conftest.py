"""Fixtures of the model's tests: each calibration file loaded once a session."""

from pathlib import Path

import pytest


@pytest.fixture(scope="session", autouse=True)
def calibrations_loaded_once():
    """`umprof.advise` loads a calibration and builds its curves on every call (a dozen seconds of the 2-core test
    machine each); the model never changes a Calibration it prices with, so one loaded instance per file (and per
    name it was given by) serves every test. Calibrations given as ResultSets or lists are loaded as before."""
    from umprof import api

    loaded, load_calibration, memo = api._loaded, api.load_calibration, {}

    def once(key, make):
        if key not in memo:
            memo[key] = make()
        return memo[key]

    def load(sources, device=None):
        if isinstance(sources, (str, Path)):
            return once(("file", str(sources), device), lambda: load_calibration(sources, device))
        return load_calibration(sources, device)

    mp = pytest.MonkeyPatch()
    mp.setattr(api, "_loaded", lambda cf: once(("shipped", str(cf.path)), lambda: loaded(cf)))
    mp.setattr(api, "load_calibration", load)
    yield
    mp.undo()
