"""umprof's version and the result files' schema version."""

__version__ = "0.1.0"

# The version of the result files' layout (results.py writes it; readers check it).
#   1: the first layout.
#   2: every row carries ``case_wall_s`` (the case's wall time: preparation, warm-up, samples,
#      checks, counted sample) and ``time_p99_s``; the metadata ``setup_s``, ``wall_s``, ``budget_s``.
#   3: every row carries ``device`` (the GPU index it ran on; a p2p case's source), ``host`` and
#      ``rank`` (the process among an MPI run's); ``devices`` lists each GPU with its host and rank.
SCHEMA_VERSION = 3
# Layouts this umprof reads: older ones are upgraded on load (missing columns become empty).
READABLE_SCHEMAS = (1, 2, 3)
