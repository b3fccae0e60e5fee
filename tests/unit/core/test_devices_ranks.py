"""GPU selection, GPU pairs, MPI ranks and the merge of their files: no GPU, no MPI needed."""

import sys

import pandas as pd
import pytest

from umprof.core.axes import AxisSpec
from umprof.core.devices import ALL, pairs, parse_devices, parse_pair, resolve_devices
from umprof.core.errors import UsageError
from umprof.core.ranks import MpiUnavailable, join, launcher, rank_path
from umprof.core.results import ResultSet, merge_results


@pytest.mark.parametrize("text, want", [("0", (0,)), ("1,0", (1, 0)), (" 0 , 2 ", (0, 2)), ("all", ALL), ("ALL", ALL),
                                        (3, (3,)), ([0, 1], (0, 1))])
def test_device_specs(text, want):
    assert parse_devices(text) == want


@pytest.mark.parametrize("text, match", [("x", "expected a GPU index"), ("0,0", "listed twice"), ("-1", "expected a GPU index"),
                                         ("", "expected a GPU index"), ("0,", "expected a GPU index")])
def test_bad_device_specs_name_the_option(text, match):
    with pytest.raises(UsageError, match=f"option '--device'.*{match}"):
        parse_devices(text)


def test_resolving_against_the_machine():
    assert resolve_devices(ALL, 2) == [0, 1]
    assert resolve_devices((1,), 2) == [1]
    with pytest.raises(UsageError, match=r"expected GPUs 0..1 \(this machine has 2 GPU\(s\)\), got 2"):
        resolve_devices((0, 2), 2)


def test_pairs():
    assert parse_pair("0>1") == (0, 1) and parse_pair(" 3 > 2 ") == (3, 2) and parse_pair("all") == ALL
    for bad in ("0>0", "0-1", "a>b", ">1"):
        with pytest.raises(UsageError, match="axis 'pair'"):
            parse_pair(bad)
    assert pairs([0, 1, 2]) == [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)]
    assert pairs([0, 1, 2], both_directions=True) == [(0, 1), (0, 2), (1, 2)]
    assert pairs([0]) == []


def test_pair_axis_parses_and_refuses():
    spec = AxisSpec("pair", "pair")
    assert spec.parse("0>1,1>0, all") == ["0>1", "1>0", "all"]
    with pytest.raises(UsageError, match="axis 'pair': a pair needs two different GPUs"):
        spec.parse("1>1")


@pytest.mark.parametrize("env, want", [
    ({}, None),
    ({"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_RANK": "1"}, ("Open MPI", 1, 2, 1)),
    ({"PMI_RANK": "0", "PMI_SIZE": "4"}, ("MPICH (Hydra)", 0, 4, None)),
    ({"SLURM_PROCID": "0", "SLURM_NTASKS": "1"}, None),  # a one-task job is no MPI run
    ({"SLURM_PROCID": "3", "SLURM_NTASKS": "8", "SLURM_LOCALID": "3"}, ("Slurm (srun)", 3, 8, 3)),
    ({"PMI_RANK": "x", "PMI_SIZE": "2"}, None),
])
def test_launchers_are_recognised_by_their_environment(env, want):
    assert launcher(env) == want


def test_a_lone_process_needs_no_mpi():
    w = join("auto", environ={})
    assert (w.rank, w.size, w.several, w.gather("x")) == (0, 1, False, ["x"])
    assert join("off", environ={"PMI_RANK": "0", "PMI_SIZE": "2"}).size == 1


def test_an_mpi_launch_without_mpi4py_is_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "mpi4py", None)  # import fails as if not installed
    with pytest.raises(MpiUnavailable, match=r"started by MPICH \(Hydra\) as rank 1 of 2, but mpi4py cannot be imported.*umprof\[mpi\]"):
        join("auto", environ={"PMI_RANK": "1", "PMI_SIZE": "2"})
    with pytest.raises(MpiUnavailable, match="--mpi was given"):
        join("on", environ={})


def test_rank_paths():
    assert str(rank_path("out/r.parquet", 3)) == "out/r.rank3.parquet"


def _rank_set(rank, host, failed=False):
    rows = [{"scenario": "transfers", "op": "transfer", "case": "bytes=1MiB", "phase": p, "status": "failed" if failed else "ok",
             "time_median_s": 1e-3 * (rank + 1), "device": 0, "host": host, "rank": rank} for p in ("h2d", "total")]
    return ResultSet(pd.DataFrame(rows), {"host": host, "wall_s": 10.0 + rank},
                     [{"index": 0, "name": "NVIDIA H200", "host": host, "rank": rank}])


