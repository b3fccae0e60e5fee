"""Write docs/verification.md and docs/figures.md from the committed results, so that the pages cannot
drift from them.

    python3 scripts/verification_page.py            # judges every calibration again, writes held.json and both pages
    python3 scripts/verification_page.py --cached   # writes both pages from held.json (seconds)
    python3 scripts/verification_page.py --check    # exit 1 if a committed page differs from what held.json and
                                                    # the results give, or held.json from its inputs (CI's test)

Judging every calibration over every verification set takes minutes; its figures are kept in
results/verification/held.json with a digest of the files each was computed from, so that a page is
written (and checked) in seconds. The test of the pages computes the shipped calibrations' figures again
and compares them with held.json, which catches a change of the model that was not written there.

Every figure names its GPU and date. The page has, per GPU: the calibrations (wall time, and the
verification sets' picks that held with each), the verification sets judged by the shipped
calibration, and `umprof advise` judged on applications by timing every mode of each.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.apps.rows_json import read_kept  # noqa: E402  (the kept JSON, plain or .xz)
RESULTS = ROOT / "results"
PAGE = ROOT / "docs" / "verification.md"
FIGURES = ROOT / "docs" / "figures.md"
WORKLOADS = ROOT / "benchmarks" / "workloads"
GPUS = {"h100": "NVIDIA H100 80GB HBM3", "h200": "NVIDIA H200"}
# the verification sets measured on each GPU whose measurements are committed (results/verification), and the
# runs of each (two runs on one machine are judged pooled); a set measured again by a changed loop is a row of its
# own, named after its run ("25-c": set 25's run -c, measured with 0.13.0's free of malloc'd pages)
SETS = {"h100": {10: ("",), 13: ("",), 14: ("",), 15: ("",), 16: ("", "-b"), 18: ("",), 19: ("", "-b"), 20: ("",), 21: ("",),
                22: ("",), 23: ("", "-b"), 24: ("", "-b"), 25: ("", "-b"), "25-c": ("-c",)},
        "h200": {10: ("",), 11: ("",), 12: ("",), 13: ("",), 14: ("",), 15: ("",), 16: ("", "-b"), 17: ("", "-b"),
                 19: ("", "-b"), 20: ("",), 21: ("",), 22: ("",), 23: ("", "-b"), 24: ("", "-b"), 25: ("", "-b"),
                 "25-c": ("-c",)}}
SHIPPED = {"h100": "nvidia-h100-80gb-hbm3.parquet", "h200": "nvidia-h200.parquet"}
FIXTURES = ROOT / "tests" / "fixtures" / "results"
HELD = RESULTS / "verification" / "held.json"  # each calibration's figures over the sets, as last computed
_JUDGED: dict[str, list[dict]] = {}  # per GPU: the calibration rows judged (judged()), computed or read once


def held(cal, gpu: str) -> dict:
    """Set → (whole-run picks held, steady picks held, workloads, median whole error, median steady error)."""
    from umprof import api
    from umprof.model import recommend as r
    from umprof.model.workload import load_workloads

    out = {}
    for n, runs in SETS[gpu].items():
        number = str(n).split("-")[0]
        ws = load_workloads(WORKLOADS / f"holdout-{number}.toml")
        frame = api.measured_frame([RESULTS / "verification" / f"nvidia-{gpu}-loop-holdout-{number}{t}.parquet"
                                    for t in runs])[0]
        row = []
        for steady in (False, True):
            vs = r.verify_all(r.recommend_all(cal, ws, steady), frame)
            errors = [v["table"]["error"].abs().median() for v in vs if v is not None and len(v["table"])]
            row += [sum(bool(v and v["ok"]) for v in vs), statistics.median(errors)]
        out[n] = (row[0], row[2], len(ws), row[1], row[3])
    return out


def _calibration_rows(gpu: str) -> list[tuple[str, str, object]]:
    """(name, what it is, a function that loads its calibration) for every calibration of this GPU with committed
    files."""
    from umprof import api
    from umprof.core import calibrations as store

    rows = []
    shipped = store.describe(ROOT / "umprof" / "calibrations" / SHIPPED[gpu], "shipped")
    pooled = f"; {len(shipped.runs)} runs pooled: " + "; ".join(shipped.runs) if len(shipped.runs) > 1 else ""
    rows.append(("shipped", f"umprof/calibrations/{SHIPPED[gpu]}, {shipped.date}, {shipped.cases} cases{pooled}",
                 lambda: api.load_calibration(shipped.path)))
    for f in sorted((RESULTS / "calibration").glob(f"nvidia-{gpu}-calibration-*.parquet")):
        cf = store.describe(f)
        label = f.stem.replace(f"nvidia-{gpu}-calibration-", "")
        rows.append((label, f"results/calibration/{f.name}, {cf.date}, {cf.cases} cases, {cf.wall_s:.0f} s",
                     lambda f=f: api.load_calibration(f)))
    old = FIXTURES / f"nvidia-{gpu}-loop-calibration-7.parquet"
    if old.is_file():
        rows.append(("calibration-7", f"tests/fixtures/results (2026-11-23, {store.describe(old).cases} cases, about "
                     "13 min: the earlier scenario set)", lambda: api.load_calibration(old)))
        cut, left, first = _cut_to_first_run(old, shipped.path)
        rows.append(("calibration-7, cut", f"calibration-7 less the cases the shipped file's first run (this release's "
                     f"full calibration) does not measure: {left} cases left (what the cut to {first} cases costs, on "
                     "one run's measurements)", lambda: api.load_calibration(cut)))
    return rows


def _calibration_sources(gpu: str) -> dict[str, list[Path]]:
    """The files each row of :func:`_calibration_rows` is made from, by its name, without loading any."""
    shipped = ROOT / "umprof" / "calibrations" / SHIPPED[gpu]
    rows = {"shipped": [shipped]}
    for f in sorted((RESULTS / "calibration").glob(f"nvidia-{gpu}-calibration-*.parquet")):
        rows[f.stem.replace(f"nvidia-{gpu}-calibration-", "")] = [f]
    old = FIXTURES / f"nvidia-{gpu}-loop-calibration-7.parquet"
    if old.is_file():
        rows.update({"calibration-7": [old], "calibration-7, cut": [old, shipped]})
    return rows


def _set_files(gpu: str) -> list[Path]:
    """The verification sets' measurements and workloads that :func:`held` reads for this GPU."""
    files = []
    for n, runs in SETS[gpu].items():
        number = str(n).split("-")[0]
        files += [WORKLOADS / f"holdout-{number}.toml"]
        files += [RESULTS / "verification" / f"nvidia-{gpu}-loop-holdout-{number}{t}.parquet" for t in runs]
    return files


