"""benchmarks/fault_read.cu without a GPU: the program compiles (CI has nvcc)."""

import shutil
import subprocess

import pytest

from tests.unit.data import ROOT


@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_the_program_compiles(tmp_path):
    cmd = ["nvcc", "-O2", "-arch=sm_90", "-o", str(tmp_path / "fault_read"), str(ROOT / "benchmarks" / "fault_read.cu")]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
