"""Which host and rank wrote a trace (umprof.nsight.rank_info)."""

import shutil
import sqlite3

from umprof.nsight.rank_info import collective_kernels, rank_info
from umprof.nsight.trace_db import open_trace
from tests.unit.data import TRACES, readable, unpacked
from tests.unit.nsight.test_trace_db import fixture

TORCH = readable(TRACES / "torch")


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
    t.host, t.rank, t.world_size, t.rank_from = "gpu-node", 1, 2, "trace"  # as the torch.profiler reader sets them
    assert tuple(rank_info(t)) == ("gpu-node", 1, 2, "trace")


def test_the_export_is_read_once_its_rank_with_it(tmp_path):
    """A real torchrun rank's export (h100-ddp_train-rank1): host, rank and world size are read with its tables, so
    that rank_info needs no second look at the file; a misleading file name does not win over them."""
    path = unpacked(TORCH / "h100-ddp_train-rank1.sqlite", tmp_path)
    misnamed = path.rename(tmp_path / "report_0.sqlite")
    t = open_trace(misnamed)
    assert (t.host, t.rank, t.world_size, t.rank_from) == ("vm", 1, 2, "environment")
    misnamed.unlink()  # what rank_info says comes from the tables alone
    assert tuple(rank_info(t)) == ("vm", 1, 2, "environment")


def test_the_kineto_traces_rank_is_its_distributed_info(tmp_path):
    t = open_trace(TORCH / "h100-ddp_train-rank0.json.gz")
    assert tuple(rank_info(t)) == ("", 0, 2, "trace")


def test_collective_kernels_are_counted_by_name():
    t = open_trace(fixture("stream_loop"))
    assert collective_kernels(t) == 0
    t.kernels = t.kernels.assign(name=["ncclDevKernel_AllReduce_Sum_f32_RING_LL"] * len(t.kernels))
    assert collective_kernels(t) == len(t.kernels) > 0
