"""The committed result files the unit tests read (no GPU needed).

``results/`` holds what the documentation cites (the verification sets' measurements among them);
``tests/fixtures/results/`` holds what only tests read: the calibrations the model's unit tests were
written against (the first loop calibration of the H200, and calibration-7 of each GPU, 2026-11-23,
which the verification sets were judged by) and the first verification set measured under every
strategy.
"""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results"
VERIFICATION = RESULTS / "verification"
FIXTURES = ROOT / "tests" / "fixtures" / "results"
WORKLOADS = ROOT / "benchmarks" / "workloads"
SHIPPED = ROOT / "umprof" / "calibrations"
CAL7 = {gpu: FIXTURES / f"nvidia-{gpu}-loop-calibration-7.parquet" for gpu in ("h200", "h100")}
CAL = FIXTURES / "nvidia-h200-loop-calibration-1.parquet"  # the first loop calibration (H200, 2026-11-22), of many model tests
VERIFY = FIXTURES / "nvidia-h200-loop-verify.parquet"  # verify.toml measured under every strategy (2026-11-22)


def load_script(path: str):
    """A script of the repository (``benchmarks/...``, ``scripts/...``: not a package) imported as a module."""
    spec = importlib.util.spec_from_file_location(Path(path).stem, ROOT / path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def holdout(gpu: str, n: int, *tags: str) -> list[Path]:
    """A verification set's measured runs on one GPU (``-b``: a second run on the same lease)."""
    return [VERIFICATION / f"nvidia-{gpu}-loop-holdout-{n}{tag}.parquet" for tag in ("", *tags)]


CROSS = RESULTS / "nvidia-h200-crossovers.parquet"
MiB = 1024**2
