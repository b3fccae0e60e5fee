"""What copying at once costs the ranks of one host: the host's concurrent figures, measured by the
``host-links`` scenario (every GPU's copies at once, one host thread each, beside each GPU alone).

A figure is per GPU model, direction and number of GPUs copying at once: the share of its own rate each
GPU keeps with the others running (``1 - sharing_cost`` at the largest size measured). Ranks that share
one GPU share its one link, which needs no measurement beyond the link's own rate: each gets its share.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from umprof.core.results import AXIS_PREFIX

DIRECTIONS = ("h2d", "d2h")


@dataclass(frozen=True)
class ConcurrentFigure:
    gpu: str
    direction: str
    gpus: int  # GPUs copying at once when it was measured
    kept: float  # each GPU's rate together over its rate alone
    source: str


@dataclass
class ConcurrentFigures:
    """The host-links figures at hand, looked up by GPU model, direction and GPUs at once."""

    figures: list[ConcurrentFigure] = field(default_factory=list)

    def lookup(self, gpu: str, direction: str, gpus: int) -> ConcurrentFigure | None:
        """The figure for ``gpus`` GPUs of model ``gpu`` copying at once: measured at that many, else at the
        fewest more (more sharing than the job's: a bound on what it keeps); None where none was measured."""
        fits = [f for f in self.figures if _same_gpu(f.gpu, gpu) and f.direction == direction and f.gpus >= gpus]
        return min(fits, key=lambda f: f.gpus) if fits else None

    def __bool__(self) -> bool:
        return bool(self.figures)


def concurrent_figures(named_sets) -> ConcurrentFigures:
    """The host-links figures of saved results: (name, ResultSet) pairs; sets without host-links rows add none."""
    out = []
    for source, rs in named_sets:
        frame = rs.frame
        if "op" not in frame or "sharing_cost" not in frame:
            continue
        rows = frame[(frame["op"] == "host-links") & (frame.get("status", "ok") == "ok")]
        if rows.empty:
            continue
        gpu = str((rs.devices or [{}])[0].get("name", ""))
        out += _figures(rows, gpu, str(source))
    return ConcurrentFigures(out)


def _figures(rows: pd.DataFrame, gpu: str, source: str) -> list[ConcurrentFigure]:
    out = []
    for (direction, gpus), g in rows.groupby([AXIS_PREFIX + "direction", "gpus"]):
        largest = g[g[AXIS_PREFIX + "bytes"].astype(float) == g[AXIS_PREFIX + "bytes"].astype(float).max()]
        cost = float(largest["sharing_cost"].median())
        if direction in DIRECTIONS and cost == cost:
            out.append(ConcurrentFigure(gpu, str(direction), int(gpus), 1.0 - cost, source))
    return out


def _same_gpu(a: str, b: str) -> bool:
    norm = lambda s: " ".join(s.lower().replace("nvidia", "").split())  # noqa: E731
    return bool(a) and norm(a) == norm(b)
