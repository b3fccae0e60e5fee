"""umprof: profile how data moves between host and NVIDIA GPUs.

Everything importable from here works without a GPU; the driver is loaded lazily by
:mod:`umprof.gpu` when a command needs it.
"""

__version__ = "0.1.0"
SCHEMA_VERSION = 1
