"""A calibration is built once per process for the same files, and again when a file changes."""

import os
import shutil

from umprof import api
from umprof.core import calibrations as store


def test_the_same_file_gives_the_built_calibration_and_a_changed_one_a_new_build(tmp_path):
    path = tmp_path / "h100.parquet"
    shutil.copy(store.shipped_for("H100").path, path)
    cf = store.describe(path)
    first = api._loaded(cf)
    assert api._loaded(store.describe(path)) is first
    assert api.load_calibration([str(path)]) is api.load_calibration(str(path))
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    again = api._loaded(store.describe(path))
    assert again is not first and again.strategies == first.strategies