def test_merge_keeps_every_rank_apart():
    merged = merge_results([_rank_set(0, "a"), _rank_set(1, "b", failed=True)])
    f = merged.frame
    assert len(f) == 4 and list(f["rank"]) == [0, 0, 1, 1] and set(f["host"]) == {"a", "b"}
    assert [(d["host"], d["rank"]) for d in merged.devices] == [("a", 0), ("b", 1)]
    assert [r["rank"] for r in merged.meta["ranks"]] == [0, 1] and merged.meta["ranks"][1]["failed"] == 1
    assert merged.meta["wall_s"] == 11.0
    assert merged.failed_cases() == 1  # the same case failed on one rank only


def test_merged_file_round_trips(tmp_path):
    merged = merge_results([_rank_set(0, "a"), _rank_set(1, "b")], ranks=[{"rank": 0}, {"rank": 1}])
    merged.save(tmp_path / "m.parquet")
    back = ResultSet.load(tmp_path / "m.parquet")
    assert list(back.frame["host"]) == ["a", "a", "b", "b"] and back.meta["ranks"] == [{"rank": 0}, {"rank": 1}]


def test_merge_of_nothing_is_refused():
    with pytest.raises(UsageError, match="nothing to merge"):
        merge_results([])


def test_version_2_files_get_their_device_host_and_rank(tmp_path):
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    frame = pd.DataFrame([{"scenario": "s", "op": "transfer", "case": "c", "phase": "total", "status": "ok"}])
    table = pa.Table.from_pandas(frame, preserve_index=False)
    header = {"schema_version": 2, "meta": {"host": "old"}, "devices": [{"index": 1, "host": "box"}]}
    pq.write_table(table.replace_schema_metadata({b"umprof": json.dumps(header).encode()}), tmp_path / "v2.parquet")
    f = ResultSet.load(tmp_path / "v2.parquet").frame
    assert (f["device"].iloc[0], f["host"].iloc[0], f["rank"].iloc[0]) == (1, "box", 0)


class _TwoRanks:
    """mpi4py's COMM_WORLD as rank 0 of two sees it, with rank 1's report given."""

    def __init__(self, other):
        self.other = other

    def gather(self, obj, root=0):
        return [obj, self.other]

    def bcast(self, obj, root=0):
        return obj

    def Barrier(self):
        pass


def test_rank_0_merges_the_ranks_files_and_removes_them(tmp_path):
    from umprof.api import _merge_ranks
    from umprof.core.ranks import World

    out = tmp_path / "r.parquet"
    mine, theirs = rank_path(out, 0), rank_path(out, 1)
    _rank_set(0, "a").save(mine)
    _rank_set(1, "b").save(theirs)
    other = {"rank": 1, "host": "b", "file": str(theirs), "error": None, "rows": 2, "failed": 0, "wall_s": 11.0}
    world = World(rank=0, size=2, host="a", comm=_TwoRanks(other))
    rs = _merge_ranks(world, str(out), str(mine), ResultSet.load(mine), None, None)
    assert sorted(rs.frame["rank"].unique()) == [0, 1] and [r["rank"] for r in rs.meta["ranks"]] == [0, 1]
    assert out.is_file() and not mine.exists() and not theirs.exists()


def test_a_failed_rank_fails_every_rank_and_keeps_the_others_cases(tmp_path):
    from umprof.api import _merge_ranks
    from umprof.core.errors import UmprofError
    from umprof.core.ranks import World

    out = tmp_path / "r.parquet"
    mine = rank_path(out, 0)
    _rank_set(0, "a").save(mine)
    other = {"rank": 1, "host": "b", "file": str(rank_path(out, 1)), "error": ("rank 1 on b: no GPU", 3)}
    world = World(rank=0, size=2, host="a", comm=_TwoRanks(other))
    with pytest.raises(UmprofError, match=r"rank 1 on b: no GPU \(the other ranks' cases are in .*r.parquet\)") as e:
        _merge_ranks(world, str(out), str(mine), ResultSet.load(mine), None, None)
    assert e.value.exit_code == 3
    assert list(ResultSet.load(out).frame["rank"].unique()) == [0]


class _RankOne:
    """COMM_WORLD as rank 1 sees it: rank 0 gathers, broadcasts no error."""

    def gather(self, obj, root=0):
        return None

    def bcast(self, obj, root=0):
        return None


def test_the_other_ranks_get_their_own_rows_marked_with_their_rank(tmp_path):
    from umprof.api import _merge_ranks
    from umprof.core.ranks import World

    mine = rank_path(tmp_path / "r.parquet", 1)
    _rank_set(1, "b").save(mine)
    rs = _merge_ranks(World(rank=1, size=2, host="b", comm=_RankOne()), str(tmp_path / "r.parquet"), str(mine),
                      ResultSet.load(mine), None, None)
    assert rs.meta["rank"] == 1 and set(rs.frame["rank"]) == {1}
