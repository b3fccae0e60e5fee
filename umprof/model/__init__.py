"""model: what turns measurements into answers, with no GPU.

Owns the description of an application's loop (``workload``), predictions composed from a
calibration's phases (``predict``), the ranking with its reason and its verification against
measurements (``recommend``), crossovers along swept axes (``crossover``) and run-to-run
comparison against noise (``compare``), the framework a traced program is written with and each
change in its idiom (``frameworks``), and a PyTorch program's host-memory choices priced
(``torch_choices``). Everything here works on saved results.

May import: ``umprof.core``, ``umprof.nsight`` and ``umprof.measure`` (the lifecycle op's axes
and a Scenario, to describe the run that verifies a workload; never to run it). Never a view.
"""
