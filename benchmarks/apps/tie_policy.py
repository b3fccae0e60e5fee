"""How the tie rule fares against the fastest prediction on every judged run: where strategies are predicted within
the prediction's own error, `umprof advise` picks the one that changes least code; would the fastest predicted have
measured faster?

    # the traces of every judged run (scripts/device.sh apps writes each run's to $OUT/GPU-traces.tar.gz;
    # the repository keeps none), one folder a judgement file: /tmp/tr/h100/traces/b/APP.sqlite, ...
    python3 benchmarks/apps/tie_policy.py /tmp/tr --json results/advise/tie-policy.json.xz
    python3 benchmarks/apps/tie_policy.py /tmp/tr --error 0.06     # the tie narrower than the prediction's error

Each judged file (results/advise/nvidia-*-judged-*.json, kept xz-compressed) gives an application's modes measured by wall clock in one
run on one GPU machine, and that run's trace is advised at today's model. Compared where both picks were measured: how often each was
the fastest or within 5% of it (judge.py's criterion, the advice as applied), and how far behind the fastest it
measured. Beside them, the prediction's error where a tie is decided: how far the predicted ratio between two measured
ways misses their measured ratio, over every pair and over the pairs predicted within the tie's error of each other;
how often the predicted saving came within 20% of the measured one (``savings``); and what the runs' own spread
leaves to predict (``ceilings``).
"""

from __future__ import annotations

import argparse
import lzma
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from benchmarks.apps.rows_json import read_kept, rows_a_line  # noqa: E402
from benchmarks.apps.judge import FASTEST_WITHIN, SAVING_WITHIN, applied_mode, held  # noqa: E402  (judge.py's criteria)

RUNS = 3  # the runs an application needs to have been measured in to say what its runs agree on


def run_apps(traces: Path) -> list[dict]:
    """Every judged application of every run whose trace is under ``traces`` (GPU/traces/RUN/APP.sqlite), with
    its modes' median walls, the advice and the ranking of today's model; those whose trace is not there are named on
    stderr."""
    from umprof import api

    rows, missing = [], []
    for f in sorted((ROOT / "results" / "advise").glob("nvidia-h*-judged-*.json*")):  # .json, or .json.xz as kept
        gpu = "h100" if "-h100-" in f.name else "h200"
        run = f.name.split(".json")[0].rsplit("-judged-", 1)[1]
        for name, app in read_kept(f)["apps"].items():
            walls = {m: statistics.median(v["wall_s"]) for m, v in app["modes"].items() if v.get("wall_s")}
            trace = traces / gpu / "traces" / run / f"{name}.sqlite"
            if len(walls) >= 2 and not trace.is_file():
                missing.append(f"{gpu}/{run}/{name}")
            if len(walls) < 2 or not trace.is_file():
                continue
            (adv,) = api.advise(trace)
            loop = adv.loop_advice
            advised = loop.strategy if loop else app["own_mode"]
            rows.append({"gpu": gpu, "run": run, "app": name, "own": app["own_mode"], "walls": walls,
                         "advised": advised, "applied": applied_mode(advised, loop.change if loop else "", walls),
                         "tie": bool(loop and loop.tie),
                         "fastest_predicted": adv.ranking[0]["strategy"] if adv.ranking else app["own_mode"],
                         "predicted_s": {r["strategy"]: r["predicted_s"] for r in adv.ranking}})
    if missing and rows:  # a judged application whose trace is not under ``traces``: left out, and said so
        print(f"no trace for {len(missing)} judged run-application(s), left out: {', '.join(missing)}", file=sys.stderr)
    return rows


def pair_errors(rows: list[dict], within: float) -> dict:
    """How far the predicted ratio between two measured ways misses their measured ratio (as a ratio less one):
    the median and 90th percentile over every pair of every judged application of a run, and over the pairs predicted within
    ``within`` of each other."""
    every, close = [], []
    for r in rows:
        pred, walls = r.get("predicted_s", {}), r["walls"]
        ways = [m for m in walls if pred.get(m, 0) > 0]
        for i, a in enumerate(ways):
            for b in ways[i + 1:]:
                predicted = math.log(pred[a] / pred[b])
                miss = abs(predicted - math.log(walls[a] / walls[b]))
                every.append(miss)
                if abs(predicted) <= math.log1p(within):
                    close.append(miss)

    def summary(misses):
        misses = sorted(misses)
        n = len(misses)
        return {"pairs": n, "median": math.expm1(statistics.median(misses)) if n else None,
                "p90": math.expm1(misses[int(0.9 * (n - 1))]) if n else None}
    return {"every": summary(every), "within": within, "close": summary(close)}


