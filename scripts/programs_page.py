"""Write docs/verification-programs.md: the verification programs (benchmarks/verification) judged from the
committed timings of their modes and the advice umprof gives now on their traces, so that the page cannot drift
from either.

    python3 scripts/programs_page.py            # write the page
    python3 scripts/programs_page.py --check    # exit 1 if the committed page differs from what it would write

The advice is the golden advice of each trace (tests/fixtures/golden/torch/GPU-NAME.TRACER.json), which the test
suite holds equal to what umprof answers on that trace today; the timings are results/verification-programs/*/
(each folder one machine's, its GPU named in its timings). Each advice is judged by benchmarks/verification/judge.py
on the loop's own time and on the process's wall time. The page opens with the held-out programs as they came: each
one's first committed judgement (``judge-held-out-*.json``) on each GPU.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "verification-programs.md"
TIMINGS = ROOT / "results" / "verification-programs"
GOLDEN = ROOT / "tests" / "fixtures" / "golden" / "torch"
PREFIX = {"NVIDIA H100 80GB HBM3": "h100", "NVIDIA H200": "h200"}  # a GPU's fixture traces' file prefix
SHORTENED = ROOT / "tests" / "fixtures" / "traces" / "torch" / "shortened.json"  # the fixtures that hold part of a loop
PROGRAMS_README = ROOT / "benchmarks" / "verification" / "README.md"  # marks the held-out programs


def _judge():
    spec = importlib.util.spec_from_file_location("judge", ROOT / "benchmarks" / "verification" / "judge.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _advice(prefix: str, program: str) -> dict[str, dict]:
    """Tracer ('nsys', 'kineto', 'rank0.nsys', ...) -> the golden advice of the program's trace on that GPU."""
    out = {}
    for p in sorted(GOLDEN.glob(f"{prefix}-{program}*.json")):
        stem = p.name[len(prefix) + 1:-len(".json")]
        name, tracer = stem.split(".", 1)
        if name != program and not name.startswith(f"{program}-rank"):
            continue
        doc = json.loads(p.read_text())
        tracer = f"{name[len(program) + 1:]}.{tracer}" if name != program else tracer
        out[tracer] = doc[0] if doc else None
    return out


def _judged(judge, folder: Path, shortened: dict) -> tuple[list[dict], list[dict], list[dict]]:
    """The folder's programs' timings, and every advice judged on the loop's time and on the wall time;
    ``shortened``: GPU prefix -> the fixtures that hold part of their loop (SHORTENED)."""
    programs, loop, wall = [], [], []
    for tf in sorted(folder.glob("*.json")):
        t = json.loads(tf.read_text())
        if not isinstance(t, dict) or "modes" not in t:
            continue
        programs.append(t)
        prefix = PREFIX.get(t["gpu"], "?")
        for tracer, adv in _advice(prefix, t["program"]).items():
            whole = f"{t['program']}.{tracer}" not in shortened.get(prefix, {})
            loop.append(judge.judge_one(t["program"], tracer, t, adv, "loop_s", whole))
            wall.append(judge.judge_one(t["program"], tracer, t, adv, "wall_s", whole))
    return programs, loop, wall


def _s(v) -> str:
    return "-" if v is None else f"{v:.3f}"


def _modes_table(programs: list[dict]) -> list[str]:
    out = ["| program | modes: median loop s (median wall s), the first as written | runs a mode |",
           "| --- | --- | --- |"]
    for t in programs:
        modes = [f"{m} {statistics.median(v['loop_s']):.3f} ({statistics.median(v['wall_s']):.2f})"
                 for m, v in t["modes"].items() if v.get("loop_s") and v.get("wall_s")]
        runs = sorted({len(v["loop_s"]) for v in t["modes"].values() if v.get("loop_s")})
        out.append(f"| {t['program']} | {', '.join(modes)} | {'-'.join(str(r) for r in sorted({runs[0], runs[-1]}))} |")
    return out


def _judge_table(loop: list[dict], wall: list[dict]) -> list[str]:
    out = ["| program | trace | advised | applied as mode | loop: as written s | mode s | best mode (s) | verdict | "
           "captured | saving s: predicted / measured | wall: verdict | captured | idiom |",
           "| --- | --- | --- | --- | ---: | ---: | --- | --- | ---: | ---: | --- | ---: | --- |"]
    for r, w in zip(loop, wall):
        out.append(f"{_judged_cells(r)} | {w['verdict']} | {_captured(w)} | {r['idiom']} |")
    return out


def _captured(r: dict) -> str:
    return "-" if r["captured"] is None else f"{r['captured']:.0%}"


