"""A job's traces advised as Dask tasks (umprof.cluster.execute, api.advise_job): a Dask scheduler and two workers
started here, on 127.0.0.1 only, give the same answer as the local process pool; one bad rank is named, the others
advised."""

import json
import math
import os
import signal
import subprocess
import sys
from contextlib import contextmanager

import pytest
from click.testing import CliRunner

from umprof import api
from umprof.cli import cli
from umprof.cluster import execute
from tests.unit.data import ROOT
from tests.unit.nsight.test_trace_db import fixture

CLUSTER_S = 600  # the longest a Dask step may take (two traces on two workers: 20-270 s on 2 cores beside other work)
VOLATILE = ("seconds", "cpu_s", "worker", "peak_rss_bytes")  # where and how fast a rank was advised: not the answer


@contextmanager
def bounded(seconds: int):
    def stop(*_):
        raise TimeoutError(f"the Dask test ran past {seconds} s")

    old = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def steady(doc: dict) -> dict:
    """The answer without where and how fast each rank was advised."""
    doc = json.loads(json.dumps(doc, default=str))
    for r in doc["ranks"]:
        for k in VOLATILE:
            r.pop(k, None)
    return doc


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ranks")
    return [str(fixture("stream_loop", tmp)), str(fixture("pycuda_loop", tmp)), str(tmp / "missing_rank.sqlite")]


@pytest.fixture(scope="module")
def scheduler():
    distributed = pytest.importorskip("distributed")
    with bounded(CLUSTER_S):
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp",
                                           host="127.0.0.1", dashboard_address=None)
    try:
        assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
        yield cluster.scheduler_address
    finally:
        cluster.close()


def test_without_dask_several_inputs_run_in_a_process_pool_with_a_note(monkeypatch):
    monkeypatch.setattr(execute, "has_dask", lambda: False)
    notes = []
    out = execute.map_tasks(math.sqrt, [4.0, 9.0, -1.0], lambda x, e: f"{x}: {type(e).__name__}", workers=2,
                            note=notes.append)
    assert out == [2.0, 3.0, "-1.0: ValueError"]
    assert len(notes) == 1 and "dask[distributed] is not installed" in notes[0]


RENEWED_POOL = """
import json, sys
from umprof.cluster import execute
from tests.unit.cluster import worker_pid
execute.TASKS_PER_WORKER = 3
print(json.dumps(execute._pool_map(worker_pid, list(range(7)), lambda x, e: str(e), 1, execute.Progress(7, "done"))))
"""


def test_the_pools_workers_are_renewed_every_so_many_tasks_and_it_finishes():
    """A pool of one worker renewed every 3 tasks runs 7: three workers, every result in its input's order. In a
    process of its own, bounded: the pool's own max_tasks_per_child hangs here on Python 3.11 (CPython gh-115634),
    past any alarm (its shutdown waits too)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run([sys.executable, "-c", RENEWED_POOL], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    pids = json.loads(run.stdout)
    assert all(isinstance(p, int) for p in pids), pids
    assert [len(set(pids[i:i + 3])) for i in (0, 3, 6)] == [1, 1, 1] and len(set(pids)) == 3


def test_a_worker_advises_many_traces_before_it_is_renewed():
    assert execute.TASKS_PER_WORKER >= 256  # each renewal builds the calibration again (see its comment)


def test_one_input_runs_here():
    assert execute.map_tasks(math.sqrt, [16.0], lambda x, e: None) == [4.0]


def test_a_local_cluster_is_sized_to_the_cores_and_each_worker_bounded():
    n, memory = execute.local_size()
    assert 1 <= n and memory >= 1 << 28
    assert execute.local_size(3)[0] == 3


def test_a_scheduler_and_two_workers_give_the_local_answer(traces, scheduler, monkeypatch):
    with bounded(CLUSTER_S):
        on_dask = api.advise_job(traces, scheduler=scheduler)
    monkeypatch.setattr(execute, "has_dask", lambda: False)
    local = api.advise_job(traces, workers=2)
    assert steady(on_dask) == steady(local)
    job = on_dask["job"]
    assert job["totals"] == dict(job["totals"], traces=3, advised=2, failed=1)
    assert [p["code"] for p in job["problems"]] == ["rank-failed"] and "missing_rank.sqlite" in job["problems"][0]["text"]
    assert len({r["worker"] for r in on_dask["ranks"] if r.get("worker")}) >= 1


def test_advise_of_several_traces_prints_the_job_and_exits_1_for_a_failed_rank(traces, scheduler):
    with bounded(CLUSTER_S):
        r = CliRunner().invoke(cli, ["advise", *traces, "--scheduler", scheduler, "--json"])
    assert r.exit_code == 1, r.output
    doc = json.loads(r.stdout)
    assert doc["schema"] == 1 and set(doc["job"]) >= {"totals", "groups", "stragglers", "saving"}
    assert [g["count"] for g in doc["job"]["groups"]] == [1, 1] and len(doc["ranks"]) == 3
    assert "missing_rank.sqlite: no such trace file" in r.stderr


def test_a_job_of_which_no_trace_can_be_advised_says_so_in_one_line_and_exits_1(tmp_path):
    for rank in (0, 1):
        (tmp_path / f"rank-{rank}.json").write_text('{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "x", '
                                                    '"pid": 1, "tid": 1, "ts": 0, "dur": 5}]}')
    r = CliRunner().invoke(cli, ["advise", str(tmp_path), "--workers", "1"])
    assert r.exit_code == 1
    assert r.stdout.strip().splitlines() == ["0 of 2 traces advised"]
    assert r.stderr.count("without CUDA activity") == 2


def test_all_processes_is_one_traces_option(traces):
    r = CliRunner().invoke(cli, ["advise", *traces[:2], "--all"])
    assert r.exit_code == 2 and "--all: a job's traces" in r.output


def test_the_local_cluster_leaves_dasks_usual_port_to_whoever_holds_it():
    import socket
    import warnings

    distributed = pytest.importorskip("distributed")
    held = socket.socket()
    held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        held.bind(("", 8787))
        held.listen()
    except OSError:
        pass  # held by someone else already: the same case
    try:
        with bounded(CLUSTER_S), warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            with execute._client(distributed.Client, None, 1) as client:
                assert client.submit(math.sqrt, 4.0).result() == 2.0
    finally:
        held.close()
    assert not [w for w in said if "8787" in str(w.message)]