def _digest(paths: list[Path]) -> str:
    """A digest of the files' bytes, in order: what a row of held.json was computed from."""
    h = hashlib.sha256()
    for p in paths:
        h.update(p.read_bytes())
    return h.hexdigest()


def _kept(gpu: str) -> list[dict]:
    """held.json's rows for this GPU (none before it is first written)."""
    return json.loads(HELD.read_text()).get(gpu, []) if HELD.is_file() else []


def _in_order(rows: list[dict]) -> list[dict]:
    """The shipped calibration first, then the others by name, calibration-7 and its cut last (as the files sort)."""
    group = {"shipped": 0, "calibration-7": 2, "calibration-7, cut": 3}
    return sorted(rows, key=lambda r: (group.get(r["name"], 1), r["name"] + "."))  # "." as the file's suffix sorts


def compute_judged(gpu: str) -> list[dict]:
    """Every calibration of this GPU whose file is committed judged over its verification sets (minutes): name,
    the digest of its inputs, and :func:`held`'s figures a set; beside them, held.json's frozen rows (calibrations
    whose files left the repository: what each was and its figures as last judged, and where its file is)."""
    sources, sets = _calibration_sources(gpu), _set_files(gpu)
    rows = [{"name": name, "inputs": _digest(sources[name] + sets),
             "held": [[str(n), *figures] for n, figures in held(load(), gpu).items()]}
            for name, _, load in _calibration_rows(gpu)]
    return _in_order(rows + [r for r in _kept(gpu) if r.get("frozen") and r["name"] not in sources])


def cached_judged(gpu: str) -> list[dict]:
    """held.json's rows for this GPU; SystemExit naming the first row whose inputs changed since it was written."""
    rows, sources, sets = _kept(gpu), _calibration_sources(gpu), _set_files(gpu)
    live = [r["name"] for r in rows if not r.get("frozen")]
    if live != [r["name"] for r in _in_order([{"name": n} for n in sources])]:
        raise SystemExit(f"{HELD.relative_to(ROOT)}: its {gpu} rows {live} are not the calibrations committed "
                         f"({list(sources)}): run scripts/verification_page.py")
    for r in rows:
        if not r.get("frozen") and r["inputs"] != _digest(sources[r["name"]] + sets):
            raise SystemExit(f"{HELD.relative_to(ROOT)}: {gpu} {r['name']}: its calibration or the verification sets "
                             "changed since it was computed: run scripts/verification_page.py")
    return rows


def judged(gpu: str) -> list[dict]:
    """This GPU's calibration rows judged (computed by main() before the pages are written, else held.json's), each
    with what it is: a committed file's described from the file, a frozen row's as held.json keeps it."""
    if gpu not in _JUDGED:
        _JUDGED[gpu] = cached_judged(gpu)
    whats = {name: what for name, what, _ in _calibration_rows(gpu)}
    return [dict(r, what=r["what"] if r.get("frozen") else whats[r["name"]]) for r in _JUDGED[gpu]]


def held_of(row: dict, gpu: str) -> dict:
    """A judged row's figures as :func:`held` gives them (set → figures), its sets named as in SETS."""
    names = {str(n): n for n in SETS[gpu]}
    return {names[n]: tuple(figures) for n, *figures in row["held"]}