def _judged_cells(r: dict) -> str:
    """A judged advice's row up to its saving: program, trace, advice, mode, times, verdict, share captured."""
    return (f"| {r['program']} | {r['tracer']} | {r['advised']} | {r['mode'] or '-'} | {_s(r['as_written_s'])} | "
            f"{_s(r['mode_s'])} | {r['best_mode']} ({_s(r['best_s'])}) | {r['verdict']} | {_captured(r)} | "
            f"{_saving(r)}")


def _saving(r: dict) -> str:
    """The advised change's saving, predicted / measured (s), and the prediction's error where it is judged."""
    if r.get("predicted_saving_s") is None:
        return "-"
    error = f" ({r['saving_error']:+.0%})" if r.get("saving_error") is not None else ""
    return f"{r['predicted_saving_s']:.3f} / {r['measured_saving_s']:.3f}{error}"


def _savings_summary(rows: list[dict], judge, fixtures: bool = True) -> str:
    """How often the predicted saving came within judge.SAVING_WITHIN of the measured one (``fixtures``: the rows
    may hold shortened fixtures' advice, which is not compared)."""
    judged = [r for r in rows if r.get("saving_error") is not None]
    held = sum(abs(r["saving_error"]) <= judge.SAVING_WITHIN for r in judged)
    under = sum(r["saving_error"] < -judge.SAVING_WITHIN for r in judged)
    return (f"Where an advised change measured a saving, on traces of the whole loop ({len(judged)}), the predicted "
            f"saving came within {judge.SAVING_WITHIN:.0%} of the measured one in {held}; {under} predicted less than "
            f"that, {len(judged) - held - under} more." + (" The shortened fixtures' predictions are of their part "
                                                            "of the loop and are not compared." if fixtures else ""))


def _summary(rows: list[dict], judge, what: str) -> str:
    """How the advice fared, over every program and over the PyTorch ones: slower ever, and where the best mode saves
    over judge.WITHIN, how often it captured 80% of that."""
    def counts(rs: list[dict]) -> str:
        slower = sum(r["verdict"] == "slower" for r in rs)
        open_ = [r for r in rs if r["captured"] is not None]
        held = sum(r["captured"] >= 0.8 for r in open_)
        return (f"{len(rs)} traces advised, {slower} measured slower than as written by more than "
                f"{judge.WITHIN:.0%}; where the best mode saves more than {judge.WITHIN:.0%} ({len(open_)} traces), "
                f"the advice captured at least 80% of its saving in {held}")
    torch = [r for r in rows if judge.FRAMEWORK.get(r["program"], "pytorch") == "pytorch"]
    return f"By {what}: {counts(rows)}. The PyTorch programs alone: {counts(torch)}."


def _version(path: Path) -> tuple:
    """The umprof version a ``judge-full-traces-X.Y.Z.json`` names (``()`` where it names none)."""
    tail = path.stem.removeprefix("judge-full-traces").lstrip("-")
    return tuple(int(x) for x in tail.split(".")) if tail else ()


def _own_traces(folder: Path, judge) -> list[str]:
    """The folder's own full traces as judged (its committed judgements on the loop's time): the held-out programs'
    as they came (``judge-held-out-*.json``), after a change they led to (``judge-after-*.json``) and the newest
    umprof's (``judge-full-traces-X.Y.Z.json``), each with how it fared; the folder's README tells the older ones."""
    full = max(folder.glob("judge-full-traces*.json"), key=_version, default=None)
    out = []
    for jf in sorted(folder.glob("judge-held-out-*.json")) + sorted(folder.glob("judge-after-*.json")) \
            + ([full] if full else []):
        rows = json.loads(jf.read_text())
        out += [f"### Its own traces, as `{jf.name}` judged them", "",
                "| program | trace | advised | applied as mode | loop: as written s | mode s | best mode (s) | "
                "verdict | captured | saving s: predicted / measured | idiom |",
                "| --- | --- | --- | --- | ---: | ---: | --- | --- | ---: | ---: | --- |"]
        out += [f"{_judged_cells(r)} | {r['idiom']} |" for r in rows]
        out += ["", _summary(rows, judge, "the loop's own time"), "", _savings_summary(rows, judge), ""]
    return out


def _held_out_programs() -> set[str]:
    """The programs the verification programs' README marks held out (written by someone who had not read the
    model): its table's rows "| `NAME.py` (held out..." (or `NAME.cu`, and "(C; held out...")."""
    return set(re.findall(r"^\| `(\w+)\.(?:py|cu)` \((?:[^;)]*; )?held out", PROGRAMS_README.read_text(),
                          flags=re.MULTILINE))


