"""umprof's version and the result files' schema version."""

__version__ = "0.1.0"

# The version of the result files' layout (results.py writes it; readers check it).
SCHEMA_VERSION = 1