def _case_keys(frame) -> list[tuple[str, str]]:
    """Each row's case, by its scenario (rounds as one) and name."""
    from umprof.measure.scenario import round_base

    return list(zip(round_base(frame["scenario"].astype(str)), frame["case"].astype(str)))


def _cut_to_first_run(path: Path, shipped: Path):
    """The result set at ``path`` less the cases that the shipped file's first run does not measure, the
    cases left, and the first run's own."""
    from umprof.core.results import ResultSet
    from umprof.model.calibration import RUN

    first = ResultSet.load(shipped).frame
    if RUN in first.columns:
        first = first[first[RUN].fillna(0) == 0]
    keys = set(_case_keys(first))
    rs = ResultSet.load(path)
    f = rs.frame[[k in keys for k in _case_keys(rs.frame)]]
    left = len(set(_case_keys(f[f["phase"] == "total"])))
    return ResultSet(f, rs.meta, rs.devices), left, len(set(_case_keys(first[first["phase"] == "total"])))


def calibrations_section(gpu: str) -> list[str]:
    lines = [f"### Calibrations on the {GPUS[gpu]}", "",
             "Picks that held (within 5% of the measured fastest) over each verification set's workloads, by the "
             "whole run and by the steady iteration, with each calibration (a quick one is completed by the shipped "
             "one of its GPU). Wall time: the calibration's own run, from its start to its last case."
             + (" Sets 10-16 measured `pageable-staged` with the ring of 0.2.0 (2 x 32 MiB slots, 8 threads, every slot "
                "copied by all threads together) and no `pageable-registered`; a calibration of 0.3.0 (the shipped one "
                "and quick-c) prices the staged plan with 0.3.0's ring, which those sets did not run (none of the "
                "shipped one's picks that missed there was the staged plan). Set 18 measured 0.3.0's ring and the "
                "registered buffer. quick-d is 0.4.0's quick calibration, with the copies in parts. Set 20 and "
                "full-v050 (2026-11-26) measured the native ring of 0.5.0; every set before it measured an older "
                "ring, so the staged plan's picks are judged by sets 20 and 21. full-v060 and full-v060-b (one run, "
                "2026-11-26) measured 0.6.0's ring (transfers up to 2 MiB on the calling thread: no calibrated size "
                "moved from one engine to the other) and the ring at 1 GiB. The shipped calibration prices the staged "
                "plan by the rows of full-v050, full-v060 and full-v060-b (its host steps as their ratio to pageable "
                "memory's in each run, the median over the runs), every other strategy as before; since 0.6.0 managed "
                "memory kept on the host is written and read at cached memory's pooled rate. quick-e, 0.8.2's quick "
                "calibration (2026-11-26), was measured on the machine of holdout-24's first run, just before it; the "
                "set's second run is another machine's." if gpu == "h100"
                else " Sets 10-17 were measured with 0.1.0 (its staging ring, no `pageable-registered`) on one-GPU "
                "machines of 2026-11-23 and -24, where calibration-7 was measured too; 0.4.0's calibrations (full, "
                "quick-a, quick-b) and set 19 were measured on one machine of 2026-11-25, a host of two H200s and 32 "
                "cores: sets 10-17 judge them across hosts and releases, set 19 on their own host. The shipped "
                "calibration pools 0.4.0's full calibration with calibration-7 less its staged rows. Set 20 and "
                "full-v050 (2026-11-26, another machine of two H200s) measured the native ring of 0.5.0; every set "
                "before it measured an older ring, so the staged plan's picks are judged by sets 20 and 21. full-v060 "
                "(2026-11-26, a machine of two H200s) measured 0.6.0's ring (transfers up to 2 MiB on the calling "
                "thread: no calibrated size moved from one engine to the other) and the ring at 1 GiB. The shipped "
                "calibration prices the staged plan by the rows of full-v050 and full-v060 (its host steps as their "
                "ratio to pageable memory's in each run, the median over the runs), every other strategy as before; "
                "since 0.6.0 managed memory kept on the host is written and read at cached memory's pooled rate. quick-c, "
                "0.8.2's quick calibration (2026-11-26, a one-GPU machine), was measured on the machine of both of "
                "holdout-24's runs, just before them."), ""]
    sets = list(SETS[gpu])
    head = "| calibration | file, measured, cases, wall time | " + " | ".join(f"set {n}" for n in sets) + " | all (whole / steady) |"
    lines += [head, "|" + "---|" * (len(sets) + 3)]
    for row in judged(gpu):
        name, h = row["name"], held_of(row, gpu)
        what = row["what"] + (f"; {row['frozen']}" if row.get("frozen") else "")
        cells = [f"{w} / {s} of {k}" for w, s, k, _, _ in h.values()]
        total = (sum(x[0] for x in h.values()), sum(x[1] for x in h.values()), sum(x[2] for x in h.values()))
        lines.append(f"| {name} | {what} | " + " | ".join(cells) + f" | {total[0]} / {total[1]} of {total[2]} |")
    return lines + [""]


