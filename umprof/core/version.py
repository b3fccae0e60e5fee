"""umprof's version and the result files' schema version."""

__version__ = "0.51.0"

# The version of the result files' layout (results.py writes it; readers check it).
#   1: the first layout.
#   2: every row carries ``case_wall_s`` (the case's wall time: preparation, warm-up, samples,
#      checks, counted sample) and ``time_p99_s``; the metadata ``setup_s``, ``wall_s``, ``budget_s``.
#   3: every row carries ``device`` (the GPU index it ran on; a p2p case's source), ``host`` and
#      ``rank`` (the process among an MPI run's); ``devices`` lists each GPU with its host and rank.
#   4: the loop op's ``wall_steady_s`` is the mean of the steady iterations (so that a run's
#      ``wall_s`` = ``wall_setup_s`` + iterations × ``wall_steady_s`` exactly), ``wall_steady_median_s``
#      their median (what ``wall_steady_s`` was before: a heavy-tailed loop's median hides its stalls).
SCHEMA_VERSION = 4
# Layouts this umprof reads: older ones are upgraded on load (missing columns become empty).
READABLE_SCHEMAS = (1, 2, 3, 4)
