"""Measure workloads under every strategy that applies, as `recommend --verify --verify-top all`
does, without a calibration: `recommend --from CAL --workload FILE --measured OUT` then checks
any prediction against them offline.

    python3 scripts/measure_workloads.py benchmarks/workloads/verify.toml OUT.parquet [STRATEGY,...]

A third argument names the strategies to measure (default: every one). In the environment:
ONLY=name,... measures those workloads alone (each keeps its scenario name); ROUNDS=N measures
them in N rounds, as `--verify-rounds` does (default 5); TIMEOUT=S sets each case's sampling
time in a round (default 2 s shared out over the rounds, at least one sample, no warm-up).
"""

import os
import sys

from rich.console import Console

import umprof
from umprof.measure.strategies import STRATEGIES
from umprof.model.recommend import VERIFY_ROUNDS, verification_rounds

workloads = umprof.workloads(sys.argv[1])
if os.environ.get("ONLY"):  # ONLY=name,name: those workloads alone (each keeps its scenario name)
    workloads = [w for w in workloads if w.name in os.environ["ONLY"].split(",")]
names = [s for s in STRATEGIES if s != "system"]  # the op skips what the device lacks (HMM) anyway
if len(sys.argv) > 3:
    names = [s for s in sys.argv[3].split(",") if s in STRATEGIES]
timing = {"timeout": float(os.environ["TIMEOUT"])} if os.environ.get("TIMEOUT") else None
scenarios = verification_rounds(workloads, [names] * len(workloads), int(os.environ.get("ROUNDS", VERIFY_ROUNDS)), timing)
rs = umprof.run(scenarios, output=sys.argv[2], force=True, console=Console(stderr=True), progress=False,
                argv=["scripts/measure_workloads.py", *sys.argv[1:]])
print(f"{len(rs.frame[rs.frame['phase'] == 'total'])} cases, {rs.failed_cases()} failed: {sys.argv[2]}")
