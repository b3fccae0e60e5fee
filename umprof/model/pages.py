"""Where a managed buffer's pages are, iteration by iteration: which bytes cross, and how.

For managed memory, which bytes pay which rate follows the pages: a simulation of where each
64 KiB page is (host, device, or both under READ_MOSTLY) through the first iteration and the
steady ones, with the workload's host-write, touched and host-read pages. The host writes the first
pages; it reads the first pages too (one buffer updated in place), or, for a workload whose input and
output are apart (``split``), the last ones, which the host's writes then do not bring back: on-demand
memory faults the written pages back from the GPU on every write, and managed-prefetch prefetches
them back with the pages the host reads, as its advice says (before the host reads or rewrites them).

A page's place depends on nothing but whether the host writes it, reads it and the kernel touches it,
so the simulation runs on those (at most eight) kinds of page, each weighted by how many pages are of
that kind: its cost is the same for a 64 KiB buffer and for a terabyte read as one pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from umprof.measure.ops.lifecycle import PAGE_BYTES, touched_pages
from umprof.model.workload import Workload

# Past this many pages the kinds of page are counted from the ranges the host writes and reads instead of
# from a mask per page: the masks of 19 million pages (a 1.2 TB pass) took 750 MB and seconds to build.
MASKED_PAGES = 1 << 20


def _touched_before(m: int, fraction: float) -> int:
    """How many of the first m pages ``touched_pages`` marks: page p counts when floor((p+1)·f) > floor(p·f),
    a sum that telescopes to floor(m·f) (f at most 1: no page steps the floor by more than one)."""
    return int(np.floor(np.float64(m) * fraction))


def page_kinds(n: int, n_write: int, read: tuple[int, int], touched: float, masked: bool | None = None):
    """The buffer's n pages as kinds: (write, read, touched masks, pages of each kind). The host writes
    pages [0, n_write) and reads [read[0], read[1]); the kernel touches ``touched_pages(n, touched)``.
    ``masked``: count the kinds from a mask per page (default: up to MASKED_PAGES pages)."""
    if masked if masked is not None else n <= MASKED_PAGES:
        idx = np.arange(n)
        code = (idx < n_write) * 4 + ((idx >= read[0]) & (idx < read[1])) * 2 + touched_pages(n, touched)
        kinds, counts = np.unique(code, return_counts=True)
    else:
        cuts = sorted({0, n, min(n_write, n), *(min(max(r, 0), n) for r in read)})
        by_kind: dict[int, int] = {}
        for a, b in zip(cuts, cuts[1:]):
            if b <= a:
                continue
            base = (a < n_write) * 4 + (read[0] <= a < read[1]) * 2
            hit = _touched_before(b, touched) - _touched_before(a, touched)
            for k, count in ((base + 1, hit), (base, b - a - hit)):
                if count > 0:
                    by_kind[k] = by_kind.get(k, 0) + count
        kinds, counts = np.array(sorted(by_kind), dtype=np.int64), np.array([by_kind[k] for k in sorted(by_kind)])
    return kinds >= 4, (kinds & 2) > 0, (kinds & 1) > 0, counts.astype(np.int64)


class PageSimulation:
    """Where the workload's buffer's pages are, iteration by iteration, for one kind of strategy: 'H' on
    the host, 'D' on the device, 'B' both (READ_MOSTLY's read-only copies); each entry a kind of page
    (see the module's docstring), ``count`` pages of it."""

    @dataclass
    class Step:
        first: bool
        write_remote_bytes: float = 0.0  # host-written bytes on pages that sit on the GPU
        prefetch_in_bytes: float = 0.0
        migrate_bytes: float = 0.0  # moved by the kernel's faults
        prefetch_out_bytes: float = 0.0
        read_remote_bytes: float = 0.0

    def __init__(self, w: Workload, kind: str, masked: bool | None = None):
        self.w, self.kind = w, kind
        n = max(1, w.bytes // PAGE_BYTES)
        self.n = n
        self.page_bytes = w.bytes / n
        n_write = math.ceil(w.host_writes * n - 1e-9)
        n_read = math.ceil(w.host_reads * n - 1e-9)
        read = (n - n_read, n) if w.split else (0, n_read)
        self.write, self.read, self.touched, self.count = page_kinds(n, n_write, read, w.touched, masked)

    def first(self) -> "PageSimulation.Step":
        return next(iter(self.iterations(1)))

    def _bytes(self, mask: np.ndarray) -> float:
        return float(self.count[mask].sum() * self.page_bytes)

    def iterations(self, count: int):
        """A Step per iteration: the bytes that cross, and where."""
        loc = np.full(len(self.count), "H")
        for it in range(count):
            step = PageSimulation.Step(first=it == 0)
            if self.kind in ("on-demand", "prefetch", "read-mostly"):
                on_gpu = loc != "H"
                step.write_remote_bytes = self._bytes(self.write & on_gpu)
                loc[self.write] = "H"
                if self.kind == "prefetch":
                    want = np.ones(len(loc), bool) if it == 0 else (self.write | self.read)
                    step.prefetch_in_bytes = self._bytes(want & (loc == "H"))
                    loc[want] = "D"
                faulting = self.touched & (loc == "H")
                step.migrate_bytes = self._bytes(faulting)
                loc[faulting] = "B" if self.kind == "read-mostly" else "D"
                # back to the host: what it reads, and with the input apart what it rewrites next
                back = (self.read | self.write) if self.w.split else self.read
                if self.kind == "prefetch":
                    step.prefetch_out_bytes = self._bytes(back & (loc == "D"))
                    loc[back] = "H"
                if self.kind != "read-mostly":
                    step.read_remote_bytes = self._bytes(self.read & (loc == "D"))
                    loc[self.read] = "H"
            yield step
