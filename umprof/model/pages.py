"""Where a managed buffer's pages are, iteration by iteration: which bytes cross, and how.

For managed memory, which bytes pay which rate follows the pages: a simulation of where each
64 KiB page is (host, device, or both under READ_MOSTLY) through the first iteration and the
steady ones, with the workload's host-write, touched and host-read pages. The host writes the first
pages; it reads the first pages too (one buffer updated in place), or, for a workload whose input and
output are apart (``split``), the last ones, which the host's writes then do not bring back: on-demand
memory faults the written pages back from the GPU on every write, and managed-prefetch prefetches
them back with the pages the host reads, as its advice says (before the host reads or rewrites them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from umprof.measure.ops.lifecycle import PAGE_BYTES, touched_pages
from umprof.measure.ops.loop import written_pages
from umprof.model.workload import Workload


class PageSimulation:
    """Where each 64 KiB page of the workload's buffer is, iteration by iteration, for one kind of
    strategy: 'H' on the host, 'D' on the device, 'B' both (READ_MOSTLY's read-only copies)."""

    @dataclass
    class Step:
        first: bool
        write_remote_bytes: float = 0.0  # host-written bytes on pages that sit on the GPU
        prefetch_in_bytes: float = 0.0
        migrate_bytes: float = 0.0  # moved by the kernel's faults
        prefetch_out_bytes: float = 0.0
        read_remote_bytes: float = 0.0

    def __init__(self, w: Workload, kind: str):
        self.w, self.kind = w, kind
        n = max(1, w.bytes // PAGE_BYTES)
        self.n = n
        self.page_bytes = w.bytes / n
        idx = np.arange(n)
        self.write = idx < math.ceil(w.host_writes * n - 1e-9)
        n_read = math.ceil(w.host_reads * n - 1e-9)
        self.read = idx >= n - n_read if w.split else idx < n_read
        self.touched = touched_pages(n, w.touched)
        touched_list = np.flatnonzero(self.touched)
        self.gpu_written = np.zeros(n, dtype=bool)
        self.gpu_written[touched_list[:written_pages(len(touched_list), w.gpu_writes)]] = True

    def first(self) -> "PageSimulation.Step":
        return next(iter(self.iterations(1)))

    def iterations(self, count: int):
        """A Step per iteration: the bytes that cross, and where."""
        loc = np.full(self.n, "H")
        pb = self.page_bytes
        for it in range(count):
            step = PageSimulation.Step(first=it == 0)
            if self.kind in ("on-demand", "prefetch", "read-mostly"):
                on_gpu = loc != "H"
                step.write_remote_bytes = float((self.write & on_gpu).sum() * pb)
                loc[self.write] = "H"
                if self.kind == "prefetch":
                    want = np.ones(self.n, bool) if it == 0 else (self.write | self.read)
                    step.prefetch_in_bytes = float((want & (loc == "H")).sum() * pb)
                    loc[want] = "D"
                faulting = self.touched & (loc == "H")
                step.migrate_bytes = float(faulting.sum() * pb)
                loc[faulting] = "B" if self.kind == "read-mostly" else "D"
                # back to the host: what it reads, and with the input apart what it rewrites next
                back = (self.read | self.write) if self.w.split else self.read
                if self.kind == "prefetch":
                    step.prefetch_out_bytes = float((back & (loc == "D")).sum() * pb)
                    loc[back] = "H"
                if self.kind != "read-mostly":
                    step.read_remote_bytes = float((self.read & (loc == "D")).sum() * pb)
                    loc[self.read] = "H"
            yield step
