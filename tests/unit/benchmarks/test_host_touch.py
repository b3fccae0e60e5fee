"""benchmarks/host_touch without a GPU: the program compiles (CI has nvcc), and the table reads a run's files into
what a touch costs untraced and traced, and their ratio (advise.TRACED_FAULT_SHARE)."""

import json
import shutil
import subprocess

import pytest

from tests.unit.data import ROOT, load_script
from tests.unit.nsight.synthetic_trace import App, Op, write_trace


@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_the_program_compiles(tmp_path):
    cmd = ["nvcc", "-O2", "-arch=sm_90", "-std=c++17", "-o", str(tmp_path / "host_touch"),
           str(ROOT / "benchmarks" / "host_touch.cu")]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_table_is_the_untraced_touch_against_the_traced_stall(tmp_path):
    # a rep: the kernel writes the buffer, then the host's touches bring 4 ms of pages back between kernels
    steps = [Op("kernel", dur_ns=1_000_000), Op("host", dur_ns=100_000),
             Op("copy", "um_d2h", 65536, dur_ns=4_000_000), Op("host", dur_ns=50_000)]
    write_trace(tmp_path / "traced-131072.sqlite", App(iterations=5, steps=steps, calls=["cudaMallocManaged"]))
    (tmp_path / "untraced.jsonl").write_text("".join(
        json.dumps({"spacing": 131072, "touches": 100, "host_s": s, "kernel_s": 0.001}) + "\n"
        for s in (0.0019, 0.002, 0.0021)))
    (tmp_path / "gpu.txt").write_text("NVIDIA H200, 580.159.04\n")
    (tmp_path / "date.txt").write_text("2026-12-01\n")
    t = load_script("benchmarks/host_touch_table.py").table(tmp_path)
    (row,) = t["rows"]
    assert (t["gpu"], t["date"], row["touches"], row["reps"]) == ("NVIDIA H200, 580.159.04", "2026-12-01", 100, 3)
    assert row["untraced_us"] == pytest.approx(20.0) and row["traced_us"] == pytest.approx(40.0, rel=0.01)
    assert t["median_ratio"] == row["ratio"] == pytest.approx(0.5, rel=0.01)
