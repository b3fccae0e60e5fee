"""The multi-GPU plan, ops' case making and the path ceilings: no GPU needed."""

import math

import pandas as pd

from umprof.measure.device import DeviceInfo, _bus, _share_links, link_summary
from umprof.measure.ops.um_peers import START, after_touches
from umprof.measure.runner import ceilings, device_plan
from umprof.measure.scenario import resolve
from umprof.views.terminal import where_groups


def _plan(names, devices):
    return [(d, s.name, [c.label for c in cases]) for d, s, cases in device_plan(resolve(names), devices)]


def test_each_scenario_runs_on_each_gpu_and_spanning_ones_once():
    plan = _plan(["transfers", "host-links"], [0, 1])
    assert [(d, n) for d, n, _ in plan] == [(0, "transfers"), (0, "host-links"), (1, "transfers")]
    one = _plan(["transfers"], [0])
    assert plan[0][2] == plan[2][2] == one[0][2]


def test_p2p_pairs_are_made_from_the_run_s_gpus():
    plan = dict(((d, n), c) for d, n, c in _plan(["p2p"], [0, 1, 2]))
    cases = plan[(0, "p2p")]
    one_way = [c for c in cases if "direction=one" in c and "method=ce" in c and "peer_access=on" in c and "bytes=4KiB" in c]
    assert [c.split()[0] for c in one_way] == ["pair=0>1", "pair=0>2", "pair=1>0", "pair=1>2", "pair=2>0", "pair=2>1"]
    both = [c for c in cases if "direction=both" in c and "method=ce" in c and "peer_access=on" in c and "bytes=4KiB" in c]
    assert [c.split()[0] for c in both] == ["pair=0>1", "pair=0>2", "pair=1>2"]
    chase = [c for c in cases if "method=chase" in c]
    assert len(chase) == 6 and all("bytes" not in c and "direction=one" in c for c in chase)
    # kernels cannot reach a peer's memory without peer access: those cases are not made
    assert not [c for c in cases if "method=sm" in c and "peer_access=off" in c]


def test_on_one_gpu_the_spanning_cases_stay_to_be_skipped():
    plan = _plan(["p2p", "um-peers"], [0])
    assert all("pair=all" in c for _, _, cases in plan for c in cases)


def test_um_peers_take_each_pair_once():
    (_, _, cases), = _plan(["um-peers"], [0, 1, 2])
    assert sorted({c.split()[0] for c in cases}) == ["pair=0>1", "pair=0>2", "pair=1>2"]


def test_touches_closed_form():
    import numpy as np

    x = np.array([START], np.uint32)
    for _ in range(3):
        x = x * np.uint32(3) + np.uint32(1)
    assert after_touches(START, 3) == x[0]


def test_link_summary_nvlink_and_pcie():
    nv = link_summary(18, 4, 63e9, 63e9, 50, True)
    assert nv["path"] == "NV18" and nv["bytes_per_s"] == 450e9
    pcie = link_summary(0, None, 63e9, 31.5e9, 30)
    assert pcie["path"] == "PHB" and pcie["bytes_per_s"] == 31.5e9
    assert link_summary(0, None, None, None, None)["bytes_per_s"] is None
    assert _bus("00000000:1B:00.0") == _bus("0000:1b:00.0") == "0000:1b:00.0"


def test_peer_ceilings_come_from_the_links_of_every_pair():
    a = DeviceInfo(0, "H200", "9.0", 132, 1, 1, 1, pcie_bytes_per_s=63e9)
    b = DeviceInfo(1, "H200", "9.0", 132, 1, 1, 1, pcie_bytes_per_s=63e9)
    a.peers["1"] = link_summary(18, 4, 63e9, 63e9, 50)
    b.peers["0"] = link_summary(18, 4, 63e9, 63e9, 50)
    _share_links([a, b])
    info = a.to_dict()
    assert ceilings(info, "peer:1-0") == (450e9, None) and ceilings(info, "peer-duplex:0-1") == (900e9, None)
    assert math.isnan(ceilings(info, "peer:0-7")[0])
    assert b.links["1-0"]["path"] == a.links["0-1"]["path"] == "NV18"  # every GPU knows every pair's path
    assert ceilings(info, "pcie-x2") == (126e9, None)


def test_rows_are_grouped_by_where_they_ran():
    df = pd.DataFrame({"case": ["a", "a", "a"], "host": ["n1", "n1", "n2"], "rank": [0, 0, 1], "device": [0, 1, 0]})
    names = [n for n, _ in where_groups(df)]
    assert names == ["host n1 rank 0 GPU 0", "host n1 rank 0 GPU 1", "host n2 rank 1 GPU 0"]
    assert [n for n, _ in where_groups(df.iloc[:1])] == [""]


def test_a_case_s_pair_is_checked_against_the_run_s_gpus():
    from types import SimpleNamespace

    import pytest

    from umprof.core.errors import CaseSkipped
    from umprof.measure.ops.legs import case_pair

    two = SimpleNamespace(devices=[0, 1])
    assert case_pair(two, "1>0") == (1, 0)
    with pytest.raises(CaseSkipped, match=r"needs two GPUs; the run has 1 \(GPU 0\)"):
        case_pair(SimpleNamespace(devices=[0]), "all")
    with pytest.raises(CaseSkipped, match=r"pair 0>3: GPU 3 is not among the run's 2 \(GPU 0, 1\); pass --device"):
        case_pair(two, "0>3")