def _first_held_out() -> list[dict]:
    """Each held-out program's first judgement on each GPU, as its traces came: the rows of the earliest folder (the
    folders' names begin with the GPU and the date) whose ``judge-held-out-*.json`` judges it, each with its GPU and
    folder."""
    held, rows, seen = _held_out_programs(), [], set()
    for folder in sorted(p for p in TIMINGS.iterdir() if p.is_dir()):
        held_out = sorted(folder.glob("judge-held-out-*.json"))
        if not held_out:
            continue
        docs = (json.loads(f.read_text()) for f in sorted(folder.glob("*.json")))
        gpu = next((d["gpu"] for d in docs if isinstance(d, dict) and "gpu" in d), folder.name)  # its first timings'
        for jf in held_out:
            judged = json.loads(jf.read_text())
            for program in dict.fromkeys(r["program"] for r in judged):
                if program not in held or (gpu, program) in seen:
                    continue
                seen.add((gpu, program))
                rows += [dict(r, gpu=gpu, folder=folder.name) for r in judged if r["program"] == program]
    return rows


def _held_out_section(judge) -> list[str]:
    """The held-out programs as they came: a row a trace, and how the advice fared over them."""
    rows = _first_held_out()
    out = ["## Held-out programs, as they came", "",
           "Programs written by someone who had not read the model, traced and judged with umprof as it was then: "
           "each program's first judgement on each GPU (the earliest folder's `judge-held-out-*.json` that judges "
           "it; a later judgement, after a change it led to, is no longer a held-out figure).", "",
           "| GPU | program | trace | advised | applied as mode | verdict | captured | saving s: predicted / measured "
           "| folder |", "| --- | --- | --- | --- | --- | --- | ---: | ---: | --- |"]
    out += [f"| {r['gpu']} | {r['program']} | {r['tracer']} | {r['advised'] or '-'} | {r['mode'] or '-'} | "
            f"{r['verdict']} | {_captured(r)} | {_saving(r)} | {r['folder']} |" for r in rows]
    return out + ["", _summary(rows, judge, "the loop's own time"), "", _savings_summary(rows, judge, False), ""]


def page() -> str:
    judge = _judge()
    lines = ["# Verification programs", "",
             "Programs written the way their users write them (PyTorch tutorials, a CUDA C loop, a CuPy user's "
             "batches), each with a mode for every idiom a user would try for moving its data "
             "(`benchmarks/verification/`; nothing in umprof names them). Each program's as-written mode was traced "
             "(Nsight Systems, and torch.profiler for the PyTorch ones) and every mode timed by wall clock; the "
             "advice umprof gives now on each trace is mapped to the mode that applies it and judged against the "
             "program as written. This page is written by `scripts/programs_page.py` from the committed timings "
             "and the test suite's golden advice; `captured` is the share of the best mode's saving that the "
             "advised mode measured, where the best saves more than 5%; `saving s` compares the saving umprof "
             "predicted on the trace with the one the advised mode measured on the loop.", ""]
    lines += _held_out_section(judge)
    seen, shortened = set(), json.loads(SHORTENED.read_text())
    for folder in sorted(p for p in TIMINGS.iterdir() if p.is_dir()):
        programs, loop, wall = _judged(judge, folder, shortened)
        if not programs:
            continue
        t0 = programs[0]
        dates = sorted({d[:10] for t in programs for d in (t.get("dates") or [t.get("date", "")]) if d})
        heading = f"{t0['gpu']}, {', '.join(dates)}"
        # another folder of a GPU and day already shown: its timings judge the advice on that GPU's fixture traces,
        # which may have been taken on either machine
        again = heading in seen
        other = (" The advice judged in the first table is that on this GPU's fixture traces (their golden advice); "
                 "the folder's own traces follow, as judged when they came back.") if again and loop else ""
        lines += [f"## {heading}{f' ({folder.name})' if again else ''}", "",
                  f"Driver {t0.get('driver', '?')}, {t0.get('cpu_count', '?')} CPU cores; timings in "
                  f"`results/verification-programs/{folder.name}/` (its README says how they were taken).{other}", "",
                  *_modes_table(programs), ""]
        if loop:
            lines += [*_judge_table(loop, wall), "", _summary(loop, judge, "the loop's own time"), "",
                      _summary(wall, judge, "the process's wall time"), "", _savings_summary(loop, judge), ""]
        lines += _own_traces(folder, judge)
        seen.add(heading)
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="exit 1 if the committed page differs")
    a = p.parse_args()
    text = page()
    if a.check:
        if not PAGE.exists() or PAGE.read_text() != text:
            print(f"{PAGE.relative_to(ROOT)} differs from what scripts/programs_page.py writes: run it",
                  file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
