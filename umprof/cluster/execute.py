"""``map_tasks``: a task over many inputs, each a Dask task (results in the inputs' order, progress on stderr).

With ``scheduler`` the tasks go to that running Dask scheduler; else to a local cluster of one-thread worker
processes, as many as the machine's cores and memory allow, each bounded by a memory limit (a worker past it is
restarted by its nanny, its task reported failed), so that a thousand inputs never sit in one process: a task
returns its small result, not what it read. Without ``dask[distributed]`` several inputs run in a local process
pool, with a one-line note; one input runs here. A task that raises, or whose worker dies, becomes
``on_error(input, exception)``'s result, so that one bad input never stops the others.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence

WORKER_MEMORY = 2 << 30  # the least memory a local worker gets: a trace's tables, its advice and the calibration
PROGRESS_EVERY_S = 1.0  # the progress line is rewritten at most this often (and at the end)
CLUSTER_EXTRA = 'pip install "umprof[cluster]"'


def has_dask() -> bool:
    """Whether ``dask.distributed`` can be imported."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        return False
    return True


def local_size(workers: int | None = None) -> tuple[int, int]:
    """Local workers and each one's memory limit (bytes): one a core, fewer where memory does not give each
    ``WORKER_MEMORY``, or ``workers`` if given; the machine's memory shared among them."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    n = workers or max(1, min(cores, memory // WORKER_MEMORY))
    return n, max(memory // n, 1 << 28)


class Progress:
    """'umprof: N/TOTAL what' on stderr, rewritten in place on a terminal, a line a second elsewhere."""

    def __init__(self, total: int, what: str, stream=None):
        self.total, self.what, self.done, self.last = total, what, 0, 0.0
        self.stream = stream or sys.stderr

    def step(self) -> None:
        self.done += 1
        now = time.monotonic()
        if self.done == self.total or now - self.last >= PROGRESS_EVERY_S:
            self.last = now
            tty = getattr(self.stream, "isatty", lambda: False)()
            start, end = ("\r", "\n" if self.done == self.total else "") if tty else ("", "\n")
            self.stream.write(f"{start}umprof: {self.done}/{self.total} {self.what}{end}")
            self.stream.flush()


def map_tasks(task: Callable, inputs: Sequence, on_error: Callable, *, scheduler: str | None = None,
              workers: int | None = None, what: str = "done", note: Callable[[str], None] | None = None) -> list:
    """``task(x)`` for every input, in their order (see the module's docstring). ``note`` gets the one-line
    notes (to stderr by default)."""
    note = note or (lambda s: print(f"umprof: {s}", file=sys.stderr))
    inputs = list(inputs)
    if scheduler is None and len(inputs) <= 1:
        return [_guarded(task, x, on_error) for x in inputs]
    progress = Progress(len(inputs), what)
    if scheduler is not None or has_dask():
        return _dask_map(task, inputs, on_error, scheduler, workers, progress)
    n = workers or local_size()[0]
    note(f"dask[distributed] is not installed: {len(inputs)} inputs run in a local pool of {n} processes "
         f"(for a cluster: {CLUSTER_EXTRA})")
    return _pool_map(task, inputs, on_error, n, progress)


def _guarded(task: Callable, x, on_error: Callable):
    try:
        return task(x)
    except Exception as e:  # one input's failure is its result; the others go on
        return on_error(x, e)


def _pool_map(task, inputs, on_error, workers: int, progress: Progress) -> list:
    from concurrent.futures import ProcessPoolExecutor, as_completed

    out = [None] * len(inputs)
    recycle = {"max_tasks_per_child": _TASKS_PER_PROCESS} if sys.version_info >= (3, 11) else {}
    with ProcessPoolExecutor(max_workers=workers, **recycle) as pool:
        futures = {pool.submit(task, x): i for i, x in enumerate(inputs)}
        for f in as_completed(futures):
            i = futures[f]
            try:
                out[i] = f.result()
            except Exception as e:
                out[i] = on_error(inputs[i], e)
            progress.step()
    return out


_TASKS_PER_PROCESS = 16  # a pool's process is replaced after this many tasks, so that what they leave behind is freed


def _dask_map(task, inputs, on_error, scheduler: str | None, workers: int | None, progress: Progress) -> list:
    try:
        from distributed import Client, as_completed
    except ImportError:
        from umprof.core.errors import UsageError

        raise UsageError(f"--scheduler needs dask[distributed]: {CLUSTER_EXTRA}") from None
    with _client(Client, scheduler, workers) as client:
        futures = client.map(task, inputs, pure=False)
        where = {f.key: i for i, f in enumerate(futures)}
        out = [None] * len(inputs)
        for f in as_completed(futures):
            i = where[f.key]
            try:
                out[i] = f.result()
            except Exception as e:  # the task raised, or its worker died (past its memory limit)
                out[i] = on_error(inputs[i], e)
            f.release()
            progress.step()
        return out


def _client(Client, scheduler: str | None, workers: int | None):
    """A client of the scheduler at ``scheduler``, else of a local cluster (closed with the client)."""
    import logging

    if scheduler is not None:
        try:
            return Client(scheduler, timeout="10s")
        except OSError as e:
            from umprof.core.errors import UsageError

            raise UsageError(f"--scheduler {scheduler}: no Dask scheduler answered there ({e})") from None
    from distributed import LocalCluster

    n, memory = local_size(workers)
    cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, memory_limit=memory,
                           dashboard_address=None, silence_logs=logging.ERROR)
    client = Client(cluster)
    return _Closing(client, cluster)


class _Closing:
    """A client and the local cluster it owns, closed together."""

    def __init__(self, client, cluster):
        self.client, self.cluster = client, cluster

    def __enter__(self):
        return self.client

    def __exit__(self, *exc):
        self.client.close()
        self.cluster.close()
