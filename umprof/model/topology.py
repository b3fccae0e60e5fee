"""The bandwidth matrix of a multi-GPU run, as nvbandwidth prints it: host and every GPU down
(the source), host and every GPU across (the destination), in bytes/s per direction.

GPU→GPU cells come from ``p2p`` rows (copy engines, one direction, peer access on, the largest
size measured); host→GPU and GPU→host cells from ``host-links`` rows (each GPU alone, the
largest size). Cells not measured are NaN; the diagonal is the device copy where known.
"""

from __future__ import annotations

import math

import pandas as pd

from umprof.core.results import AXIS_PREFIX

HOST = "host"


def _largest(rows: pd.DataFrame) -> pd.DataFrame:
    sized = rows[AXIS_PREFIX + "bytes"].astype(float)
    return rows[sized == sized.max()]


def bandwidth_matrix(frame: pd.DataFrame, devices: list[dict] | None = None) -> pd.DataFrame:
    """Source × destination bytes/s (labels 'host', 'GPU 0', ...); empty when the frame has
    neither p2p nor host-links results."""
    ok = frame[frame["status"] == "ok"] if "status" in frame else frame
    cells: dict[tuple[str, str], float] = {}
    p2p = ok[(ok["op"] == "p2p") & (ok["phase"] == "p2p")]
    if len(p2p):
        p2p = p2p[(p2p[AXIS_PREFIX + "method"] == "ce") & (p2p[AXIS_PREFIX + "peer_access"] == "on")]
    if len(p2p):
        for pair, g in _largest(p2p).groupby(AXIS_PREFIX + "pair"):
            a, b = (int(x) for x in str(pair).split(">"))
            cells[(f"GPU {a}", f"GPU {b}")] = float(g["bytes_per_s"].median())
    links = ok[(ok["op"] == "host-links") & ok["phase"].astype(str).str.startswith("alone")]
    if len(links):
        for (direction, phase), g in _largest(links).groupby([AXIS_PREFIX + "direction", "phase"]):
            gpu = f"GPU {int(str(phase)[len('alone'):])}"
            key = (HOST, gpu) if direction == "h2d" else (gpu, HOST)
            cells[key] = float(g["bytes_per_s"].median())
    if not cells:
        return pd.DataFrame()
    gpus = sorted({x for k in cells for x in k if x != HOST}, key=lambda s: int(s.split()[1]))
    labels = [HOST] + gpus
    out = pd.DataFrame(math.nan, index=labels, columns=labels)
    for (src, dst), v in cells.items():
        out.loc[src, dst] = v
    for d in devices or []:
        label = f"GPU {d.get('index')}"
        if label in out.index and d.get("d2d_bytes_per_s"):
            out.loc[label, label] = d["d2d_bytes_per_s"] / 2  # read + write counted: one direction's share
    out.index.name, out.columns.name = "from", "to"
    return out