def measured_mode(r: dict, pick: str = "advised") -> str:
    """The mode whose wall judges a pick: the advice as applied (judge.py's ``applied_mode``: its variant that copies
    back only what the host reads, where the change says so and the application was timed in it), and the fastest
    prediction so where it is the advised way; else the pick's way itself."""
    if pick == "advised" or r[pick] == r["advised"]:
        return r.get("applied") or r["advised"]
    return r[pick]


def compare(rows: list[dict]) -> dict:
    """Each pick's record where both were measured: held (within FASTEST_WITHIN of the fastest), and how far behind."""
    both = [r for r in rows if measured_mode(r) in r["walls"] and measured_mode(r, "fastest_predicted") in r["walls"]]
    out = {"run_apps": len(rows), "both_measured": len(both),
           "differ": sum(r["advised"] != r["fastest_predicted"] for r in both)}
    for pick in ("advised", "fastest_predicted"):
        behind = sorted(r["walls"][measured_mode(r, pick)] / min(r["walls"].values()) - 1 for r in both)
        n = len(behind)
        out[pick] = {"held": sum(b <= FASTEST_WITHIN for b in behind), "mean_behind": sum(behind) / n if n else None,
                     "median_behind": statistics.median(behind) if n else None,
                     "p90_behind": behind[int(0.9 * (n - 1))] if n else None}
    return out


def within_saving(predicted, measured) -> bool:
    """judge.py's test of a saving: the predicted one within SAVING_WITHIN of the measured one (a plain bool: the
    predictions are numpy's floats, the counts go to JSON)."""
    return bool(abs(predicted / measured - 1) <= SAVING_WITHIN)


def savings(rows: list[dict]) -> dict:
    """The predicted saving against the measured one, over each judged application of a run whose advice, as applied
    (``measured_mode``), is a change measured both ways: how often it came within SAVING_WITHIN (judge.py's test,
    without its allowance for the runs' own spread), and the median of |predicted / measured - 1|."""
    errors = []
    for r in rows:
        w, p, a, o, m = r["walls"], r.get("predicted_s", {}), r["advised"], r["own"], measured_mode(r)
        if m != o and {m, o} <= set(w) and {a, o} <= set(p) and w[o] != w[m]:
            errors.append(abs((p[o] - p[a]) / (w[o] - w[m]) - 1))
    return {"run_apps": len(errors), "within": int(sum(e <= SAVING_WITHIN for e in errors)),
            "median_error": float(statistics.median(errors)) if errors else None}


