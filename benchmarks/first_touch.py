"""The first write and the page-locking of pageable memory, by how its pages are backed: numpy's arrays
(numpy advises the kernel to back large ones with huge pages) against memory with 4 KiB pages, as a C
program's malloc'd buffers get on a host whose transparent huge pages are given only where advised.

    python3 benchmarks/first_touch.py [--mib 1024] [--reps 5] [--json OUT.json]

For each backing, ``--reps`` times on a fresh buffer: the first write of the whole buffer (the host's
fill) and its free, and cuMemHostRegister of an untouched buffer (the driver faults its pages in and pins
them, as `pageable-registered` and `mapped` memory do) followed by the write of the registered pages, the
unregistration and the free. Both buffers are made as umprof makes pageable memory (`strategies.pageable_empty`:
a Python program's is numpy's, a C program's malloc's); the table says what each costs on this host. Needs a GPU
(pycuda) for the registration.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from umprof.measure.strategies import pageable_empty  # noqa: E402

THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")


def _buffer(nbytes: int, huge: bool) -> np.ndarray:
    """A fresh, untouched buffer as umprof backs pageable memory: a numpy array (huge pages advised) or a
    C program's malloc'd pages (a mapping of its own with no advice: 4 KiB pages where the host gives huge
    pages only where advised)."""
    return pageable_empty(nbytes, "numpy" if huge else "malloc")


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def _released(holder: list) -> float:
    """The time to give the buffer in ``holder`` back to the kernel (its last reference dropped: free(),
    which unmaps a buffer this large)."""
    t = time.perf_counter()
    holder.clear()
    return time.perf_counter() - t


def _first_write(nbytes: int, huge: bool) -> tuple[float, float]:
    """The host's first write of a fresh buffer, and its free."""
    a = [_buffer(nbytes, huge)]
    return _timed(lambda: a[0].fill(1)), _released(a)


def _registered(session, nbytes: int, huge: bool) -> tuple[float, float, float, float]:
    """A fresh, untouched buffer registered in place as umprof registers it (its pages faulted in and
    pinned by the driver), written, unregistered and freed: the four times."""
    b = [_buffer(nbytes, huge)]
    ptr = b[0].ctypes.data
    register = _timed(lambda: session.host_register(ptr, nbytes))
    write = _timed(lambda: b[0].fill(2))
    unregister = _timed(lambda: session.host_unregister(ptr))
    return register, write, unregister, _released(b)


def measure(nbytes: int, reps: int, session) -> dict:
    """Per backing, the medians over ``reps`` fresh buffers (see the module's docstring)."""
    out = {}
    for backing, huge in (("numpy (huge pages advised)", True), ("4 KiB pages (as malloc'd)", False)):
        # one buffer written, then another registered, rep by rep (as the committed results were measured)
        runs = [(*_first_write(nbytes, huge), *_registered(session, nbytes, huge)) for _ in range(reps)]
        first, freed, register, written, unregister, registered_freed = zip(*runs)
        out[backing] = {k: statistics.median(v) for k, v in
                        (("first_write_s", first), ("free_s", freed), ("register_s", register),
                         ("registered_write_s", written), ("unregister_s", unregister),
                         ("registered_free_s", registered_freed))}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mib", type=int, default=1024, help="each buffer's size in MiB (default: 1024)")
    ap.add_argument("--reps", type=int, default=5, help="fresh buffers per backing and measure (default: 5)")
    ap.add_argument("--json", type=Path, default=None, help="also write the medians, the GPU and the host here")
    a = ap.parse_args()
    from umprof.core.errors import GpuUnavailable
    from umprof.measure.gpu import identify, open_session

    try:
        session = open_session(0)
    except GpuUnavailable as e:  # one line and its exit code (3: a tool missing), as umprof's commands say it
        print(f"first_touch: {e}", file=sys.stderr)
        raise SystemExit(e.exit_code) from None
    try:
        res = measure(a.mib * 2**20, a.reps, session)
    finally:
        session.close()
    doc = {"gpu": identify(0).get("name"), "host": platform.node(), "date": time.strftime("%Y-%m-%d"),
           "transparent_hugepage": THP.read_text().strip() if THP.exists() else None, "mib": a.mib, "reps": a.reps,
           "median_s": res}
    print(f"{doc['gpu']}, {a.mib} MiB, median of {a.reps}; transparent_hugepage: {doc['transparent_hugepage']}")
    print(f"{'backing':28s} {'first write':>12s} {'free':>7s} {'register':>10s} {'then write':>11s} {'unregister':>11s} "
          f"{'free':>7s}")
    for backing, r in res.items():
        print(f"{backing:28s} {r['first_write_s']:11.3f}s {r['free_s']:6.3f}s {r['register_s']:9.3f}s "
              f"{r['registered_write_s']:10.3f}s {r['unregister_s']:10.3f}s {r['registered_free_s']:6.3f}s")
    if a.json:
        a.json.write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
