"""Probe: do the host's reads and writes of a buffer depend on how it was allocated (and backed)?

Allocates the same size several times as pinned memory (cuMemHostAlloc), as a numpy array
(pageable; numpy asks for transparent huge pages on large arrays) and as a numpy array registered
with the driver (cuMemHostRegister, through cuda-bindings), and times numpy's write (np.add into it) and read (sum) of
each allocation, with the huge pages backing it from /proc/self/smaps. One JSON line per
allocation on stdout.

    python3 scripts/probe_host_pages.py [MiB ...]     (default: 16 64)
"""

import json
import sys
import time

import numpy as np


def huge_kib(addr: int) -> int:
    """AnonHugePages of the mapping holding ``addr``, in KiB (-1 where not found)."""
    found, size = False, -1
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()[0]
            if "-" in head and not head.endswith(":"):
                lo, hi = (int(x, 16) for x in head.split("-"))
                found = lo <= addr < hi
            elif found and head == "AnonHugePages:":
                size = int(line.split()[1])
                break
    return size


def timed(a: np.ndarray, x0: np.ndarray, reps: int = 7) -> tuple[float, float]:
    """Median seconds of a write (x0 + i into a) and a read (its sum)."""
    w, r = [], []
    for i in range(reps):
        t = time.perf_counter()
        np.add(x0, np.uint32(i), out=a)
        w.append(time.perf_counter() - t)
        t = time.perf_counter()
        a.sum(dtype=np.uint64)
        r.append(time.perf_counter() - t)
    return float(np.median(w)), float(np.median(r))


def main() -> None:
    import pycuda.autoinit  # noqa: F401  (a context for the driver's allocations)
    import pycuda.driver as cuda

    from umprof.measure.gpu import check, load_bindings

    cu = load_bindings()  # pycuda's register_host_memory raises a SystemError on the lent machines

    sizes = [int(s) for s in sys.argv[1:]] or [16, 64]
    for mib in sizes:
        n = mib * 1024**2 // 4
        x0 = np.arange(n, dtype=np.uint32)
        for trial in range(6):
            for kind in ("pinned", "numpy", "registered"):
                if kind == "pinned":
                    a = cuda.pagelocked_empty(n, np.uint32)
                else:
                    a = np.empty(n, np.uint32)
                a[:] = 0  # first touch
                if kind == "registered":
                    check(cu.cuMemHostRegister(a.ctypes.data, a.nbytes, cu.CU_MEMHOSTREGISTER_DEVICEMAP))
                w, r = timed(a, x0)
                print(json.dumps({"kind": kind, "MiB": mib, "trial": trial, "write_GBps": round(mib * 2**20 / w / 1e9, 2),
                                  "read_GBps": round(mib * 2**20 / r / 1e9, 2), "huge_KiB": huge_kib(a.ctypes.data)}),
                      flush=True)
                if kind == "registered":
                    check(cu.cuMemHostUnregister(a.ctypes.data))
                del a


if __name__ == "__main__":
    main()
