"""The host/GPU bandwidth matrix from p2p and host-links rows, its heat map and report section."""

import math

import pandas as pd

from umprof.core.results import ResultSet
from umprof.model.topology import bandwidth_matrix

GiB = 1024**3


def _rows():
    rows = []
    for pair, rate in (("0>1", 390e9), ("1>0", 380e9)):
        for nbytes, scale in ((GiB // 4, 0.9), (GiB, 1.0)):
            for method, access in (("ce", "on"), ("ce", "off"), ("sm-read", "on")):
                rows.append({"scenario": "p2p", "op": "p2p", "case": f"{pair} {method} {access} {nbytes}", "phase": "p2p",
                             "status": "ok", "axis.pair": pair, "axis.method": method, "axis.peer_access": access,
                             "axis.bytes": nbytes, "bytes_per_s": rate * scale * (1 if (method, access) == ("ce", "on") else 0.5)})
    for direction, rate in (("h2d", 55e9), ("d2h", 54e9)):
        for g in (0, 1):
            for phase in (f"alone{g}", f"gpu{g}"):
                rows.append({"scenario": "host-links", "op": "host-links", "case": direction, "phase": phase, "status": "ok",
                             "axis.direction": direction, "axis.bytes": GiB, "bytes_per_s": rate if phase.startswith("alone") else 1.0})
    return pd.DataFrame(rows)


def test_matrix_reads_like_nvbandwidth():
    m = bandwidth_matrix(_rows(), [{"index": 0, "d2d_bytes_per_s": 8e12}])
    assert list(m.index) == list(m.columns) == ["host", "GPU 0", "GPU 1"]
    assert m.loc["GPU 0", "GPU 1"] == 390e9 and m.loc["GPU 1", "GPU 0"] == 380e9  # ce, peer access on, 1 GiB
    assert m.loc["host", "GPU 1"] == 55e9 and m.loc["GPU 0", "host"] == 54e9
    assert m.loc["GPU 0", "GPU 0"] == 4e12 and math.isnan(m.loc["GPU 1", "GPU 1"]) and math.isnan(m.loc["host", "host"])


def test_no_multi_gpu_rows_no_matrix():
    f = pd.DataFrame([{"scenario": "t", "op": "transfer", "case": "c", "phase": "h2d", "status": "ok"}])
    assert bandwidth_matrix(f).empty


def test_report_has_a_topology_section_and_plot_figures_include_it():
    from umprof.views import html, plots

    rs = ResultSet(_rows(), {}, [{"index": 0, "name": "H200", "host": "n1"}, {"index": 1, "name": "H200", "host": "n1"}])
    assert "topology" in [stem for stem, _ in plots.figures(rs, crossovers=False)]
    text = html.build([rs], ["x.parquet"], [])
    assert "id='topology'" in text and "390" in text and "<a href='#topology'>" in text
