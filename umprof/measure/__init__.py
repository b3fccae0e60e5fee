"""measure: everything that runs on the GPU and times it.

Owns the driver session (``gpu``: pycuda loaded lazily, so importing this package needs no
GPU), device facts and ceilings (``device``), host-memory strategies (``strategies``),
kernels compiled before timing (``kernels``), CUDA-event timing and stopping rules
(``timing``), CUPTI unified-memory counters (``um_counters``), scenarios and their cases
(``scenario``), the ops that build phases (``ops/``), the sector model that ops put beside
their measurements (``sectors``) and the runner that turns cases into saved rows (``runner``).

May import: ``umprof.core`` and ``umprof.nsight`` (NVTX ranges, the ncu launch log).
Never ``umprof.model`` or ``umprof.views``.
"""