def set_measured(n: int | str, gpu: str) -> str:
    """How verification set ``n`` (a row of SETS) was measured on ``gpu``: its date, rounds, runs and machines."""
    if n == "25-c":
        return ("2026-11-27, set 25 again with 0.13.0's loop (its free gives malloc'd pages back, as a C program's "
                "free() does), two rounds on one machine")
    if n <= 15:
        return "2026-11-23 or -24, five rounds"
    if n <= 17:
        return "two runs of five rounds on one machine, pooled"
    if n == 18:
        return ("2026-11-25, runs of three machines pooled in one file (column run): 11, 16 and 33 rounds of a workload, "
                "the last a run of five rounds cut off at the device's time limit")
    if n == 19:
        return "2026-11-25, two runs of two rounds on one machine, pooled"
    if n <= 22:
        return "2026-11-26, two rounds"
    if n == 23:
        return "2026-11-26, two runs of two rounds on one machine, pooled"
    if n == 24:
        return "2026-11-26, two runs of two rounds, pooled, " + ("each on its own machine" if gpu == "h100" else "on one machine")
    if n == 25:
        return ("2026-11-26, loops of C programs, their pageable memory malloc'd (host_pages = malloc); "
                + ("two runs of two rounds on one machine, pooled (the first cut off at its last workload's second round)"
                   if gpu == "h100" else "a run of two rounds and one of one round, on two machines, pooled"))
    raise ValueError(f"holdout-{n}: say how it was measured (set_measured in scripts/verification_page.py)")


def sets_section(gpu: str) -> list[str]:
    from umprof.core import calibrations as store

    shipped = store.describe(ROOT / "umprof" / "calibrations" / SHIPPED[gpu], "shipped")
    h = held_of(next(r for r in judged(gpu) if r["name"] == "shipped"), gpu)
    lines = [f"### Verification sets on the {GPUS[gpu]}, by the shipped calibration ({shipped.date})", "",
             "Each set was written before it was measured (benchmarks/workloads) and measured by wall clock as "
             "recommend --verify measures, as the column says; the measurements are "
             f"results/verification/nvidia-{gpu}-loop-holdout-*.parquet. A strategy that a set's measurement never "
             "ran (pageable-registered, added in 0.3.0) is left out of the ranking that set judges.", "",
             "| set | measured | workloads | whole run: held | median error | steady iteration: held | median error |",
             "|---|---|---|---|---|---|---|"]
    for n, (w, s, k, ew, es) in h.items():
        lines.append(f"| holdout-{n} | {set_measured(n, gpu)} | {k} | {w} | {ew:.1%} | {s} | {es:.1%} |")
    return lines + [""]


def _pooled_advice(docs: list[dict]) -> list[str]:
    """One row an application, its runs pooled: each mode's time as a ratio to the own mode's in the
    same run (their medians), the median of those ratios over the runs that timed both, scaled by the
    own mode's median over every run. Runs differ by up to a quarter in every mode at once, and
    modes added later were timed on fewer of them: ratios within a run keep both out of the
    comparison. Beside it, paired: every mode against the advised one on the same machine, the median of
    those ratios (the own mode's noise does not enter it). An application whose advice differs between
    runs is a row an advice, each judged against every run."""
    rows = []
    for app in dict.fromkeys(a for d in docs for a in d["apps"]):  # every application, in the order first timed
        judged = [next(r for r in d["judged"] if r["app"] == app) for d in docs if app in d["apps"]]
        runs = [d["apps"][app]["modes"] for d in docs if app in d["apps"]]
        if len(runs[-1]) < 2:
            continue  # timed as written only: nothing to judge the advice by
        advised = list(dict.fromkeys(x["advised"] for x in reversed(judged)))  # the latest run's first
        for a in advised:
            r = next(x for x in reversed(judged) if x["advised"] == a)
            given = sum(x["advised"] == a for x in judged)
            name = app if len(advised) == 1 else f"{app} (advice of {given} of {len(judged)} runs)"
            rows.append(_pooled_row(name, runs, r))
    return rows


def _pooled_row(name: str, runs: list[dict], r: dict) -> str:
    """One advice (``r``, a run's judgement) against the application's runs pooled (:func:`_pooled_advice`)."""
    from benchmarks.apps.judge import FASTEST_WITHIN, SAVING_WITHIN

    own, adv, applied = r["own"], _advised(r), r.get("applied", r["advised"])
    ratios = _ratios(runs, own)
    ratio = _medians(ratios)
    fastest = min(ratio, key=ratio.get)
    if applied not in ratio:
        return (f"| {name} | {own} | {adv} | {fastest} | - | not judged: a mode it was not timed in | - | "
                f"{r['predicted_saving_s']:.3f} s | - | - | - |")
    scale = statistics.median([t for modes in runs for t in modes[own]["wall_s"]])
    saving = scale * (1 - ratio[applied])
    spread = statistics.median([statistics.pstdev(v["wall_s"]) for modes in runs for v in modes.values()
                                if len(v.get("wall_s", [])) > 1])
    ok = ratio[applied] <= (1 + FASTEST_WITHIN) * ratio[fastest]
    within = abs(r["predicted_saving_s"] - saving) <= max(SAVING_WITHIN * abs(saving), spread)
    against = _medians(_ratios(runs, applied))
    best = min(against, key=against.get)
    behind = 1 / against[best] - 1
    return (f"| {name} | {own} | {adv} | {fastest} | {ratio[applied] / ratio[fastest] - 1:+.1%} | "
            f"{'yes' if ok else 'no'} | {best}: {behind:+.1%}, {'yes' if behind <= FASTEST_WITHIN else 'no'} | "
            f"{r['predicted_saving_s']:.3f} s | {saving:.3f} s | {'yes' if within else 'no'} "
            f"| {len(ratios[applied])}, {spread:.3f} s |")