def ceilings(rows: list[dict]) -> dict:
    """What the runs' own spread leaves to predict, over the applications measured in at least RUNS runs on one
    GPU, each advice judged as applied (``measured_mode``). Savings: each judged application of a run whose advice was
    a change measured both ways, against the median of the savings its runs measured for the same change (a figure
    fixed per application, known only afterwards): how often that lies within SAVING_WITHIN of the run's, beside how often
    the prediction does. Picks: the one mode per application that held (within FASTEST_WITHIN of the fastest) in most
    of its runs, chosen afterwards: how often it held, beside the advice."""
    def group(key):
        out = {}
        for r in rows:
            out.setdefault(key(r), []).append(r)
        return [g for g in out.values() if len(g) >= RUNS]

    def changed(r):
        w, p, a, o, m = r["walls"], r.get("predicted_s", {}), r["advised"], r["own"], measured_mode(r)
        return a != o and {m, o} <= set(w) and {a, o} <= set(p) and w[o] > w[m]

    n = fixed = model = 0
    for g in group(lambda r: (r["gpu"], r["app"], r["own"], r["advised"])):
        g = [r for r in g if changed(r)]
        if len(g) < RUNS:
            continue
        saved = [r["walls"][r["own"]] - r["walls"][measured_mode(r)] for r in g]
        middle = statistics.median(saved)
        for r, measured in zip(g, saved):
            n += 1
            fixed += within_saving(middle, measured)
            model += within_saving(r["predicted_s"][r["own"]] - r["predicted_s"][r["advised"]], measured)
    savings = {"run_apps": n, "median_of_runs": fixed, "predicted": model}

    n = best = advised = 0
    for g in group(lambda r: (r["gpu"], r["app"])):
        modes = set.intersection(*(set(r["walls"]) for r in g))
        if len(modes) < 2:
            continue
        mode = max(sorted(modes), key=lambda m: sum(held(r["walls"], m) for r in g))
        n += len(g)
        best += sum(held(r["walls"], mode) for r in g)
        advised += sum(held(r["walls"], measured_mode(r)) for r in g)
    return {"runs": RUNS, "savings": savings,
            "picks": {"run_apps": n, "best_mode_afterwards": best, "advised": advised}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("traces", type=Path, help="the judged runs' traces under GPU/traces/RUN/ (h100/traces/b/APP.sqlite, ...)")
    ap.add_argument("--json", type=Path, help="write the comparison and every run-application's picks")
    ap.add_argument("--error", type=float, help="the tie's width instead of the prediction's error (advise's "
                    "PREDICTION_ERROR, 0.10)")
    a = ap.parse_args()
    from umprof.model.advice import thresholds

    if a.error is not None:
        thresholds.PREDICTION_ERROR = a.error
    rows = run_apps(a.traces)
    if not rows:
        ap.error(f"{a.traces}: no judged run's trace found; expected h100/traces/RUN/APP.sqlite and "
                 "h200/traces/RUN/APP.sqlite there (the traces scripts/device.sh apps wrote for each judged run)")
    result = {"tie": thresholds.PREDICTION_ERROR, **compare(rows),
              "pair_errors": pair_errors(rows, thresholds.PREDICTION_ERROR)}
    result["savings"] = savings(rows)
    for gpu in ("h100", "h200"):
        result[gpu] = {**compare([r for r in rows if r["gpu"] == gpu]),
                       "savings": savings([r for r in rows if r["gpu"] == gpu])}
    result["ceilings"] = ceilings(rows)
    print(f"{result['run_apps']} run-applications judged; both picks measured in {result['both_measured']}, "
          f"different in {result['differ']}")
    for pick, label in (("advised", "as advised (a tie: the least code)"), ("fastest_predicted", "fastest predicted")):
        p = result[pick]
        if not result["both_measured"]:
            break
        print(f"  {label:36s} held {p['held']} of {result['both_measured']}, behind the fastest: mean "
              f"{p['mean_behind']:.1%}, median {p['median_behind']:.1%}, 90th percentile {p['p90_behind']:.1%}")
    pe = result["pair_errors"]
    if pe["every"]["pairs"]:
        print(f"  the predicted ratio of two ways misses the measured one by a median {pe['every']['median']:.1%} "
              f"({pe['every']['pairs']} pairs), {pe['close']['median'] or 0:.1%} where predicted within "
              f"{pe['within']:.0%} ({pe['close']['pairs']} pairs)")
    sv = result["savings"]
    if sv["run_apps"]:
        print(f"  the predicted saving came within {SAVING_WITHIN:.0%} of the measured one in {sv['within']} of "
              f"{sv['run_apps']} (median error {sv['median_error']:.1%}; H100 {result['h100']['savings']['within']} "
              f"of {result['h100']['savings']['run_apps']}, H200 {result['h200']['savings']['within']} of "
              f"{result['h200']['savings']['run_apps']})")
    c = result["ceilings"]
    if c["savings"]["run_apps"]:
        s, k = c["savings"], c["picks"]
        print(f"  over applications measured in {c['runs']} runs or more: the median saving of an application's "
              f"runs comes within {SAVING_WITHIN:.0%} of a run's in {s['median_of_runs']} of {s['run_apps']}, "
              f"the prediction in {s['predicted']}; the one mode that held most often, chosen afterwards, held in "
              f"{k['best_mode_afterwards']} of {k['run_apps']}, the advice in {k['advised']}")
    if a.json:
        text = rows_a_line({**result, "rows": rows})
        if a.json.suffix == ".xz":  # as committed: the rows compress tenfold
            a.json.write_bytes(lzma.compress(text.encode(), preset=9 | lzma.PRESET_EXTREME))
        else:
            a.json.write_text(text)


if __name__ == "__main__":
    main()
