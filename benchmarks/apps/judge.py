"""Judge `umprof advise` on the applications run_apps.py traced and timed: for each, the advice read
from its trace (its own mode), then every mode measured by wall clock: was the advised mode the
fastest measured or within 5% of it, and was the predicted saving within 20% of the measured one?

    python3 benchmarks/apps/judge.py APPS.json TRACES_DIR [--gpu NAME] [--json OUT.json]

``--json`` writes the judgement with the timings it judged (results/advise/*-judged-*.json, kept there
xz-compressed, which docs/verification.md is generated from). A judgement file, plain or .xz, serves as APPS.json
again: to judge it again at
today's model, extract the traces of the run it judged (`scripts/device.sh apps` writes them to
$OUT/GPU-traces.tar.gz; the repository keeps no traces of these runs) and

    tar xzf nvidia-h100-traces.tar.gz -C /tmp
    python3 benchmarks/apps/judge.py results/advise/nvidia-h100-judged-b.json.xz /tmp/traces --json OUT.json

Where an application's trace is not in TRACES_DIR but the advice umprof printed for it is
(``advise-APP.json``, `umprof advise --json`), that advice is judged.

A mode's measured time is the median of its runs' wall times (process start to exit); the saving
measured is the own mode's median less the advised mode's. Where the advice's change copies back only the part of
the buffer the host reads (`umprof.model.advise.PART_BACK`) and the application was timed in the advised mode's
variant that does so (``MODE-sampled``, ``MODE-probe``: PART_SUFFIXES), that variant is the advice applied (the
row's ``applied``); else the advised mode is. Applications timed in one mode only
(NVIDIA's cuda-samples as they are) are advised and shown, not judged.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from benchmarks.apps.rows_json import read_kept, rows_a_line  # noqa: E402

FASTEST_WITHIN = 0.05
SAVING_WITHIN = 0.20
# the names of a mode's variants that copy back only the part of the buffer the host reads (particles' sampled
# records, monitor's probe): MODE-SUFFIX
PART_SUFFIXES = ("sampled", "probe")


def held(walls: dict, mode: str) -> bool:
    """Whether a mode measured the fastest or within FASTEST_WITHIN of it (``walls``: mode → its median wall)."""
    return bool(mode in walls and walls[mode] <= (1 + FASTEST_WITHIN) * min(walls.values()))


def applied_mode(advised: str, change: str, modes) -> str:
    """The mode that applies the advice: the advised mode's variant that copies back only what the host reads,
    where the change says so and the application was timed in one (``modes``); else the advised mode."""
    from umprof.model.advise import PART_BACK

    if PART_BACK in (change or ""):
        for suffix in PART_SUFFIXES:
            if f"{advised}-{suffix}" in modes:
                return f"{advised}-{suffix}"
    return advised


class _Printed:
    """The parts of an advice that judge() reads, from `umprof advise --json`'s output."""

    def __init__(self, doc: dict):
        self.app = SimpleNamespace(strategy=doc["strategy_now"])
        self.verdict = doc["verdict"]
        loop = next((a for a in doc["advice"] if a["flow"] == "loop"), None)
        self.loop_advice = None if loop is None else SimpleNamespace(
            strategy=loop["strategy"], tie=loop["tie"], now_s=loop["now_s"], saving_s=loop["saving_s"],
            change=loop.get("change", ""))


def judge(apps_json: Path, traces: Path, gpu: str | None = None) -> list[dict]:
    from umprof import api

    doc = read_kept(Path(apps_json))
    rows = []
    for name, app in doc["apps"].items():
        trace = Path(traces) / f"{name}.sqlite"
        printed = Path(traces) / f"advise-{name}.json"
        if not trace.is_file() and printed.is_file():
            # the trace did not come back from the GPU machine: the advice umprof printed there (--json)
            adv = _Printed(json.loads(printed.read_text()))
        else:
            (adv,) = api.advise(trace, gpu=gpu)
        loop = adv.loop_advice
        walls = {m: statistics.median(v["wall_s"]) for m, v in app["modes"].items() if v["wall_s"]}
        own = app["own_mode"]
        advised = loop.strategy if loop is not None else own
        applied = applied_mode(advised, loop.change if loop is not None else "", walls)
        row = {"app": name, "gpu": doc["gpu"], "own": own, "detected": adv.app.strategy, "advised": advised,
               "applied": applied, "tie": bool(loop and loop.tie), "now_s": walls.get(own),
               "loop_s": loop.now_s if loop else None, "predicted_saving_s": loop.saving_s if loop else 0.0,
               "verdict": adv.verdict}
        if len(walls) > 1 and applied in walls:
            fastest = min(walls, key=walls.get)
            measured_saving = walls[own] - walls[applied]
            row.update(fastest=fastest, fastest_s=walls[fastest], advised_s=walls[applied],
                       measured_saving_s=measured_saving,
                       advised_vs_fastest=walls[applied] / walls[fastest] - 1,
                       held=held(walls, applied),
                       saving_error=(row["predicted_saving_s"] - measured_saving) / abs(measured_saving)
                       if measured_saving else None)
            # a saving within the runs' noise is no saving to judge against 20%: the runs say how far apart
            # one mode's own runs are
            spread = statistics.median([max(v["wall_s"]) - min(v["wall_s"]) for v in app["modes"].values() if v["wall_s"]])
            row["noise_s"] = spread
            row["saving_held"] = abs(row["predicted_saving_s"] - measured_saving) <= max(SAVING_WITHIN * abs(measured_saving),
                                                                                         spread)
        elif applied not in walls and len(walls) > 1:
            error = app["modes"].get(applied, {}).get("error")
            row.update(held=None, note=f"advised {applied}, whose runs failed ({error[-200:]})" if error
                       else f"advised {applied}, a mode this application was not timed in")
        rows.append(row)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("apps", type=Path)
    ap.add_argument("traces", type=Path)
    ap.add_argument("--gpu", default=None)
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    rows = judge(a.apps, a.traces, a.gpu)
    for r in rows:
        if "fastest" in r:
            as_ = f" as {r['applied']}" if r["applied"] != r["advised"] else ""
            print(f"{r['app']:14s} own {r['own']:16s} advised {r['advised']:16s}{' (tie)' if r['tie'] else '      '}{as_} "
                  f"fastest {r['fastest']:16s} {r['advised_vs_fastest']:+6.1%}  saving predicted "
                  f"{r['predicted_saving_s']:7.3f} s measured {r['measured_saving_s']:7.3f} s  held {r['held']} "
                  f"saving {r['saving_held']}")
        else:
            print(f"{r['app']:14s} own {r['own']:16s} advised {r['advised']:16s} (not judged: one mode timed) "
                  f"{r.get('note', '')}")
    if a.json:  # the judgement beside what it judged: the GPU, the timings of every mode, the calibration
        doc = read_kept(a.apps)
        a.json.write_text(rows_a_line({"gpu": doc["gpu"], "date": doc["date"], "rounds": doc["rounds"],
                                       "judged": rows, "apps": doc["apps"]}, default=str))


if __name__ == "__main__":
    main()