def _advised(r: dict) -> str:
    """The advised way as the tables name it: a tie said so, and the mode that applied it where that is its variant
    copying back only what the host reads (judge.py's ``applied``)."""
    applied = r.get("applied", r["advised"])
    return (r["advised"] + (" (tie)" if r.get("tie") else "")
            + (f", applied as {applied}" if applied != r["advised"] else ""))


def _ratios(runs: list[dict], ref: str) -> dict[str, list[float]]:
    """Each mode's time as a ratio to mode ``ref``'s on the same machine (their medians), one a run that
    timed both."""
    ratios: dict[str, list[float]] = {}
    for modes in runs:
        if not modes.get(ref, {}).get("wall_s"):
            continue
        mine = statistics.median(modes[ref]["wall_s"])
        for m, v in modes.items():
            if v.get("wall_s"):
                ratios.setdefault(m, []).append(statistics.median(v["wall_s"]) / mine)
    return ratios


def _medians(ratios: dict[str, list[float]]) -> dict[str, float]:
    """Each mode's ratios (:func:`_ratios`) pooled over the runs: their median."""
    return {m: statistics.median(v) for m, v in ratios.items()}


def advise_section(gpu: str) -> list[str]:
    files = sorted((RESULTS / "advise").glob(f"nvidia-{gpu}-judged-*.json*"))  # .json, or .json.xz as kept
    if not files:
        return [f"### `umprof advise` on the {GPUS[gpu]}", "", "Not measured on this GPU yet.", ""]
    docs = [read_kept(f) for f in files]
    lines = [f"### `umprof advise` on the {GPUS[gpu]}", "",
             "Each application traced as written (its own mode), advised from its trace and the shipped calibration "
             "(judged again at today's model: `benchmarks/apps/judge.py`); then every mode timed by wall clock, process "
             "start to exit, in rounds. *held*: the advised mode measured fastest or within 5% of the fastest; "
             "*saving*: the predicted saving against the measured one (own mode less advised mode), within 20% or within "
             "the runs' own spread. Where the advice's change copies back only what the host reads, the application's "
             "variant that does so with the advised memory applies it (named beside the advice: *applied as*). "
             "Each judgement file holds the timings it judged; the traces the advice was read from are written by "
             "`scripts/device.sh apps` beside them and are not kept in the repository.", "",
             f"All {len(docs)} runs pooled (each mode's median as a ratio to the own mode's in its run, the median "
             "of those ratios over the runs that timed it, scaled by the own mode's median over every run; the "
             "runs that timed the advised mode, and the median standard deviation of a mode's runs within a run, "
             "the noise a difference is measured against). *paired*: every mode against the advised one in the same "
             "run, the median of those ratios over the runs (the own mode's noise does not enter it), its fastest "
             "mode, how far behind it the advised one measured and whether that is within 5%:", "",
             "| application | as written | advised | measured fastest | advised vs fastest | held | paired | "
             "predicted saving | measured saving | within 20% | runs, noise |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    lines += _pooled_advice(docs) + ["", "Each run alone:", ""]
    for f, doc in zip(files, docs):
        note = f"; {doc['note']}" if doc.get("note") else ""
        lines += [f"{doc['gpu']}, {doc['date'][:10]}, {doc['rounds']} rounds{note} ({f.relative_to(ROOT)}):", "",
                  "| application | as written | advised | measured fastest | advised vs fastest | held | predicted saving | "
                  "measured saving | within 20% |", "|---|---|---|---|---|---|---|---|---|"]
        for r in doc["judged"]:
            adv = _advised(r)
            if "fastest" not in r:
                lines.append(f"| {r['app']} | {r['own']} | {adv} | - | - | not judged: {r.get('note') or 'timed as written only'} "
                             f"| {r['predicted_saving_s']:.3f} s | - | - |")
                continue
            lines.append(f"| {r['app']} | {r['own']} | {adv} | {r['fastest']} | {r['advised_vs_fastest']:+.1%} | "
                         f"{'yes' if r['held'] else 'no'} | {r['predicted_saving_s']:.3f} s | {r['measured_saving_s']:.3f} s "
                         f"| {'yes' if r['saving_held'] else 'no'} |")
        lines.append("")
    return lines


def page() -> str:
    lines = ["# Verification", "",
             "<!-- generated by scripts/verification_page.py from the committed results; do not edit by hand -->", "",
             "Today's figures, one section per GPU. Every verification set and application here was written before "
             "it was measured. Two of the model's parts were read from the sets' measurements of single phases "
             "(not of picks): a plan's first write of its buffer priced as the memory's it borrows (0.8.1), and one "
             "price for mapped memory's and the registered plan's allocation and free (0.8.2); the "
             "[changelog](changelog.md) says what each moved. The history of earlier sets and models is there and in "
             "the repository's history.", ""]
    for gpu in GPUS:
        lines += [f"## {GPUS[gpu]}", ""] + calibrations_section(gpu) + sets_section(gpu) + advise_section(gpu)
    return "\n".join(lines).rstrip() + "\n"


def figures() -> str:
    """Copy bandwidth of the default run on each GPU, beside its ceilings, and the peers' figures."""
    from umprof.core.results import ResultSet
    from umprof.core.units import format_rate

    lines = ["# Figures", "", "<!-- generated by scripts/verification_page.py from the committed results; do not edit by "
             "hand -->", "", "Copies by `cudaMemcpy` in the default suite (`umprof run`, scenario `transfers`), the median "
             "of each case, beside the ceilings umprof measures them against.", ""]
    sizes = [4096, 2**20, 16 * 2**20, 256 * 2**20, 2**30]
    for gpu in GPUS:
        path = RESULTS / f"nvidia-{gpu}-default.parquet"
        rs = ResultSet.load(path)
        d = rs.devices[0]
        f = rs.frame
        t = f[(f["scenario"] == "transfers") & (f["status"] == "ok") & f["phase"].isin(["h2d", "d2h", "d2d"])]
        lines += [f"## {d['name']} ({rs.meta['time'][:10]}, {path.relative_to(ROOT)})", "",
                  f"PCIe gen {d.get('pcie_gen')} x{d.get('pcie_width')}: {format_rate(d['pcie_bytes_per_s'])} per direction; "
                  f"DRAM {format_rate(d['dram_bytes_per_s'])} theoretical; device copy {format_rate(d['d2d_bytes_per_s'])} "
                  "measured.", "",
                  "| memory | direction | " + " | ".join(("4 KiB", "1 MiB", "16 MiB", "256 MiB", "1 GiB")) + " | at 256 MiB |",
                  "|---|---|" + "---|" * (len(sizes) + 1)]
        for (strategy, phase), g in t.groupby(["axis.strategy", "phase"], sort=False):
            by = g.set_index("axis.bytes")["bytes_per_s"]
            big = by.get(256 * 2**20)
            ceiling = d["d2d_bytes_per_s"] if phase == "d2d" else d["pcie_bytes_per_s"]
            what = "of the device copy" if phase == "d2d" else "of the link"
            lines.append(f"| {strategy} | {phase} | " + " | ".join(format_rate(by[b]) if b in by else "-" for b in sizes)
                         + (f" | {big / ceiling:.0%} {what} |" if big else " | - |"))
        lines.append("")
    lines += staging_section() + first_touch_section()
    peers = (ROOT / "benchmarks" / "peers.md").read_text().split("\n", 1)[1]
    lines += ["## The peers", "", "NVIDIA's own tools on the same GPU, measured beside umprof:", "", peers.strip()]
    return "\n".join(lines).rstrip() + "\n"


def _benchmark(name: str):
    """A script of benchmarks/ as a module (the folder is no package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def first_touch_section() -> list[str]:
    """The first write and the registration of pageable memory by how its pages are backed
    (benchmarks/first_touch.py), what a process pays at its exit (benchmarks/exit_teardown.py), and the
    calibration's setup loop of malloc'd pages beside numpy's on one machine (results/first-touch, results/calibration)."""
    files = sorted((RESULTS / "first-touch").glob("*-first-touch-*.json"))
    if not files:
        return []
    lines = ["## Pageable memory by its pages", "",
             "The first write of a fresh buffer and its free, and its registration in place (cuMemHostRegister, as "
             "`pageable-registered` and `mapped` memory do), then the write of the registered pages, the unregistration "
             "and the free, each the median of fresh buffers (`benchmarks/first_touch.py`; the frees were timed from "
             "its second version on): numpy's arrays, which numpy backs with huge pages, and buffers with 4 KiB pages, "
             "as a C program's malloc'd memory is where huge pages are given only where advised. umprof prices a "
             "Python program's pageable memory as numpy's and a C program's as malloc's "
             "(`calibration-loop-setup-malloc`).", "",
             "| GPU machine | date | transparent_hugepage | size | backing | first write | free | register | then write | "
             "unregister | free |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    t = lambda r, k: f"{r[k]:.3f} s" if k in r else "–"  # noqa: E731
    for f in files:
        doc = json.loads(f.read_text())
        for backing, r in doc["median_s"].items():
            lines.append(f"| {doc['gpu']} | {doc['date']} | {doc['transparent_hugepage']} | {doc['mib']} MiB | {backing} | "
                         f"{t(r, 'first_write_s')} | {t(r, 'free_s')} | {t(r, 'register_s')} | "
                         f"{t(r, 'registered_write_s')} | {t(r, 'unregister_s')} | {t(r, 'registered_free_s')} |")
    lines += ["", "Measured: " + ", ".join(str(f.relative_to(ROOT)) for f in files) + ".", ""]
    return lines + exit_teardown_section() + setup_pages_section()


def exit_teardown_section() -> list[str]:
    """What a process pays at its exit for the memory it leaves (benchmarks/exit_teardown.py)."""
    files = sorted((RESULTS / "first-touch").glob("*-exit-teardown.json"))
    lines = []
    for f in files:
        doc = json.loads(f.read_text())
        lines += [f"A process that mallocs {doc['mib']} MiB, writes it and exits, by what it does with the memory "
                  f"(`benchmarks/exit_teardown.py`, {doc['gpu']}, {doc['date']}, median of {doc['reps']} processes; "
                  "`exit` is the process's whole time, taken from outside, less what its main() timed):", "",
                  "| mode | allocate | write | free | main() | exit | process |", "|---|---|---|---|---|---|---|"]
        for mode, r in doc["median_s"].items():
            lines.append(f"| {mode} | " + " | ".join(f"{r[k]:.3f} s" for k in ("alloc_s", "write_s", "free_s", "main_s",
                                                                                 "exit_s", "process_s")) + " |")
        lines += ["", f"Measured: {f.relative_to(ROOT)}.", ""]
    return lines


def setup_pages_section() -> list[str]:
    """The calibration's setup loop of malloc'd pages beside numpy's (results/calibration)."""
    import pandas as pd

    from umprof.core.results import read_header

    lines = []
    for numpy_file in sorted((RESULTS / "calibration").glob("*-setup-numpy.parquet")):
        gpu = numpy_file.name.split("-setup-")[0]
        malloc_files = sorted((RESULTS / "calibration").glob(f"{gpu}-setup-malloc-*.parquet"))
        frames = [pd.read_parquet(numpy_file).assign(pages="numpy")]
        frames += [pd.read_parquet(f).assign(pages="malloc") for f in malloc_files]
        f = pd.concat(frames)
        f = f[(f["status"] == "ok") & f["phase"].isin(["alloc", "host_init", "free"])
              & f["axis.bytes"].isin([16 * 2**20, 256 * 2**20, 2**30])]
        med = f.groupby(["axis.strategy", "phase", "axis.bytes", "pages"])["time_median_s"].median()
        if not lines:
            lines += ["The calibration's setup loop (`calibration-loop-setup`, numpy's pages) and the same loop of "
                      "malloc'd pages (`calibration-loop-setup-malloc`, the median of its two runs on one machine), "
                      "milliseconds, each file's date below (the H200's numpy run is of the malloc'd runs' earlier "
                      "run, 2026-11-26, whose free of malloc'd pages left them to the garbage collector); the "
                      "malloc'd runs are the newest of the shipped calibrations' setup of a C program's pageable "
                      "memory:", ""]
        lines += [f"{GPUS.get(gpu.removeprefix('nvidia-'), gpu)}:", "", "| strategy | step | 16 MiB numpy | malloc | 256 MiB numpy | malloc | 1 GiB numpy | malloc |",
                  "|---|---|---|---|---|---|---|---|"]
        for (strategy, phase), rows in med.groupby(level=[0, 1]):
            cells = []
            for b in (16 * 2**20, 256 * 2**20, 2**30):
                for pages in ("numpy", "malloc"):
                    v = rows.get((strategy, phase, b, pages))
                    cells.append("–" if v is None else f"{v * 1e3:.1f}")
            lines.append(f"| {strategy} | {phase} | " + " | ".join(cells) + " |")
        dated = [f"{x.relative_to(ROOT)} ({str(read_header(x)['meta'].get('time', ''))[:10]})"
                 for x in [numpy_file, *malloc_files]]
        lines += ["", "Measured: " + ", ".join(dated) + ".", ""]
    return lines


def staging_section() -> list[str]:
    """The staging ring against its ceiling on each GPU it was measured on (benchmarks/staging_table.py)."""
    table = _benchmark("staging_table")
    lines = ["## Staging pageable data", "",
             "umprof's staging ring (`pageable-staged`) in the `staging` scenario and inside the loop (`staging-loop`), "
             "H2D and D2H, beside its ceiling: the slower of the host's own parallel copy of the same bytes on the ring's "
             "threads and the pinned link, both measured in the same run (goal: 85% of it). Beside it, cudaMemcpy from "
             "the same pageable memory and the buffer page-locked in place (`pageable-registered`) with what registering "
             "cost. Below each, the sweep of threads and slot size. Each run is the rule as shipped, on its own machine, "
             "oldest first: the ring's share of its ceiling moves by 10-20% from run to run with the host copy it is "
             "measured against. Runs named *native* measured the native ring of 0.5.0 and later, whose threads are "
             "native (kernels/staging_ring.c; native-c on the H100 and native-b on the H200: 0.6.0; native-d on the H100: "
             "0.35.0, without the sweep); the others, the ring of Python threads before it, and their host copy ran on "
             "Python threads too.", ""]
    from umprof.core.results import ResultSet, read_header

    files = sorted((RESULTS / "staging").glob("nvidia-*-staging*.parquet"), key=lambda f: read_header(f)["meta"]["time"])
    for f in files:
        rs = ResultSet.load(f)
        engine = "the native ring" if "native" in f.name else "the ring of Python threads"
        lines += [f"### {rs.devices[0]['name']}, {str(rs.meta.get('time', ''))[:10]}, {engine} ({f.relative_to(ROOT)})", "",
                  table.markdown(table.table(rs.frame), table.sweep(rs.frame)), ""]
    return lines + staging_context_section()


def staging_context_section() -> list[str]:
    """The ring by what ran on the host before it (benchmarks/staging_context.py), on each GPU measured."""
    context = _benchmark("staging_context")
    lines = ["### The ring by what ran before it", "",
             "`benchmarks/staging_context.py`: the ring's rate (GB/s, the median of its transfers) back to back, as the "
             "staging scenario runs it; after the main thread wrote the whole buffer, as the loop's host write does; and "
             "after its threads idled 50 ms; beside the host's parallel copy into pinned memory and the pinned link in the "
             "same contexts, on the ring's own threads. Files named *native*: the ring of 0.5.0; the others: the ring "
             "of Python threads before it.", ""]
    lines += _staging_tables("context", "transfers", context.markdown)
    for f in sorted((RESULTS / "staging").glob("nvidia-*-staging-timeline*.json")):
        for t in json.loads(f.read_text()):
            lines += [f"{t['gpu']}, {t['date']} ({f.relative_to(ROOT)}): {context.timeline_summary(t)} (the median "
                      f"transfer of {t['reps']}).", ""]
    lines += ["### Small transfers: the calling thread or the ring's threads", "",
              "`benchmarks/staging_context.py --small`: a loop whose host writes the whole buffer, then sends it to the "
              "GPU: the host's write and the H2D copy (ms, the medians of their steps), through the ring on the calling "
              "thread (lane 0's slots), on the ring's threads, and by cudaMemcpy from the same pageable memory. Since "
              "0.6.0 transfers up to 2 MiB run on the calling thread (`INLINE_BYTES`).", ""]
    lines += _staging_tables("small", "steps", context.small_table)
    lines += ["### Part of a buffer: the ring of the whole buffer or one of the part's size", "",
              "`benchmarks/staging_context.py --parts`: a loop that writes part of a 1 GiB buffer and sends that part "
              "to the GPU, through the ring built for the whole buffer (12 threads, 4 MiB slots: what the staged plan "
              "does), a ring built for the part (the rule's threads for its size, 1 MiB chunks), and cudaMemcpy. The "
              "first H100 file measured a trial of 0.7.0 that cut a part on the ring's threads as a ring of the "
              "part's size would (\"cut to the part\") beside the ring's own slots (\"in the ring's slots\", what "
              "the ring does): cut finer, the part was sent faster and the host's next write of it was slower, and the "
              "trial was taken back. Up to 2 MiB the part runs on the calling thread, cut over its two slots, in both.",
              ""]
    return lines + _staging_tables("parts", "steps", context.small_table)


def _staging_tables(kind: str, unit: str, render) -> list[str]:
    """Each committed staging_context run of this kind (results/staging/nvidia-*-staging-KIND*.json), rendered."""
    lines = []
    for f in sorted((RESULTS / "staging").glob(f"nvidia-*-staging-{kind}*.json")):
        rows = json.loads(f.read_text())
        lines += [f"{rows[0]['gpu']}, {rows[0]['date']}, {rows[0]['reps']} {unit} a figure ({f.relative_to(ROOT)}):", "",
                  render(rows), ""]
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true", help="exit 1 where a committed page differs (held.json's figures)")
    ap.add_argument("--cached", action="store_true", help="write the pages from held.json's figures")
    a = ap.parse_args()
    if not (a.check or a.cached):
        _JUDGED.update({gpu: compute_judged(gpu) for gpu in GPUS})
        HELD.write_text(json.dumps(_JUDGED, indent=1) + "\n")
        print(f"wrote {HELD}")
    pages = {PAGE: page(), FIGURES: figures()}
    if a.check:
        stale = [p for p, text in pages.items() if not p.is_file() or p.read_text() != text]
        for p in stale:
            print(f"{p} differs from what the committed results give: run scripts/verification_page.py")
        return 1 if stale else 0
    for p, text in pages.items():
        p.parent.mkdir(exist_ok=True)
        p.write_text(text)
        print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
