"""Which host and rank wrote a trace (umprof.nsight.rank_info)."""

import shutil
import sqlite3

from umprof.nsight.rank_info import collective_kernels, rank_info
from umprof.nsight.trace_db import open_trace
from tests.unit.nsight.test_trace_db import fixture


def _with_env(src, dst, rows):
    shutil.copy(src, dst)
    con = sqlite3.connect(dst)
    con.execute("CREATE TABLE TARGET_INFO_SYSTEM_ENV (name TEXT NOT NULL, value TEXT NOT NULL)")
    con.executemany("INSERT INTO TARGET_INFO_SYSTEM_ENV VALUES (?, ?)", rows)
    con.commit()
    con.close()
    return dst


def test_the_host_and_the_launchers_rank_come_from_the_exports_environment(tmp_path):
    path = _with_env(fixture("stream_loop"), tmp_path / "report.sqlite",
                     [("Hostname", "node7"), ("DeviceEnvironment", "PATH=/usr/bin\nLOCAL_RANK=3\nRANK=11\nWORLD_SIZE=16")])
    assert tuple(rank_info(open_trace(path))) == ("node7", 11, 16, "environment")


def test_a_per_rank_file_name_gives_the_rank_where_the_trace_does_not(tmp_path):
    path = tmp_path / "report_5.sqlite"
    shutil.copy(fixture("stream_loop"), path)
    assert tuple(rank_info(open_trace(path))) == ("", 5, None, "file name")


def test_a_readers_own_rank_wins():
    t = open_trace(fixture("stream_loop"))
    t.host, t.rank, t.world_size = "gpu-node", 1, 2
    assert tuple(rank_info(t)) == ("gpu-node", 1, 2, "trace")


def test_collective_kernels_are_counted_by_name():
    t = open_trace(fixture("stream_loop"))
    assert collective_kernels(t) == 0
    t.kernels = t.kernels.assign(name=["ncclDevKernel_AllReduce_Sum_f32_RING_LL"] * len(t.kernels))
    assert collective_kernels(t) == len(t.kernels) > 0
