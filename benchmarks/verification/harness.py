"""What every PyTorch verification program shares: its command line (``--mode``), the timing of its loop, the
optional torch.profiler trace of that loop and the one JSON line it prints last.

A program calls ``args = parse(MODES, ...)`` and then ``report(args, loop)`` where ``loop()`` runs the program's
loop and returns its checksum (a float). The loop is timed by wall clock, after ``torch.cuda.synchronize()`` on
both sides. With ``VERIFY_KINETO=PATH`` set, the loop runs inside
``torch.profiler.profile(activities=[CPU, CUDA])`` and the trace is written to PATH with ``export_chrome_trace`` ("{rank}" in PATH replaced by torchrun's RANK).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time


def parse(modes: tuple[str, ...], doc: str, **options) -> argparse.Namespace:
    """The program's arguments: ``--mode`` (one of ``modes``, the first by default) and ``options``
    (name -> default, each an ``--name`` of the default's type)."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--mode", choices=modes, default=modes[0])
    for name, default in options.items():
        p.add_argument("--" + name.replace("_", "-"), type=type(default), default=default)
    return p.parse_args()


def _sync() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def _profiled(loop, path: str):
    import torch
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(ProfilerActivity.CUDA)
    with profile(activities=activities) as prof:
        checksum = loop()
        _sync()
    prof.export_chrome_trace(path)
    return checksum


def report(args: argparse.Namespace, loop, program: str) -> None:
    """Run ``loop`` once, timed (and traced where VERIFY_KINETO says), and print its JSON line:
    program, mode, loop_s, checksum."""
    _sync()
    start = time.perf_counter()
    kineto = os.environ.get("VERIFY_KINETO")  # "{rank}" in it becomes the process's RANK (torchrun's)
    if kineto:
        kineto = kineto.replace("{rank}", os.environ.get("RANK", "0"))
    checksum = _profiled(loop, kineto) if kineto else loop()
    _sync()
    loop_s = time.perf_counter() - start
    print(json.dumps({"program": program, "mode": args.mode, "loop_s": round(loop_s, 6),
                      "checksum": float(f"{float(checksum):.6g}")}))
    sys.stdout.flush()
