"""The timings run.sh wrote (walls.txt) as judge.py reads them (an apps.json), each mode under umprof's strategy name.

    python3 benchmarks/apps/verification/to_apps_json.py WALLS.txt OUT.json --gpu "NVIDIA H200, 580.159.04" --date ISO

run.sh's modes are umprof's strategy names but for ``registered`` (pageable-registered) and ``staged``
(pageable-staged); ``MODE-sampled`` (particles copying back only the particles it logs) and ``MODE-probe``
(monitor copying back only its probe) are variants of pinned or registered memory, named by the strategy
(``registered-sampled``: pageable-registered-sampled), which judge.py judges an advice that copies back only what
the host reads by; and ``once`` (recopy copying its table in once) is a variant of pageable memory, kept under its
own name. An application's own mode is the first run.sh
lists for it.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from benchmarks.apps.judge import PART_SUFFIXES  # noqa: E402  (the variants that copy back only what the host reads)

STRATEGY = {"registered": "pageable-registered", "staged": "pageable-staged"}


def strategy_name(mode: str) -> str:
    """run.sh's mode under umprof's strategy name (a variant's under its strategy's: registered-probe →
    pageable-registered-probe)."""
    for suffix in PART_SUFFIXES:
        if mode.endswith(f"-{suffix}"):
            return f"{strategy_name(mode[:-len(suffix) - 1])}-{suffix}"
    return STRATEGY.get(mode, mode)


def run_sh_modes(run_sh: Path) -> dict[str, list[str]]:
    """application → the modes run.sh times it in (its MODES table), its own mode first."""
    return {app: modes.split() for app, modes in re.findall(r'\[(\w+)\]="([^"]+)"', run_sh.read_text())}


def own_modes(run_sh: Path) -> dict[str, str]:
    """application → its own mode (the first run.sh lists)."""
    return {app: modes[0] for app, modes in run_sh_modes(run_sh).items()}


def to_apps(walls: Path, gpu: str, date: str) -> dict:
    own = own_modes(Path(__file__).with_name("run.sh"))
    modes: dict = collections.defaultdict(lambda: collections.defaultdict(lambda: {"wall_s": [], "checksum": None}))
    rounds = 0
    for line in walls.read_text().splitlines():
        app, mode, rnd, rc, wall, *rest = line.split()
        m = modes[app][strategy_name(mode)]
        rounds = max(rounds, int(rnd))
        if rc != "0":
            m["error"] = f"exit {rc}"
            continue
        m["wall_s"].append(float(wall))
        m["checksum"] = rest[0] if rest else None
    apps = {}
    for app, by_mode in modes.items():
        mine = strategy_name(own[app])
        sums = {m["checksum"] for m in by_mode.values() if m["wall_s"]}
        apps[app] = {"own_mode": mine, "command": f"{app} --mem {own[app]}", "checksums_agree": len(sums) == 1,
                     "modes": {mine: by_mode[mine], **{k: v for k, v in by_mode.items() if k != mine}}}
    return {"gpu": gpu, "date": date, "rounds": rounds, "apps": apps}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("walls", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--gpu", required=True)
    ap.add_argument("--date", required=True)
    a = ap.parse_args()
    a.out.write_text(json.dumps(to_apps(a.walls, a.gpu, a.date), indent=1))


if __name__ == "__main__":
    main()
