"""benchmarks/apps/mode_phases.py without a GPU: a trace's calls read into phases, and a mode's parts by
the program's own clock."""

import sys

import pytest

from tests.unit.data import ROOT, load_script, unpacked

FIXTURE = ROOT / "tests" / "fixtures" / "traces" / "h200-upload_once.sqlite"


def _mode_phases():
    sys.path.insert(0, str(ROOT / "benchmarks" / "apps"))
    return load_script("benchmarks/apps/mode_phases.py")


def test_a_one_shot_upload_reads_as_allocation_write_and_run(tmp_path):
    ph = _mode_phases().phases(unpacked(FIXTURE, tmp_path))
    # upload_once as written: its first call (a cudaMalloc, the context's creation in it), then the host writes
    # 1 GiB of malloc'd pages before its first copy, then copies 1 GiB in and 64 MiB out
    assert 0.1 < ph["alloc"] < 0.3
    assert ph["write"] > 0.5  # 1 GiB of 4 KiB pages written first: far slower than the copies
    assert 0 < ph["run"] < ph["write"]
    assert ph["alloc"] + ph["write"] + ph["run"] + ph["free"] <= ph["calls_s"] + 1e-9


def test_untraced_parts_are_medians_of_the_programs_own_marks():
    rec = {"wall_s": [1.0, 1.2, 1.1],
           "marks_s": [{"alloc": 0.2, "write": 0.5, "loop": 0.6, "free": 0.65},
                       {"alloc": 0.3, "write": 0.7, "loop": 0.8, "free": 0.9},
                       {"alloc": 0.25, "write": 0.6, "loop": 0.7, "free": 0.8}]}
    parts = _mode_phases().untraced_parts(rec)
    assert parts["alloc"] == pytest.approx(0.25) and parts["write"] == pytest.approx(0.35)
    assert parts["run"] == pytest.approx(0.1) and parts["free"] == pytest.approx(0.1)
    assert parts["outside"] == pytest.approx(0.3)  # 1.0 - 0.65, 1.2 - 0.9, 1.1 - 0.8
    assert _mode_phases().untraced_parts({"wall_s": [1.0], "marks_s": [None]}) is None


def test_a_subset_of_modes_keeps_the_own_mode_first():
    mp = _mode_phases()
    own_first = ["managed", "pinned", "managed-prefetch", "pageable"]
    assert mp.modes_of(own_first, ["pageable", "managed-prefetch"]) == ["managed", "managed-prefetch", "pageable"]
    assert mp.modes_of(own_first, None) == own_first
