"""A job's traces advised as Dask tasks or in a local process pool."""

import os


def worker_pid(_) -> int:
    """The process a pool ran a task in (a function a spawned worker imports cheaply)."""
    return os.getpid()
