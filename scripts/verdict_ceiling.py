"""How many top picks a model that knew every strategy's true time would hold, judged as
`recommend --verify` judges (within 5% of the fastest by the median over five rounds), on a
workload set's measurements: the ceiling the verdicts of a real model are read against.

    python3 scripts/verdict_ceiling.py CAL[,CAL ...] SET.toml RESULTS [RESULTS ...]

CAL: the calibration's result files, comma-separated where it was measured in parts.

Each strategy's true time is taken as its median over every round of every RESULTS file; runs
of five rounds are drawn from those rounds (whole rounds, with replacement, so that a slow spell
of the machine weighs on every strategy of its round, as it does), and in each the true fastest
and the calibration's top pick are judged. Prints, per workload and mode, how often each held,
and the expected count out of the set with the chance of 13 or more (the issue's bar for 14).
"""

import sys

import numpy as np

from umprof import api
from umprof.model import recommend as r
from umprof.model.workload import load_workloads

DRAWS = 4000
JUDGE_ROUNDS = 5


def main(cal_path: str, set_path: str, results: list[str]) -> None:
    cal = api.load_calibration(cal_path.split(","))
    frame, _ = api.measured_frame(results)
    workloads = load_workloads(set_path)
    rng = np.random.default_rng(1)
    for steady in (False, True):
        mode, fig = ("steady", 1) if steady else ("whole", 0)
        perfect, model = [], []
        for k, rec in enumerate(r.recommend_all(cal, workloads, steady)):
            per = r.measured_rounds(frame, r.verification_name(rec.workload, k), rec.workload)
            names = [p.strategy for p in rec.ranked if p.strategy in per]
            if rec.top.strategy not in names:
                continue  # a workload the run did not reach (a call cut short) or whose top pick it did not measure
            keys = sorted(set.intersection(*(set(per[s]) for s in names)))
            rounds = np.array([[per[s][key][fig] for s in names] for key in keys])
            rounds = rounds[~np.isnan(rounds).any(axis=1)]
            if not len(rounds):
                continue
            best, pick = int(np.argmin(np.median(rounds, axis=0))), names.index(rec.top.strategy)
            held_best = held_pick = 0
            for _ in range(DRAWS):
                judge = np.median(rounds[rng.integers(0, len(rounds), JUDGE_ROUNDS)], axis=0)
                held_best += judge[best] / judge.min() - 1 <= r.CLOSE
                held_pick += judge[pick] / judge.min() - 1 <= r.CLOSE
            perfect.append(held_best / DRAWS)
            model.append(held_pick / DRAWS)
            print(f"{mode:6s} {rec.workload.name:24s} {len(rounds):2d} rounds  true fastest holds {perfect[-1]:6.1%}"
                  f"  top pick {rec.top.strategy} holds {model[-1]:6.1%}")
        for who, p in (("a model that knew the true times", perfect), ("this calibration's top picks", model)):
            p = np.array(p)
            at_least = np.mean((rng.random((20000, len(p))) < p).sum(axis=1) >= len(p) - 1)
            print(f"{mode}: {who}: {p.sum():.1f} of {len(p)} expected, {len(p) - 1} or more in {at_least:.0%} of runs")


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
