"""The committed H200 result files the unit tests read (no GPU needed)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results"
WORKLOADS = ROOT / "scenarios" / "workloads"
CAL = RESULTS / "nvidia-h200-calibration.parquet"
VERIFY = RESULTS / "nvidia-h200-verify-2.parquet"
CROSS = RESULTS / "nvidia-h200-crossovers.parquet"
MiB = 1024**2
