"""Where each way of an application spends its time, phase by phase, beside what the calibration predicts.

`judge.py` times every mode of an application by wall clock; this says which phase a mode's time
differs in. On a GPU machine (nvcc and nsys on PATH), from the checkout's root:

    python3 benchmarks/apps/mode_phases.py trace OUT_DIR [--only upload_once,table_loop] [--rounds 3] [--modes M,M]

builds the applications, traces every mode (or those ``--modes`` names, the own mode always) once (``OUT_DIR/modes/<app>-<mode>.sqlite``) and times
each untraced in run_apps.py's rounds (``OUT_DIR/modes.json``: each run's wall time, the parts the program
times itself, ``marks_s``, and its checksum, which every mode must share with the own mode's; a file
`judge.py` judges as it judges run_apps.py's, with the own mode's trace as ``<app>.sqlite``). Then, anywhere:

    python3 benchmarks/apps/mode_phases.py read OUT_DIR [--json OUT.json]

reads each trace's CUDA calls into phases: ``alloc`` (host and device allocations, registrations and
advice before the first copy, prefetch or kernel; the first of them holds the context's creation, about
0.16 s, where the model's figure does not), ``write`` (the host's time before the
first copy, prefetch or kernel: producing the input), ``run`` (from there to the last call before the
releases), ``free`` (releases), ``exit`` (the untraced runs' median wall time less the traced run's span of
calls: the process's start and exit, and whatever tracing changed), and sets beside them the model's phases for the
workload `umprof advise` reads from the own mode's trace: alloc, host_init, the iterations and free.
The untraced runs' own clock gives the same parts (``outside``: the process's start and exit).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

ALLOC = ("cudaMallocHost", "cudaHostAlloc", "cudaHostRegister", "cudaMallocManaged", "cudaMalloc_", "cudaMemAdvise")
FREE = ("cudaFreeHost", "cudaHostUnregister", "cudaFree_", "cudaStreamDestroy")
WORK = ("cudaMemcpy", "cudaMemPrefetch", "cudaLaunchKernel")


def trace(out: Path, only: list[str], rounds: int, modes: list[str] | None = None) -> list[str]:
    """Every mode of the applications ``only`` names (or those of ``modes`` each has, its own mode always):
    one nsys trace each, and ``rounds`` untraced runs (run_apps.py's rounds); what does not agree with the
    own mode's checksum, a line each."""
    from run_apps import APPS, TRACE, build, checksums_disagree, timings_header, time_modes

    cmds = build(out, None, only)
    modes_dir = out / "modes"
    modes_dir.mkdir(parents=True, exist_ok=True)
    doc = timings_header(rounds)
    chosen = {name: modes_of(APPS[name], modes) for name in cmds}
    for name, cmd in cmds.items():
        for m in chosen[name]:
            stem = modes_dir / f"{name}-{m}"
            subprocess.run(TRACE + ["-o", str(stem)] + cmd + ["--mem", m], check=True, capture_output=True)
            Path(f"{stem}.nsys-rep").unlink(missing_ok=True)
        doc["apps"][name] = {"own_mode": APPS[name][0],
                             "modes": {m: {"wall_s": [], "loop_s": [], "marks_s": [], "checksum": None}
                                       for m in chosen[name]}}
    time_modes(doc, cmds, rounds, out / "modes.json")
    bad = checksums_disagree(doc)
    (out / "modes.json").write_text(json.dumps(doc, indent=1))
    return bad


def modes_of(app_modes: list[str], modes: list[str] | None) -> list[str]:
    """An application's modes (its own first) that ``modes`` names, its own always; all of them for None."""
    return [m for i, m in enumerate(app_modes) if i == 0 or modes is None or m in modes]


def phases(sqlite: Path) -> dict[str, float]:
    """The CUDA calls of one traced run, read into phases (seconds; see the module's docstring)."""
    db = sqlite3.connect(sqlite)
    calls = db.execute("select r.start, r.end, s.value from CUPTI_ACTIVITY_KIND_RUNTIME r join StringIds s "
                       "on r.nameId = s.id order by r.start").fetchall()
    db.close()
    t0 = calls[0][0]
    out = {"alloc": 0.0, "write": 0.0, "run": 0.0, "free": 0.0}
    first_work = next((i for i, c in enumerate(calls) if c[2].startswith(WORK)), len(calls))
    last_work = max((i for i, c in enumerate(calls) if not c[2].startswith(FREE)), default=0)
    for i, (s, e, name) in enumerate(calls):
        if i < first_work and name.startswith(ALLOC):
            out["alloc"] += (e - s) / 1e9
        elif i > last_work and name.startswith(FREE):
            out["free"] += (e - s) / 1e9
    prev_end = max(e for s, e, _ in calls[:first_work]) if first_work else t0
    out["write"] = (calls[first_work][0] - prev_end) / 1e9 if first_work < len(calls) else 0.0
    out["run"] = (calls[last_work][1] - calls[first_work][0]) / 1e9 if first_work < len(calls) else 0.0
    out["calls_s"] = (max(e for _, e, _ in calls) - t0) / 1e9
    return out


def untraced_parts(rec: dict) -> dict[str, float] | None:
    """A mode's parts by the program's own clock (its ``marks_s``: when allocation, the first write, the loop
    and the releases ended), each the median over its runs; ``outside``: the wall time past the releases
    (the process's start and exit). None for runs that did not time their parts."""
    runs = [(w, x) for w, x in zip(rec["wall_s"], rec.get("marks_s", [])) if x]
    if not runs:
        return None
    ends = ["alloc", "write", "loop", "free"]

    def part(i):
        return statistics.median(x[ends[i]] - (x[ends[i - 1]] if i else 0.0) for _, x in runs)

    return {"alloc": part(0), "write": part(1), "run": part(2), "free": part(3),
            "outside": statistics.median(w - x["free"] for w, x in runs)}


def read(out: Path) -> dict:
    """Each mode's traced phases, its untraced wall time, and the model's phases beside them."""
    from umprof import api
    from umprof.core import calibrations as store

    doc = json.loads((out / "modes.json").read_text())
    result = {"gpu": doc["gpu"], "apps": {}}
    for name, app in doc["apps"].items():
        (adv,) = api.advise(out / "modes" / f"{name}-{app['own_mode']}.sqlite")
        cal = api.load_calibration(store.for_gpu(adv.app.gpu, adv.app.memory_bytes or None).path)
        rows = {}
        for m, rec in app["modes"].items():
            ph = phases(out / "modes" / f"{name}-{m}.sqlite")
            wall = statistics.median(rec["wall_s"]) if rec["wall_s"] else None
            ph["exit"] = wall - ph["calls_s"] if wall else None
            p = cal.predict(m, adv.workload)
            model = {"alloc": p.setup["alloc"], "write": p.setup["host_init"],
                     "run": p.setup["first_extra"] + p.iterations * p.steady_s, "free": p.setup["free"],
                     "whole": p.whole_s}
            rows[m] = {"wall_s": wall, "trace": ph, "untraced": untraced_parts(rec), "model": model}
        result["apps"][name] = rows
    return result


def _table(rows: dict, title: str, parts: str, last: str) -> None:
    """One table: each mode's ``parts`` ("untraced" or "trace") beside the model's, and its ``last`` part."""
    print(f"\n{title}")
    print(f"  {'mode':31s} {'wall':>6s} {'alloc':>13s} {'write':>13s} {'run':>13s} {'free':>13s} {last:>7s} "
          f"{'wall-model':>10s}")
    for m, r in sorted(((m, r) for m, r in rows.items() if r["wall_s"] is not None), key=lambda kv: kv[1]["wall_s"]):
        u, mo = r[parts], r["model"]
        cells = " ".join(f"{u[k]:6.3f}|{mo[k]:6.3f}" for k in ("alloc", "write", "run", "free"))
        print(f"  {m:31s} {r['wall_s']:6.3f} {cells} {u[last]:7.3f} {r['wall_s'] - mo['whole']:10.3f}")


def show(result: dict) -> None:
    print(result["gpu"])
    for name, rows in result["apps"].items():
        if all(r["untraced"] for r in rows.values() if r["wall_s"] is not None):
            _table(rows, f"{name}: untraced (the program's own clock, median) | model (s)", "untraced", "outside")
        _table(rows, f"{name}: traced | model (s)", "trace", "exit")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("trace", help="build, trace every mode once and time each untraced (GPU machine)")
    t.add_argument("out", type=Path, help="where the traces and modes.json go")
    t.add_argument("--only", default="upload_once,table_loop",
                   help="the applications, comma-separated (default: upload_once,table_loop)")
    t.add_argument("--rounds", type=int, default=3, help="untraced runs of every mode (default: 3)")
    t.add_argument("--modes", default=None,
                   help="only these modes, comma-separated (each application's own mode is always traced)")
    r = sub.add_parser("read", help="read the traces into phases beside the model's")
    r.add_argument("out", type=Path, help="what `trace` wrote")
    r.add_argument("--json", type=Path, default=None, help="also write the parts, the traced and the model's, here")
    a = ap.parse_args()
    if a.cmd == "trace":
        from run_apps import APPS

        unknown = sorted(set(a.only.split(",")) - set(APPS))
        if unknown:
            t.error(f"option '--only': no application {', '.join(unknown)} (there are: {', '.join(APPS)})")
        modes = a.modes.split(",") if a.modes else None
        known = {m for ms in APPS.values() for m in ms}
        if modes and set(modes) - known:
            t.error(f"option '--modes': no mode {', '.join(sorted(set(modes) - known))} "
                    f"(there are: {', '.join(sorted(known))})")
        bad = trace(a.out, a.only.split(","), a.rounds, modes)
        if bad:
            print("checksums differ: " + "; ".join(bad))
            raise SystemExit(1)
    else:
        if not (a.out / "modes.json").is_file():
            r.error(f"{a.out}: no modes.json here; expected the folder `mode_phases.py trace` wrote")
        result = read(a.out)
        show(result)
        if a.json:
            a.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
