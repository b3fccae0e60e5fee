"""Two result files, case by case: which got faster, which slower, which stayed the same
against the noise both runs measured.

Cases match on (scenario, case name, phase) and the device's name, unless the comparison is
asked to cross devices. A pair is SAME when B/A lies within the noise band
``max(floor, k · sqrt(noise_A² + noise_B²))`` around 1 (``noise_rel`` is each case's
relative spread of samples), FAST when B is quicker than that, SLOW when B is slower.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from umprof.core.errors import UsageError

FLOOR = 0.03  # a change under 3% is never called a change, however quiet both runs were
K = 2.0  # noise bands: two combined relative spreads


@dataclass
class Comparison:
    matched: pd.DataFrame  # scenario, case, phase, a_s, b_s, ratio, band, verdict
    only_a: list[tuple[str, str]]
    only_b: list[tuple[str, str]]
    device_a: str
    device_b: str

    def counts(self) -> dict[str, int]:
        c = self.matched["verdict"].value_counts()
        return {v: int(c.get(v, 0)) for v in ("SAME", "FAST", "SLOW")}


def device_name(rs) -> str:
    return rs.devices[0].get("name", "unknown GPU") if rs.devices else "unknown GPU"


def _ok(rs, phases: str) -> pd.DataFrame:
    f = rs.frame
    f = f[f["status"] == "ok"]
    if phases == "total":
        f = f[f["phase"] == "total"]
    elif phases != "all":
        f = f[f["phase"] == phases]
    noise = f["noise_rel"].astype(float) if "noise_rel" in f.columns else pd.Series(np.nan, index=f.index)
    return pd.DataFrame({"scenario": f["scenario"], "case": f["case"], "phase": f["phase"],
                         "t": f["time_median_s"].astype(float), "noise": noise})


def classify(ratio: float, noise_a: float, noise_b: float, floor: float = FLOOR, k: float = K) -> tuple[str, float]:
    """(verdict, band) for B/A = ratio; NaN noise counts as none measured."""
    na = 0.0 if noise_a is None or math.isnan(noise_a) else noise_a
    nb = 0.0 if noise_b is None or math.isnan(noise_b) else noise_b
    band = max(floor, k * math.hypot(na, nb))
    if abs(math.log(ratio)) <= math.log1p(band):
        return "SAME", band
    return ("FAST" if ratio < 1 else "SLOW"), band


def compare(a, b, phases: str = "total", across_devices: bool = False, floor: float = FLOOR,
            name_a: str = "A", name_b: str = "B") -> Comparison:
    """Match the two ResultSets' cases and classify each pair (see the module's docstring)."""
    dev_a, dev_b = device_name(a), device_name(b)
    if dev_a != dev_b and not across_devices:
        raise UsageError(f"{name_a} was measured on {dev_a}, {name_b} on {dev_b}: cases match only on the same device; "
                         "pass --across-devices to compare them anyway")
    fa, fb = _ok(a, phases), _ok(b, phases)
    m = fa.merge(fb, on=["scenario", "case", "phase"], suffixes=("_a", "_b"))
    m = m[(m["t_a"] > 0) & (m["t_b"] > 0)]
    cases_a = set(zip(a.frame["scenario"], a.frame["case"]))
    cases_b = set(zip(b.frame["scenario"], b.frame["case"]))
    if m.empty:
        raise UsageError(f"no case of {name_a} matches one of {name_b} (on scenario, case and phase '{phases}'): "
                         f"{len(cases_a)} cases against {len(cases_b)}")
    verdicts = [classify(r.t_b / r.t_a, r.noise_a, r.noise_b, floor) for r in m.itertuples()]
    out = pd.DataFrame({
        "scenario": m["scenario"], "case": m["case"], "phase": m["phase"], "a_s": m["t_a"], "b_s": m["t_b"],
        "ratio": m["t_b"] / m["t_a"], "band": [v[1] for v in verdicts], "verdict": [v[0] for v in verdicts],
    }).reset_index(drop=True)
    return Comparison(out, sorted(cases_a - cases_b), sorted(cases_b - cases_a), dev_a, dev_b)
