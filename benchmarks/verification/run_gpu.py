"""Build, trace and time the verification programs on a GPU machine (run_gpu.sh calls this after
``source .device/bootstrap.sh``).

    python3 run_gpu.py --out DIR [--rounds 3] [--budget-s 450] [--only NAME,...] [--dry]

For each program: its as_written mode traced once by Nsight Systems (exported to SQLite; unified-memory faults
recorded for the managed program), once by torch.profiler (PyTorch programs, VERIFY_KINETO), then every mode
timed untraced by wall clock in ``--rounds`` rounds (each round runs every program's every mode, the even rounds
in reverse order). Writes DIR/timings/NAME.json (mode -> seconds, the loop's own seconds, checksums, the
machine) and DIR/traces/, and prints a summary table. Runs stop being started once ``--budget-s`` is spent.
With NSYS_PYTORCH=VALUE in the environment, the PyTorch programs are also traced by nsys with ``--pytorch=VALUE``
(``autograd-nvtx``: torch's operators as NVTX ranges, as ``umprof advise -- CMD`` traces a PyTorch program), that
trace named NAME_ops (renamed NAME.ops for advise_traces.py: its advice is judged as tracer ``ops.nsys``); with
NSYS_PYTORCH_ONLY=1 too, that is their only trace.
``--dry`` runs the PyTorch programs on the CPU (cpu_dryrun.py) with small sizes and no tracer: a check of this
script, not a measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import sqlite3
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULT = re.compile(r'\{"program": [^{}]*\}')  # a program's JSON result (flat)
PY = sys.executable
RUN_TIMEOUT_S = 90  # one program run; the longest mode takes about 3 s
TRACE_TIMEOUT_S = 180  # one traced run (nsys slows a Python program and writes its report)
NSYS_TRACE = ["-t", "cuda,nvtx,osrt", "--cuda-graph-trace=node", "-s", "none", "--cpuctxsw", "none"]  # no CPU
# sampling: it is not read, and it slows the traced run
NSYS_UM = ["--cuda-um-cpu-page-faults=true", "--cuda-um-gpu-page-faults=true"]
# the tables `umprof advise` reads, plus synchronisation and the capture's metadata (small test fixtures)
TRIM_TABLES = ("StringIds", "ENUM_CUDA_MEMCPY_OPER", "ENUM_CUDA_MEM_KIND", "TARGET_INFO_GPU", "PROCESSES",
               "TARGET_INFO_SESSION_START_TIME", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_KERNEL",
               "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUDA_UM_GPU_PAGE_FAULT_EVENTS",
               "CUDA_UM_CPU_PAGE_FAULT_EVENTS", "NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_GRAPH_TRACE", "ThreadNames",
               "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "ENUM_CUPTI_SYNC_TYPE", "META_DATA_CAPTURE",
               "META_DATA_EXPORT", "TARGET_INFO_CUDA_DEVICE", "TARGET_INFO_SYSTEM_ENV")

# name -> (how it runs: torch | torchrun | cupy | pycuda | c, program file, extra arguments, modes)
PROGRAMS = {
    "train_loader": ("torch", "train_loader.py", [], ["as_written", "loader_pinned", "dataset_pinned_once",
                                                      "dataset_on_gpu"]),
    "infer_service": ("torch", "infer_service.py", [], ["as_written", "pinned_prealloc", "two_streams"]),
    "offload_weights": ("torch", "offload_weights.py", [], ["as_written", "pinned_once", "pinned_side_stream"]),
    "pin_per_call": ("torch", "pin_per_call.py", [], ["as_written", "pageable", "pinned_once", "on_gpu"]),
    "small_copies": ("torch", "small_copies.py", [], ["as_written", "pinned_each", "packed"]),
    "resident": ("torch", "resident.py", [], ["as_written", "pinned_readback"]),
    "readback": ("torch", "readback.py", [], ["as_written", "pageable_prealloc", "pinned_prealloc"]),
    "readback_compute": ("torch", "readback.py", ["--mib", "4", "--work", "24", "--steps", "40"],
                         ["as_written", "pinned_prealloc"]),
    "managed_loop": ("c", "managed_loop.cu", [], ["as_written", "prefetch", "registered", "registered_window"]),
    "batch_loop": ("c", "batch_loop.cu", [], ["as_written", "pageable", "managed_prefetch"]),
    "cupy_batches": ("cupy", "cupy_batches.py", [], ["as_written", "pinned_staging", "pinned_once", "mapped"]),
    "ddp_train": ("torchrun", "ddp_train.py", [], ["as_written", "pinned_once", "on_gpu"]),
    "dict_batches": ("torch", "dict_batches.py", [], ["as_written", "pinned_each", "packed"]),
    "generate_tokens": ("torch", "generate_tokens.py", [], ["as_written", "gpu_tokens", "pinned_async"]),
    "loader_workers": ("torch", "loader_workers.py", [], ["as_written", "unpinned", "workers0"]),
    "pycuda_frames": ("pycuda", "pycuda_frames.py", [], ["as_written", "pinned", "pinned_async", "mapped"]),
    "activation_offload": ("torch", "activation_offload.py", [], ["as_written", "pinned_prealloc", "keep_on_gpu"]),
    "augment_batches": ("torch", "augment_batches.py", [], ["as_written", "pinned_prealloc", "gpu_augment"]),
    "embedding_gather": ("torch", "embedding_gather.py", [], ["as_written", "pinned_gather", "table_on_gpu"]),
    "ema_snapshots": ("torch", "ema_snapshots.py", [], ["as_written", "pinned_async", "ema_on_gpu"]),
    "dict_collate": ("torch", "dict_collate.py", [], ["as_written", "pinned_loader", "on_gpu"]),
    "cupy_readback": ("cupy", "cupy_readback.py", [], ["as_written", "pinned_out", "reduce_on_gpu"]),
    "seq_padding": ("torch", "seq_padding.py", [], ["as_written", "pinned_loader", "on_gpu"]),
    "chunked_stream": ("torch", "chunked_stream.py", [], ["as_written", "pinned_once", "double_buffered", "on_gpu"]),
    "memmap_batches": ("torch", "memmap_batches.py", [], ["as_written", "pinned_staging", "pinned_double",
                                                          "loaded_pinned", "on_gpu"]),
    "cpu_adam_offload": ("torch", "cpu_adam_offload.py", [], ["as_written", "pinned_buffers", "flat_pinned",
                                                              "gpu_optimizer"]),
    "eval_collect": ("torch", "eval_collect.py", [], ["as_written", "pinned_out", "gpu_collect", "pinned_in_out",
                                                      "dataset_on_gpu"]),
    "checkpoint_copies": ("torch", "checkpoint_copies.py", [], ["as_written", "pinned_snapshot", "side_stream",
                                                                "gpu_clone"]),
    "uint8_frames": ("torch", "uint8_frames.py", [], ["as_written", "pinned_float", "uint8_to_gpu", "uint8_pinned",
                                                      "frames_on_gpu"]),
    "metrics_logging": ("torch", "metrics_logging.py", [], ["as_written", "pinned_async", "gpu_metrics",
                                                            "side_stream"]),
    "kv_offload": ("torch", "kv_offload.py", [], ["as_written", "pinned_cache", "prefetch_next_layer",
                                                  "cache_on_gpu"]),
    "token_batches": ("torch", "token_batches.py", [], ["as_written", "pinned_nonblocking", "pretokenized_gpu",
                                                        "packed"]),
    "graph_replay": ("torch", "graph_replay.py", [], ["as_written", "pinned_staging", "dataset_pinned",
                                                      "dataset_on_gpu"]),
    "nonblocking_pageable": ("torch", "nonblocking_pageable.py", [], ["as_written", "pinned_buffer",
                                                                      "side_stream_prefetch", "augment_on_gpu"]),
    "tile_inference": ("torch", "tile_inference.py", [], ["as_written", "pinned_batches", "gpu_tiling", "side_stream"]),
    "sensor_frames": ("c", "sensor_frames.cu", [], ["as_written", "pinned", "registered", "pipelined", "zero_copy",
                                                    "managed"]),
    "heat_managed": ("c", "heat_managed.cu", [], ["as_written", "prefetch", "advise_accessed", "explicit",
                                                  "explicit_pageable"]),
    "pycuda_batches": ("pycuda", "pycuda_batches.py", [], ["as_written", "preallocated", "pinned", "pinned_async",
                                                           "registered", "resident"]),
    "shuffled_epochs": ("torch", "shuffled_epochs.py", [], ["as_written", "loader_pinned", "loader_workers",
                                                            "dataset_on_gpu", "gpu_epoch_loss"]),
    "rl_rollouts": ("torch", "rl_rollouts.py", [], ["as_written", "pinned_buffers", "gpu_storage", "pinned_gpu_storage",
                                                    "env_on_gpu"]),
    "video_pipeline": ("torch", "video_pipeline.py", [], ["as_written", "pinned_float", "gpu_normalize", "pinned_ring",
                                                          "side_stream"]),
    "cupy_fft_blocks": ("cupy", "cupy_fft_blocks.py", [], ["as_written", "pinned_pool", "pinned_staging",
                                                           "double_buffered", "on_gpu"]),
    "request_batching": ("torch", "request_batching.py", [], ["as_written", "pinned_prealloc", "gpu_packing",
                                                              "side_stream"]),
    "cpu_embedding_rows": ("torch", "cpu_embedding_rows.py", [], ["as_written", "pinned_staging", "table_pinned",
                                                                  "side_stream", "table_on_gpu"]),
    "replay_buffer": ("torch", "replay_buffer.py", [], ["as_written", "pinned_staging", "buffer_pinned",
                                                        "buffer_on_gpu", "side_stream_prefetch"]),
    "memory_bank": ("torch", "memory_bank.py", [], ["as_written", "pinned_nonblocking", "pinned_staging", "side_stream",
                                                    "bank_on_gpu"]),
    "jacobi_residual": ("c", "jacobi_residual.cu", [], ["as_written", "pinned", "async_lagged", "zero_copy",
                                                        "check_every"]),
    "point_clouds": ("torch", "point_clouds.py", [], ["as_written", "concat_pinned", "padded", "workers",
                                                      "dataset_on_gpu"]),
    "diffusion_preview": ("torch", "diffusion_preview.py", [], ["as_written", "pinned_async", "gpu_convert",
                                                                "previews_on_gpu"]),
    # its managed mode (every wall cell a page of its own, moved each step) is left out: minutes a run
    "halo_stencil": ("c", "halo_stencil.cu", [], ["as_written", "pinned", "async_output", "boundary_on_gpu"]),
    "graph_sampling": ("torch", "graph_sampling.py", [], ["as_written", "pinned_gather", "features_on_gpu",
                                                          "prefetch_thread"]),
    "sliding_windows": ("torch", "sliding_windows.py", [], ["as_written", "pinned_loader", "series_on_gpu", "workers"]),
    "audio_features": ("torch", "audio_features.py", [], ["as_written", "pinned_features", "gpu_features",
                                                          "waveforms_on_gpu"]),
    "pycuda_tiles": ("pycuda", "pycuda_tiles.py", [], ["as_written", "pinned", "pinned_async", "registered",
                                                       "resident"]),
    "tabular_pandas": ("torch", "tabular_pandas.py", [], ["as_written", "numpy_once", "pinned_once", "on_gpu"]),
    "sparse_features": ("torch", "sparse_features.py", [], ["as_written", "pinned_loader", "workers", "packed",
                                                            "dataset_on_gpu", "no_item"]),
    "detection_postprocess": ("torch", "detection_postprocess.py", [], ["as_written", "pinned_io", "batch_readback",
                                                                        "gpu_filter", "gpu_nms", "side_stream"]),
}
# the programs whose as_written mode uses managed memory: their unified-memory faults traced too
MANAGED_PROGRAMS = ("managed_loop", "heat_managed")
# --dry: small sizes for the CPU check
DRY_ARGS = {
    "train_loader": ["--mib", "16", "--batch", "64", "--epochs", "1"],
    "infer_service": ["--requests", "3", "--height", "16"],
    "offload_weights": ["--requests", "2", "--layers", "3", "--dim", "64"],
    "pin_per_call": ["--batches", "3", "--rows", "8"],
    "small_copies": ["--steps", "3", "--layers", "4"],
    "resident": ["--steps", "3", "--batch", "64"],
    "readback": ["--steps", "2", "--mib", "1"],
    "readback_compute": ["--steps", "2", "--mib", "1", "--work", "1"],
    "ddp_train": ["--mib", "16", "--batch", "64", "--epochs", "1"],
    "dict_batches": ["--steps", "3", "--batch", "64"],
    "generate_tokens": ["--steps", "40", "--prompts", "1", "--vocab", "500", "--dim", "64"],
    "loader_workers": ["--samples", "256", "--epochs", "1", "--width", "4"],
    "activation_offload": ["--steps", "2", "--layers", "3", "--rows", "16", "--dim", "32"],
    "augment_batches": ["--images", "16", "--batch", "4", "--epochs", "2"],
    "embedding_gather": ["--steps", "3", "--rows", "4096", "--dim", "16", "--batch", "64", "--hidden", "32"],
    "ema_snapshots": ["--steps", "8", "--every", "4", "--batch", "16", "--width", "64", "--depth", "3"],
    "dict_collate": ["--samples", "128", "--batch", "64", "--epochs", "1", "--side", "16", "--width", "4"],
    "seq_padding": ["--sequences", "64", "--batch", "16", "--epochs", "1", "--min-len", "4", "--max-len", "24",
                    "--dim", "16", "--layers", "1"],
    "chunked_stream": ["--mib", "8", "--chunk-mib", "1", "--cols", "256", "--passes", "2"],
    "memmap_batches": ["--mib", "8", "--batch-mib", "1", "--features", "256", "--hidden", "32", "--epochs", "1"],
    "cpu_adam_offload": ["--steps", "3", "--width", "64", "--depth", "3", "--batch", "16"],
    "eval_collect": ["--mib", "8", "--batch-mib", "1", "--features", "256", "--hidden", "32", "--classes", "100",
                     "--passes", "1"],
    "checkpoint_copies": ["--steps", "8", "--every", "4", "--width", "64", "--depth", "3", "--batch", "16"],
    "uint8_frames": ["--frames", "160", "--batch", "64", "--side", "32", "--passes", "1"],
    "metrics_logging": ["--epochs", "1", "--steps", "3", "--batch", "64", "--features", "16", "--hidden", "32",
                        "--classes", "50"],
    "kv_offload": ["--layers", "2", "--dim", "64", "--heads", "4", "--batch", "2", "--prompt", "16", "--new", "4",
                   "--vocab", "500"],
    "token_batches": ["--sequences", "80", "--batch", "16", "--epochs", "1", "--min-len", "4", "--max-len", "24",
                      "--dim", "16", "--layers", "1"],
    "graph_replay": ["--mib", "2", "--features", "256", "--batch", "64", "--hidden", "64", "--outputs", "32",
                     "--steps", "8"],
    "nonblocking_pageable": ["--rows", "256", "--noise-rows", "128", "--features", "64", "--batch", "64", "--hidden",
                             "32", "--steps", "8"],
    "tile_inference": ["--images", "2", "--side", "200", "--tile", "64", "--overlap", "16", "--batch", "5", "--width",
                       "8"],
    "shuffled_epochs": ["--mib", "16", "--batch", "64", "--epochs", "1", "--workers", "2", "--hidden", "64"],
    "rl_rollouts": ["--envs", "16", "--horizon", "8", "--rollouts", "2", "--epochs", "2", "--minibatches", "2",
                    "--episode", "5", "--noise-steps", "6"],
    "video_pipeline": ["--frames", "21", "--batch", "8", "--height", "96", "--width", "160", "--queue", "8",
                       "--channels", "8"],
    "request_batching": ["--requests", "60", "--min-len", "4", "--max-len", "40", "--max-batch", "8", "--token-budget",
                         "128", "--bucket", "8", "--vocab", "500", "--dim", "32", "--heads", "2", "--classes", "5"],
    "cpu_embedding_rows": ["--rows", "4096", "--dim", "16", "--batch", "64", "--lookups", "4", "--steps", "4",
                           "--hidden", "32"],
    "replay_buffer": ["--buffer", "5000", "--obs-dim", "32", "--actions", "6", "--batch", "64", "--steps", "25",
                      "--hidden", "32", "--target-every", "10"],
    "memory_bank": ["--bank", "2048", "--dim", "16", "--negatives", "256", "--batch", "64", "--steps", "40",
                    "--in-dim", "32", "--hidden", "64", "--samples", "256"],
    "point_clouds": ["--samples", "100", "--batch", "16", "--epochs", "2", "--min-points", "8", "--max-points", "64",
                     "--width", "32", "--workers", "2"],
    "diffusion_preview": ["--prompts", "2", "--steps", "6", "--batch", "3", "--side", "32", "--channels", "16"],
    "graph_sampling": ["--nodes", "20000", "--degree", "6", "--features", "32", "--classes", "4", "--train", "500",
                       "--batch", "64", "--fanout1", "5", "--fanout2", "3", "--hidden", "32", "--epochs", "2"],
    "sliding_windows": ["--channels", "4", "--length", "20000", "--window", "32", "--horizon", "8", "--batch", "16",
                        "--windows", "250", "--epochs", "2", "--hidden", "32", "--workers", "2"],
    "audio_features": ["--clips", "100", "--seconds", "0.25", "--batch", "16", "--epochs", "2", "--mels", "16",
                       "--width", "4"],
    "tabular_pandas": ["--rows", "1000", "--batch", "64", "--hidden", "32", "--epochs", "2"],
    "sparse_features": ["--samples", "300", "--batch", "64", "--epochs", "2", "--rows", "5000", "--max-len", "12",
                        "--dim", "8", "--hidden", "32", "--workers", "2"],
    "detection_postprocess": ["--frames", "37", "--batch", "8", "--height", "96", "--width", "128", "--channels", "8",
                              "--classes", "5", "--pre-nms", "100", "--max-det", "40"],
}


class Budget:
    """Seconds left of the call's budget."""

    def __init__(self, seconds: float):
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return self.end - time.monotonic()


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def command(name: str, mode: str, out: Path, dry: bool) -> list[str]:
    """The command line that runs one program in one mode (no tracer)."""
    how, prog, extra, _ = PROGRAMS[name]
    src = str(HERE / prog)
    args = ["--mode", mode, *(DRY_ARGS.get(name, extra) if dry else extra)]
    if how == "c":
        return [str(out / "bin" / name), *args]
    if dry:
        src = [str(HERE / "cpu_dryrun.py"), src]
    else:
        src = [src]
    if how == "torchrun":
        runner = [str(Path(PY).with_name("torchrun"))] if Path(PY).with_name("torchrun").exists() else \
            [PY, "-m", "torch.distributed.run"]
        return [*runner, "--standalone", "--nproc-per-node", "2", *src, *args]
    return [PY, *src, *args]


