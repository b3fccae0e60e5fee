"""Build the applications, trace each one's own mode with Nsight Systems, and time every mode by wall clock.

Run on a GPU machine from the checkout's root (nvcc and nsys on PATH):

    python3 benchmarks/apps/run_apps.py OUT_DIR [--rounds 3] [--samples PATH_TO_cuda-samples] [--only APP,...]

Writes ``OUT_DIR/traces/<app>.sqlite`` (the trace of the application as written, what
``umprof advise`` reads) and ``OUT_DIR/apps.json``: for each application its own mode, and for
every mode the wall time of each run (process start to exit), the loop's own time and the checksum
(every mode must compute the same). Modes run in rounds, the even rounds in reverse order, so that
a slow spell of the machine weighs on one run of each mode rather than on one mode. A mode whose run
fails is recorded with its error (``error``) and left out of the later rounds; the others go on. NVIDIA's
cuda-samples (``--samples``) are traced and timed as they are, in one mode. ``--only`` runs the
applications it names alone (an application added later, measured in a run of its own).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
ALL = ["pageable", "pinned", "write-combined", "zero-copy", "mapped", "managed", "managed-prefetch",
       "managed-advise-prefer-gpu", "managed-advise-prefer-host", "managed-advise-accessed-by-gpu", "pinned-pipelined",
       "pageable-staged", "pageable-registered"]
APPS = {  # application → the modes it is timed in (its own first)
    "stream_loop": ALL,
    "small_copies": ALL,
    "overlapped": ["pinned-pipelined"] + [m for m in ALL if m != "pinned-pipelined"],
    "managed_loop": ["managed", "managed-prefetch", "managed-advise-read-mostly", "managed-advise-prefer-gpu",
                     "managed-advise-prefer-host", "managed-advise-accessed-by-gpu", "pageable", "pinned",
                     "write-combined", "zero-copy", "mapped", "pageable-staged", "pageable-registered"],
    "pycuda_loop": ["pageable", "pinned", "write-combined", "zero-copy", "managed", "pageable-registered"],
    # one input and a smaller output: no pipelined mode (a chunk's kernel reads its own chunk alone)
    "upload_once": [m for m in ALL if m != "pinned-pipelined"],
    "table_loop": [m for m in ALL if m != "pinned-pipelined"] + ["managed-advise-read-mostly"],
    "slow_producer": [m for m in ALL if m != "pinned-pipelined"],
    # a small input and a large output: no pipelined mode (a chunk's kernel reads its own chunk alone)
    "readback_loop": [m for m in ALL if m != "pinned-pipelined"],
    "compute_loop": ALL,
}
# idioms.cu: one binary, an application an idiom (`idioms IDIOM --mem MODE`), in the modes it can allocate
IDIOMS = {"thrust": ["pageable", "pinned", "pageable-registered"],
          "pitched": ["pageable", "pinned", "pageable-registered"],
          "graph": ["pinned", "pageable-registered"],  # stream capture takes no pageable copy
          "pool": ["pageable", "pinned", "pageable-registered"],
          "threads": ["pageable", "pinned", "pageable-registered"]}
APPS.update(IDIOMS)
# held-out shapes: the frame loop's applications run with other settings, chosen before they were measured to
# cover what the others leave out (name → the binary, its options, the modes it is timed in, its own first)
VARIANTS = {
    "small_frames": ("stream_loop", ["--in", "1", "--out", "1", "--iters", "600"], ALL),
    "partial_update": ("stream_loop", ["--in", "128", "--out", "16", "--new", "0.25", "--iters", "30"],
                       [m for m in ALL if m != "pinned-pipelined"]),
    "managed_stream": ("stream_loop", ["--mem", "managed", "--iters", "30"],
                       ["managed"] + [m for m in ALL if m != "managed"]),
    "moderate_kernel": ("compute_loop", ["--in", "64", "--out", "64", "--work", "2000", "--iters", "20"], ALL),
    "chunked_pinned": ("stream_loop", ["--mem", "pinned", "--in", "32", "--out", "32", "--copies", "16",
                                       "--iters", "60"], ["pinned"] + [m for m in ALL if m != "pinned"]),
    "heavy_host": ("stream_loop", ["--in", "32", "--out", "32", "--host-work", "16", "--iters", "30"], ALL),
    # fixed before their first measurement, like the six above: a few passes over a large buffer (between a
    # one-shot job and a loop: does pinning 1 GiB pay back in four steps?) and managed memory of which the host
    # rewrites a twentieth each step (sparse host updates of a buffer the GPU reads whole)
    "few_big": ("stream_loop", ["--in", "512", "--out", "512", "--iters", "4"], ALL),
    "managed_partial": ("stream_loop", ["--mem", "managed", "--in", "256", "--out", "16", "--new", "0.05",
                                        "--iters", "30"],
                        ["managed"] + [m for m in ALL if m not in ("managed", "pinned-pipelined")]),
    # fixed before its first measurement, after few_big moved how the host's first write is priced: a small
    # input and a large output for a few steps (the output's pages first touched by the copies back, or not)
    "big_output": ("readback_loop", ["--in", "16", "--out", "512", "--iters", "3"],
                   [m for m in ALL if m != "pinned-pipelined"]),
}
APPS.update({name: modes for name, (_, _, modes) in VARIANTS.items()})
SAMPLES = ["vectorAdd", "simpleStreams", "asyncAPI"]
TRACE = ["nsys", "profile", "-t", "cuda,nvtx", "--cuda-graph-trace=node", "--cuda-um-gpu-page-faults=true", "--cuda-um-cpu-page-faults=true",
         "--export", "sqlite", "--force-overwrite", "true"]


def _source(name: str) -> tuple[str, list[str]]:
    """The CUDA source an application is built from (its name, without .cu) and the arguments it runs with."""
    if name in IDIOMS:
        return "idioms", [name]
    if name in VARIANTS:
        source, args, _ = VARIANTS[name]
        return source, list(args)
    return name, []


def build(out: Path, samples: Path | None, only: list[str] | None = None) -> dict[str, list[str]]:
    """name → the command that runs it (the CUDA applications compiled into ``out/bin``), all of them or
    those ``only`` names."""
    bin_dir = out / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    cmds, built = {}, set()
    for name in (n for n in APPS if not only or n in only):
        if name == "pycuda_loop":
            cmds[name] = [sys.executable, str(HERE / "pycuda_loop.py")]
            continue
        source, args = _source(name)
        exe = bin_dir / source
        if source not in built:  # a source once for all the applications it is
            built.add(source)
            subprocess.run(["nvcc", "-O2", "-arch=sm_90", "-std=c++17", "-o", str(exe), str(HERE / f"{source}.cu")],
                           check=True)
        cmds[name] = [str(exe)] + args
    if samples:
        for name in (n for n in SAMPLES if not only or n in only):
            exe = bin_dir / name
            src = samples / "Samples" / "0_Introduction" / name / f"{name}.cu"
            subprocess.run(["nvcc", "-O2", "-arch=sm_90", "-I", str(samples / "Common"), "-o", str(exe), str(src)],
                           check=True)
            cmds[name] = [str(exe)]
    return cmds


class RunFailed(RuntimeError):
    """One run of an application exited with an error (its command and the end of its stderr)."""


def run_once(cmd: list[str]) -> dict:
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise RunFailed(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()[-500:]}")
    line = next((x for x in p.stdout.splitlines()[::-1] if x.startswith("{")), None)
    return dict(json.loads(line) if line else {}, wall_s=wall)


def timings_header(rounds: int) -> dict:
    """The timings' document, before any application: the GPU the applications run on (GPU 0, with its
    driver), the date, the host and the rounds."""
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader", "--id=0"],
                         capture_output=True, text=True).stdout.strip()
    return {"gpu": gpu, "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "host": platform.node(),
            "rounds": rounds, "apps": {}}


def checksums_disagree(doc: dict) -> list[str]:
    """Every mode must compute what the application's own mode computes (the chunked ones add their chunks'
    sums in another order: equal to a few parts in 1e12); each application's ``checksums_agree`` set, and a
    line for each that does not."""
    bad = []
    for name, app in doc["apps"].items():
        sums = {m: v["checksum"] for m, v in app["modes"].items() if v["checksum"] is not None}
        own = sums.get(app["own_mode"])
        wrong = {m: c for m, c in sums.items() if own is not None and abs(c - own) > 1e-9 * max(abs(own), 1.0)}
        app["checksums_agree"] = not wrong
        if wrong:
            bad.append(f"{name}: {wrong} against {own}")
    return bad


def time_modes(doc: dict, cmds: dict[str, list[str]], rounds: int, progress: Path, run=run_once) -> None:
    """Every application's every mode, ``rounds`` times (the even rounds in reverse order), each run's wall
    time, loop time, parts (where the program times them) and checksum into ``doc``; ``progress`` rewritten after each round. A mode whose run
    fails gets its ``error`` and is left out from then on; the others go on."""
    for r in range(rounds):
        for name, cmd in cmds.items():
            modes = list(doc["apps"][name]["modes"])
            for m in (modes if r % 2 == 0 else modes[::-1]):
                rec = doc["apps"][name]["modes"][m]
                if "error" in rec:
                    continue
                try:
                    res = run(cmd + (["--mem", m] if name in APPS else []))
                except RunFailed as e:
                    rec["error"] = str(e)
                    print(f"round {r + 1}: {name} --mem {m}: {e}", flush=True)
                    continue
                rec["wall_s"].append(res["wall_s"])
                if "loop_s" in res:
                    rec["loop_s"].append(res["loop_s"])
                if "marks_s" in res:  # when the program's parts ended (frame_loop.h), for mode_phases.py
                    rec.setdefault("marks_s", []).append(res["marks_s"])
                if rec["checksum"] is None:
                    rec["checksum"] = res.get("checksum")
            print(f"round {r + 1}: {name} done", flush=True)
        progress.write_text(json.dumps(doc, indent=1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--samples", type=Path, default=None)
    ap.add_argument("--only", default=None, help="the applications to run, comma-separated (default: all)")
    a = ap.parse_args()
    only = a.only.split(",") if a.only else None
    unknown = sorted(set(only or ()) - set(APPS) - set(SAMPLES))
    if unknown:
        ap.error(f"option '--only': no application {', '.join(unknown)} (there are: {', '.join([*APPS, *SAMPLES])})")
    out = a.out
    (out / "traces").mkdir(parents=True, exist_ok=True)
    cmds = build(out, a.samples, only)
    doc = timings_header(a.rounds)
    for name, cmd in cmds.items():  # warm-up (pycuda compiles its kernel once, into its cache) and the trace
        run_once(cmd)
        modes = APPS.get(name, ["as written"])
        trace = out / "traces" / name
        subprocess.run(TRACE + ["-o", str(trace)] + cmd, check=True, capture_output=True)
        (out / "traces" / f"{name}.nsys-rep").unlink(missing_ok=True)
        doc["apps"][name] = {"own_mode": modes[0], "command": " ".join(Path(c).name for c in cmd),
                             "modes": {m: {"wall_s": [], "loop_s": [], "checksum": None} for m in modes}}
    time_modes(doc, cmds, a.rounds, out / "apps.json")
    bad = checksums_disagree(doc)
    (out / "apps.json").write_text(json.dumps(doc, indent=1))
    for name, app in doc["apps"].items():
        for m, v in app["modes"].items():
            w = sorted(v["wall_s"])[len(v["wall_s"]) // 2]
            print(f"{name:14s} {m:28s} wall {w:7.3f} s" + ("   (own)" if m == app["own_mode"] else ""))
    if shutil.which("tar"):
        subprocess.run(["tar", "czf", str(out / "traces.tar.gz"), "-C", str(out), "traces"], check=True)
    failed = [f"{name} --mem {m}" for name, app in doc["apps"].items() for m, v in app["modes"].items() if "error" in v]
    if failed:
        print("failed, left out: " + "; ".join(failed))
    if bad:
        print("checksums differ: " + "; ".join(bad))
    return 1 if bad or failed else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
