"""``map_tasks``: a task over many inputs, each a Dask task (results in the inputs' order, progress on stderr).

With ``scheduler`` the tasks go to that running Dask scheduler; else to a local cluster of one-thread worker
processes, as many as the machine's cores and memory allow, each bounded by a memory limit (a worker past it is
restarted by its nanny, its task reported failed), so that a thousand inputs never sit in one process: a task
returns its small result, not what it read. Without ``dask[distributed]`` several inputs run in a local process
pool, its workers renewed every ``TASKS_PER_WORKER`` tasks, with a one-line note; one input runs here. A task that
raises, or whose worker dies, becomes ``on_error(input, exception)``'s result, so that one bad input never stops
the others.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence

WORKER_MEMORY = 2 << 30  # the least memory a local worker gets: a trace's tables, its advice and the calibration
# A local pool's worker is started afresh after this many tasks (the pool runs in batches of workers × this many
# inputs), so that what advising leaves behind is freed. Large, because a new worker starts Python and umprof
# (~0.5 s) and builds its calibration again (api._BUILT: median 0.67 s, 0.07-0.86 s, over the 58 fixture traces of
# tests/fixtures/traces) where advising a trace takes a median 0.10 s once it is built: those traces twice over on
# 2 workers took 14.6 s renewed every 16 tasks, 9.4 s every 256. A worker grew 32 MiB over its first 58 traces and
# 48 MiB over 232 (its caches filling, then flat: 1 MiB over the last 58), far below WORKER_MEMORY. (Measured
# 2026-12, Python 3.11, 2 cores.) Not the pool's max_tasks_per_child: from Python 3.11 until CPython gh-115634's fix,
# the pool hangs once a worker leaves at that limit with tasks still queued (here: 17 tasks, one worker, 16 a worker).
TASKS_PER_WORKER = 256
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
    """The local pool: ``inputs`` in batches of ``workers`` × TASKS_PER_WORKER, each batch on new worker
    processes, so that a worker's memory is freed after at most TASKS_PER_WORKER tasks."""
    out = [None] * len(inputs)
    batch = workers * TASKS_PER_WORKER
    for start in range(0, len(inputs), batch):
        _pool_batch(task, inputs, range(start, min(start + batch, len(inputs))), on_error, workers, progress, out)
    return out


def _pool_batch(task, inputs, indices: range, on_error, workers: int, progress: Progress, out: list) -> None:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    # spawned, not forked: a fork copies the locks the parent's threads (pyarrow's, where it read files) may hold
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(task, inputs[i]): i for i in indices}
        for f in as_completed(futures):
            i = futures[f]
            try:
                out[i] = f.result()
            except Exception as e:
                out[i] = on_error(inputs[i], e)
            progress.step()


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
    # no dashboard; the scheduler's HTTP server (which serves without one) on a free port, not Dask's 8787, which
    # another cluster on the machine may hold (Dask then warns on stderr)
    cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, memory_limit=memory,
                           dashboard_address=None, scheduler_kwargs={"dashboard_address": ":0"},
                           silence_logs=logging.ERROR)
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
