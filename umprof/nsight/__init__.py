"""nsight: what talks to NVIDIA's profilers and their annotations.

Owns the NVTX domain, phase names and colors (``nvtx``: also importable as ``umprof.nvtx``,
for annotating applications), finding tools on disk (``tools``), running under Nsight
Systems (``nsys``), reading any trace's tables with SQL (``trace_db``) and its NVTX phases back as a
ResultSet (``nsys_import``), torch.profiler's Chrome-trace JSON into the same tables (``kineto``; the
tables both fill: ``tables``), and the
Nsight Compute pass that measures sectors per request (``ncu``).

May import: ``umprof.core``. Never the GPU session, a model or a view.
"""