def build(out: Path, dry: bool) -> None:
    (out / "bin").mkdir(parents=True, exist_ok=True)
    procs = []
    for name, (how, prog, _, _) in PROGRAMS.items():
        if how == "c":
            cmd = ["nvcc", "-O2", "-arch=sm_90", "-o", str(out / "bin" / name), str(HERE / prog)]
            procs.append((name, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
    for name, p in procs:
        text, _ = p.communicate()
        log(f"build {name}: exit {p.returncode} {text.strip()[-300:]}")


def run_json(cmd: list[str], env: dict | None = None, timeout: float = RUN_TIMEOUT_S) -> dict:
    """One run: its exit status, wall seconds (process start to exit), and the JSON lines it printed."""
    start = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        rc, stdout, stderr = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, stdout, stderr = 124, (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""), "timeout"
    wall = time.perf_counter() - start
    lines = []
    for obj in RESULT.findall(stdout):  # ranks' lines may interleave on one pipe: objects, not lines
        try:
            lines.append(json.loads(obj))
        except ValueError:
            pass
    return {"rc": rc, "wall_s": round(wall, 4), "lines": lines,
            "stderr": (stderr[-1200:] + stdout[-300:]) if rc or not lines else ""}


def trace_nsys(name: str, out: Path, dry: bool, exports: list, ops: str = "") -> None:
    """The as_written mode under nsys (with ``--pytorch=ops`` where given, as NAME_ops); the SQLite export started in
    the background (collected later)."""
    how = PROGRAMS[name][0]
    tdir = out / "traces"
    cmd = command(name, "as_written", out, dry)
    flags = NSYS_TRACE + (NSYS_UM if name in MANAGED_PROGRAMS else [])
    if ops:
        flags, name = flags + [f"--pytorch={ops}"], f"{name}_ops"
    if dry:
        log(f"nsys {name} (dry: not traced): {shlex.join(cmd)}")
        return
    if how == "torchrun":
        stems = [tdir / f"{name}_rank_0", tdir / f"{name}_rank_1"]
        i = cmd.index("--nproc-per-node") + 2
        cmd = [*cmd[:i], "--no-python", "nsys", "profile", *flags, "--force-overwrite", "true", "-o",
               str(tdir / f"{name}_rank_%q{{RANK}}"), PY, *cmd[i:]]
    else:
        stems = [tdir / name]
        cmd = ["nsys", "profile", *flags, "--force-overwrite", "true", "-o", str(tdir / name), *cmd]
    r = run_json(cmd, timeout=TRACE_TIMEOUT_S)
    (tdir / f"{name}.nsys.log").write_text(json.dumps(r, indent=1))
    log(f"nsys {name}: exit {r['rc']} wall {r['wall_s']} s {r['lines'][-1:] if r['lines'] else r['stderr'][-300:]}")
    for stem in stems:
        rep = stem.with_suffix(".nsys-rep")
        if rep.exists():
            exports.append((stem, subprocess.Popen(
                ["nsys", "export", "--type", "sqlite", "--force-overwrite", "true", "-o", str(stem.with_suffix(".sqlite")),
                 str(rep)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)))


def trace_kineto(name: str, out: Path, dry: bool) -> None:
    """The as_written mode under torch.profiler (PyTorch programs): NAME.json per process, then gzip."""
    how = PROGRAMS[name][0]
    if how not in ("torch", "torchrun"):
        return
    tdir = out / "traces"
    path = tdir / (f"{name}_rank{{rank}}.json" if how == "torchrun" else f"{name}.json")
    env = dict(os.environ, VERIFY_KINETO=str(path))
    r = run_json(command(name, "as_written", out, dry), env=env, timeout=TRACE_TIMEOUT_S)
    log(f"kineto {name}: exit {r['rc']} wall {r['wall_s']} s {r['lines'][-1:] if r['lines'] else r['stderr'][-300:]}")
    for f in tdir.glob(f"{name}*.json"):
        subprocess.run(["gzip", "-f", "-6", str(f)])


def trim(src: Path, dst: Path, tables=TRIM_TABLES) -> None:
    """A copy of an nsys SQLite export with only ``tables`` (the processes: those that made CUDA calls)."""
    dst.unlink(missing_ok=True)
    con = sqlite3.connect(dst)
    con.execute("ATTACH DATABASE ? AS src", (f"file:{src}?mode=ro",))
    have = {r[0] for r in con.execute("SELECT name FROM src.sqlite_master WHERE type = 'table'")}
    for t in tables:
        if t not in have:
            continue
        con.execute(con.execute("SELECT sql FROM src.sqlite_master WHERE name = ?", (t,)).fetchone()[0])
        where = ""
        if t == "PROCESSES" and "CUPTI_ACTIVITY_KIND_RUNTIME" in have:
            where = "WHERE globalPid IN (SELECT DISTINCT (globalTid >> 24) << 24 FROM src.CUPTI_ACTIVITY_KIND_RUNTIME)"
        con.execute(f"INSERT INTO main.{t} SELECT * FROM src.{t} {where}")
    con.commit()
    con.execute("DETACH DATABASE src")
    con.execute("VACUUM")
    con.close()


def finish_exports(out: Path, exports: list) -> None:
    """Wait for the SQLite exports; keep a trimmed copy of each and the whole export with OS runtime calls."""
    for stem, p in exports:
        p.wait()
        db = stem.with_suffix(".sqlite")
        log(f"export {stem.name}: exit {p.returncode}, {db.stat().st_size / 2**20:.1f} MiB" if db.exists()
            else f"export {stem.name}: exit {p.returncode}, no sqlite")
        if db.exists():
            trim(db, out / "traces" / f"{stem.name}.trim.sqlite")
            trim(db, out / "traces" / f"{stem.name}.osrt.sqlite", TRIM_TABLES + ("OSRT_API", "ENUM_OSRT_API"))
            db.unlink()
            stem.with_suffix(".nsys-rep").unlink(missing_ok=True)


def machine() -> dict:
    gpu = driver = ""
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=30).stdout.strip().splitlines()[0]
        gpu, driver = [s.strip() for s in q.split(",")]
    except (OSError, IndexError, ValueError, subprocess.TimeoutExpired):
        pass
    return {"gpu": gpu, "driver": driver, "cpu_count": os.cpu_count(), "cpu": platform.processor(),
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}


def time_modes(names: list[str], out: Path, rounds: int, budget: Budget, dry: bool) -> dict:
    """Every mode of every program, untraced, in rounds (even rounds reversed); stops starting runs when the
    budget is spent. name -> mode -> list of run records."""
    runs = [(n, m) for n in names for m in PROGRAMS[n][3]]
    records = {n: {m: [] for m in PROGRAMS[n][3]} for n in names}
    for r in range(1, rounds + 1):
        order = runs if r % 2 else runs[::-1]
        for n, m in order:
            if budget.left() < 20:
                log(f"budget spent: round {r} stops before {n} {m}")
                return records
            rec = run_json(command(n, m, out, dry))
            rec["round"] = r
            records[n][m].append(rec)
            if rec["rc"]:
                log(f"{n} {m} round {r}: exit {rec['rc']} {rec['stderr'][-400:]}")
        log(f"round {r} done, {budget.left():.0f} s left")
    return records


def command_text(name: str) -> str:
    """How a program runs, as a user would type it (its modes added with --mode)."""
    how, prog, extra, _ = PROGRAMS[name]
    runner = {"c": [f"./{name}"], "torchrun": ["torchrun", "--standalone", "--nproc-per-node", "2", prog]}
    line = runner.get(how, ["python3", prog]) + extra
    built = f" (built by nvcc -O2 -arch=sm_90 {prog})" if how == "c" else ""
    return shlex.join(line) + built


def summarize(name: str, recs: dict, info: dict) -> dict:
    """The timings JSON of one program."""
    doc = {"program": name, "command": command_text(name), **info, "modes": {}}
    for mode, rs in recs.items():
        ok = [r for r in rs if r["rc"] == 0 and r["lines"]]
        loops = [max(line["loop_s"] for line in r["lines"]) for r in ok]
        sums = sorted({r["lines"][0]["checksum"] for r in ok})
        doc["modes"][mode] = {"wall_s": [r["wall_s"] for r in ok], "loop_s": loops, "checksums": sums,
                              "failed": [{"round": r["round"], "rc": r["rc"], "stderr": r["stderr"][-300:]}
                                         for r in rs if r not in ok]}
    allsums = [s for m in doc["modes"].values() for s in m["checksums"]]
    ref = allsums[0] if allsums else None
    doc["checksums_agree"] = bool(allsums) and all(abs(s - ref) <= 1e-4 * max(1.0, abs(ref)) for s in allsums)
    return doc


def table(docs: list[dict]) -> str:
    rows = [f"{'program':18s} {'mode':20s} {'loop s (median)':>15s} {'wall s':>8s} {'runs':>4s}  checks"]
    for d in docs:
        for mode, m in d["modes"].items():
            loop = f"{statistics.median(m['loop_s']):.3f}" if m["loop_s"] else "-"
            wall = f"{statistics.median(m['wall_s']):.3f}" if m["wall_s"] else "-"
            rows.append(f"{d['program']:18s} {mode:20s} {loop:>15s} {wall:>8s} {len(m['loop_s']):>4d}  "
                        f"{'ok' if d['checksums_agree'] else 'DIFFER'} {m['checksums'][:2]}")
    return "\n".join(rows)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--budget-s", type=float, default=450)
    p.add_argument("--only", default="")
    p.add_argument("--dry", action="store_true")
    p.add_argument("--skip-traces", action="store_true")
    a = p.parse_args()
    budget = Budget(a.budget_s)
    names = [n for n in (a.only.split(",") if a.only else PROGRAMS)]
    if a.dry:
        names = [n for n in names if PROGRAMS[n][0] in ("torch", "torchrun")]
    (a.out / "traces").mkdir(parents=True, exist_ok=True)
    (a.out / "timings").mkdir(parents=True, exist_ok=True)
    info = machine()
    log(f"machine: {info}")
    if not a.dry:
        build(a.out, a.dry)
    exports = []
    if not a.skip_traces:
        ops, ops_only = os.environ.get("NSYS_PYTORCH", ""), bool(os.environ.get("NSYS_PYTORCH_ONLY"))
        for n in names:
            torch = PROGRAMS[n][0] in ("torch", "torchrun")
            if not (ops_only and torch):
                trace_nsys(n, a.out, a.dry, exports)
            if ops and torch:
                trace_nsys(n, a.out, a.dry, exports, ops)
        for n in names if not ops_only else []:
            trace_kineto(n, a.out, a.dry)
        finish_exports(a.out, exports)
    log(f"traces done, {budget.left():.0f} s left")
    records = time_modes(names, a.out, a.rounds, budget, a.dry)
    docs = [summarize(n, records[n], info) for n in names]
    for d in docs:
        (a.out / "timings" / f"{d['program']}.json").write_text(json.dumps(d, indent=1))
    print(table(docs), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
