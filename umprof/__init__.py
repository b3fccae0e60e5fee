"""umprof: profile how data moves between host and NVIDIA GPUs, and choose a host-memory strategy.

The Python API (the CLI calls the same functions)::

    import umprof

    rs = umprof.load("results/nvidia-h200-default.parquet")    # .frame, .meta, .devices
    rec = umprof.recommend({"bytes": "256MiB", "reuse": 16, "iterations": 100}, gpu="H200")
    rec.to_frame()                                               # ranked: setup, steady, whole, phases
    print(rec.reason)

``umprof.run(scenario, axes=..., output=...)`` measures on a GPU; ``umprof.compare(a, b)`` and
``umprof.report(results, path)`` work on saved results. Everything importable from here works
without a GPU: the driver is loaded lazily when a measurement needs it.

Layers, each a subpackage whose docstring says what it owns and may import (imports go
downward only): ``core`` → ``nsight`` → ``measure`` → ``model`` → ``views`` → ``cluster`` → ``api`` → ``cli``.
"""

from umprof.api import (
           advise,
           advise_job,
           calibrate,
           calibrations,
           compare,
           estimate,
           load,
           load_calibration,
           recommend,
           report,
           run,
           select,
           verify,
           workloads,
)
from umprof.core.results import ResultSet
from umprof.core.version import SCHEMA_VERSION, __version__

__all__ = ["ResultSet", "SCHEMA_VERSION", "__version__", "advise", "advise_job", "calibrate", "calibrations", "compare", "estimate", "load", "load_calibration",
           "recommend", "report", "run", "select", "verify", "workloads"]
