"""Several GPUs (issue 16): every scenario per GPU, GPU to GPU copies and latency, every host
link at once, managed memory moving between GPUs, and an MPI run of two ranks merged into one
file. Each run is the CLI in a fresh process, as a user runs it; the tests that need two GPUs
skip on one with that reason, and on one GPU the spanning scenarios must skip their cases.
Orderings go through ``assert_faster`` (margins logged to $UMPROF_MARGINS)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gpu.helpers import assert_faster
from umprof.core.results import ResultSet

ROOT = Path(__file__).resolve().parents[2]


def _umprof(*args, launcher=(), timeout=400, env=None):
    cmd = [*launcher, sys.executable, "-m", "umprof", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=timeout, env=env)


def _run(tmp_path, *args, name="r.parquet"):
    out = tmp_path / name
    p = _umprof("run", *args, "-o", out, "-q")
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    return ResultSet.load(out).frame


def _ok(f):
    bad = f[f["status"] != "ok"][["case", "reason"]].drop_duplicates().values.tolist()
    assert not bad, bad


@pytest.fixture(scope="module")
def gpus(session):
    return session.cuda.Device.count()


@pytest.fixture(scope="module")
def two_gpus(gpus):
    if gpus < 2:
        pytest.skip(f"needs two GPUs; this machine has {gpus}")
    return gpus


def test_spanning_scenarios_skip_their_cases_on_one_gpu(tmp_path, gpus):  # gpus: skipped without a GPU
    f = _run(tmp_path, "p2p", "host-links", "um-peers", "--device", "0", "-a", "bytes=1MiB", "-a", "method=ce")
    tot = f[f["phase"] == "total"]
    assert set(tot["status"]) == {"skipped"}, tot[["case", "status", "reason"]].values.tolist()
    assert tot["reason"].str.contains("needs two GPUs").all()


def test_each_scenario_runs_on_each_gpu(tmp_path, two_gpus):
    f = _run(tmp_path, "transfers", "--device", "all", "-a", "strategy=pinned", "-a", "bytes=256MiB")
    _ok(f)
    h2d = f[f["phase"] == "h2d"].set_index("device")["bytes_per_s"]
    assert sorted(h2d.index) == list(range(two_gpus))
    assert h2d.min() > 0.7 * h2d.max(), h2d.to_dict()  # the same kind of link on every GPU


def test_p2p_copies_reach_the_link_and_both_ways_beat_one(tmp_path, two_gpus):
    f = _run(tmp_path, "p2p", "--device", "0,1", "-a", "bytes=256MiB", "-a", "method=ce,sm-read,sm-write,chase")
    _ok(f)
    one = f[(f["phase"] == "p2p") & (f["axis.peer_access"] == "on")]
    assert len(one) == 6  # 3 methods x 2 ordered pairs
    for _, r in one.iterrows():
        assert r["ceiling_bytes_per_s"] > 0, r["case"]
        assert r["util"] > 0.5, (r["case"], r["util"])  # peer access on: GPU to GPU at over half the path
    ce = one[one["axis.method"] == "ce"]
    both = f[(f["phase"] == "both") & (f["axis.method"] == "ce") & (f["axis.peer_access"] == "on")].iloc[0]
    assert_faster("p2p 256MiB ce: both directions (sum) vs one", ce["bytes_per_s"].max(), both["bytes_per_s"], 1.3)
    lat = f[f["phase"] == "latency"]
    assert len(lat) == 2 and lat["time_median_s"].between(2e-7, 2e-5).all(), lat["time_median_s"].tolist()


def test_every_host_link_at_once_beats_one_alone(tmp_path, two_gpus):
    f = _run(tmp_path, "host-links", "-a", "bytes=256MiB", "--device", "all")
    _ok(f)
    for direction in ("h2d", "d2h"):
        d = f[f["axis.direction"] == direction]
        alone = d[d["phase"].str.startswith("alone")]["bytes_per_s"].max()
        together = d[d["phase"] == "all"]["bytes_per_s"].iloc[0]
        assert_faster(f"host-links 256MiB {direction}: all GPUs (sum) vs the best alone", alone, together, 1.3)
        assert -0.1 < d["sharing_cost"].iloc[0] < 0.5


def test_managed_pages_move_between_gpus_unless_the_peer_maps_them(tmp_path, two_gpus):
    f = _run(tmp_path, "um-peers", "--device", "0,1", "-a", "bytes=256MiB")
    _ok(f)

    def phase(advice, name):
        return f[(f["axis.advice"] == advice) & (f["phase"] == name)].iloc[0]

    def migrations(row):
        return sum(0 if row.get(c) is None or row.get(c) != row.get(c) else row[c]
                   for c in ("um_dtod_migrations", "um_htod_migrations", "um_dtoh_migrations"))

    on_a, on_b = phase("none", "on_a"), phase("none", "on_b")
    assert_faster("um-peers 256MiB none: GPU B's touch (pages migrate) vs GPU A's (local)",
                  on_a["time_median_s"], on_b["time_median_s"], 1.5)
    # CUPTI counts GPU-to-GPU migrations (on the H200 pair it stamped only part of the bytes
    # inside the phase, so the count is asserted, not the bytes)
    assert migrations(on_b) > 0, on_b.filter(like="um_").to_dict()
    mapped = phase("accessed-by", "on_b")
    assert migrations(mapped) == 0, mapped.filter(like="um_").to_dict()  # the peer maps the pages: none move
    assert_faster("um-peers 256MiB: GPU B's touch mapped (accessed-by) vs migrating", mapped["time_median_s"],
                  on_b["time_median_s"], 3)


def test_devices_show_the_paths_between_gpus(two_gpus):
    p = _umprof("devices", "--device", "all", "--no-measure")
    assert p.returncode == 0, p.stderr
    assert "GPU-to-GPU paths" in p.stdout
    assert any(tag in p.stdout for tag in ("NV", "PIX", "PXB", "PHB", "NODE", "SYS")), p.stdout


def test_two_mpi_ranks_merge_into_one_file(tmp_path, two_gpus):
    mpiexec = shutil.which("mpiexec")
    if mpiexec is None:
        pytest.skip("no mpiexec on PATH (pip install mpich mpi4py, or an MPI from the system)")
    out = tmp_path / "merged.parquet"
    env = dict(os.environ)
    if os.geteuid() == 0:  # the GPU machines run as root, which Open MPI's mpiexec refuses unless told
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    p = _umprof("run", "transfers", "-a", "strategy=pinned", "-a", "bytes=16MiB,256MiB", "-o", out, "-q",
                launcher=(mpiexec, "-n", "2"), env=env)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    rs = ResultSet.load(out)
    f = rs.frame
    assert sorted(f["rank"].unique()) == [0, 1] and sorted(f["device"].unique()) == [0, 1]
    per_rank = f.groupby("rank")["case"].nunique().tolist()
    assert per_rank[0] == per_rank[1] > 0, per_rank  # each rank ran every case
    assert [r["rank"] for r in rs.meta["ranks"]] == [0, 1] and len(rs.devices) == 2
    assert not list(tmp_path.glob("merged.rank*")), "the ranks' files are removed once merged"
    _ok(f)
    assert os.path.getsize(out) > 0
