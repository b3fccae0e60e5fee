"""The application's loop read as umprof's workload (the first step of the advice: read).

One buffer of its inputs and outputs (each way, what a steady iteration copies or the largest single copy, a table
copied in once; for managed memory the pages its migrations moved), the share of it written by the host and copied
in each iteration, the share copied back, what the kernels write, its copies' granularity (``copies``), its kernels'
own time per iteration (``kernel_s``, where its data was on the GPU) and its iterations. A managed program's host is
read as writing no more an iteration than comes back to it."""

from __future__ import annotations

import math
from typing import NamedTuple

from umprof.core.units import format_size, format_time
from umprof.measure.ops.lifecycle import PAGE_BYTES
from umprof.model.advice.changes import is_python
from umprof.model.application import Application, fraction
from umprof.model.workload import Workload

# the ways whose kernels read host memory in place, which a trace shows as kernels alone (no copies to measure)
IN_PLACE = ("zero-copy", "mapped")
# the ways whose kernels ran on data resident on the GPU: their traced time is their own
RESIDENT = ("pageable", "pinned", "pageable-registered", "pinned-pipelined", "managed-prefetch", "resident")


class Moved(NamedTuple):
    """What the run moves, as the workload is read from it: per steady iteration (``per``), the largest single copies
    (``big``), the iterations, whether by copies (``explicit``) and the bytes in and out that make the buffer."""
    per: dict
    big: dict
    iterations: int
    explicit: bool
    b_in: float
    b_out: float


def _moved(app: Application, one_pass: bool, one_dataset: bool) -> Moved:
    loop, um = (None if one_pass else app.loop), app.um
    if loop is not None:
        per, big, its = loop.per_iteration, loop.largest, loop.iterations
    else:
        t, c = app.totals, app.copies
        per = big = {"h2d_bytes": t["h2d_bytes"], "d2h_bytes": t["d2h_bytes"], "um_h2d_bytes": um["h2d_bytes"],
                     "um_d2h_bytes": um["d2h_bytes"], "kernel_s": t["kernel_s"],
                     "h2d_copies": int((c["direction"] == "h2d").sum()),
                     "d2h_copies": int((c["direction"] == "d2h").sum())}
        if one_dataset:
            steady = app.loop.per_iteration
            per = big = dict(per, **{k: steady.get(k, 0) for k in ("h2d_bytes", "d2h_bytes", "h2d_copies",
                                                                     "d2h_copies")})
        its = 1
    explicit = big.get("h2d_bytes", 0) + big.get("d2h_bytes", 0) > 0
    if explicit:  # what an iteration copies, or the largest single copy (a table copied in once)
        b_in, b_out = (max(per.get(f"{d}_bytes", 0), big.get(f"{d}_largest", 0)) for d in ("h2d", "d2h"))
    else:  # migrations: the pages they moved (each once), or what the first iteration migrated
        b_in, b_out = max(um.get("footprint_bytes", 0), big.get("um_h2d_bytes", 0)), 0
    return Moved(per, big, its, explicit, b_in, b_out)


def _nothing_moved(app: Application) -> str:
    if app.strategy in IN_PLACE:
        return (f"{app.strategy_why}: the trace holds no copy or migration whose bytes say how much of it the kernels "
                "read, or how often, so umprof cannot price another way from it; describe the loop to `umprof "
                "recommend` (--bytes, --reuse, --iterations) to compare them")
    return ("no copies and no unified-memory migrations: nothing moves between host and GPU; no host-memory strategy "
            "changes its time")


def _shares(m: Moved, total: int, looped: bool) -> tuple[float, float, float]:
    """The host's writes, the host's reads and the GPU's writes, each a share of the buffer an iteration."""
    prefix, per = ("" if m.explicit else "um_"), m.per
    # a run with no loop writes its data once, before it copies it: the workload's first write (setup) is that
    # write, and its one iteration writes nothing new (umprof's loop writes a new batch in every iteration)
    written = per.get(f"{prefix}h2d_bytes", 0)
    if not m.explicit and per.get("um_d2h_bytes", 0) > 0:
        # pages that come back every iteration: the host touched them, and they go out again. The host can touch no
        # more than came back (a page the kernels used is on the GPU until the host's fault brings it), so what
        # goes out beyond that is the driver moving more than the host touched (whole blocks around its faults),
        # not the host's writes: priced as such, a sparse host access reads as a rewrite of the buffer, and a way
        # that leaves the data on the host (accessed-by) as the cheapest
        written = min(written, per["um_d2h_bytes"])
    writes = min(1.0, fraction(written, total)) if looped else 0.0
    reads = min(1.0, fraction(per.get(f"{prefix}d2h_bytes", 0), total))
    gpu_writes = min(1.0, max(fraction(m.b_out, total), reads)) if m.b_out > 0 else 0.0
    if not m.explicit:
        # a page the host touched on the GPU comes back (D2H) and goes out again when the kernels touch it
        # (H2D): what comes back beyond what goes out is what the host read of the kernels' output, at least
        # a page (the result it consumes); the trace does not say which pages the kernels wrote
        reads = min(1.0, max(fraction(per.get("um_d2h_bytes", 0) - per.get("um_h2d_bytes", 0), total),
                             fraction(PAGE_BYTES, total)))
        gpu_writes = reads
    return writes, reads, gpu_writes


def workload_of(app: Application, one_pass: bool = False, one_dataset: bool = False) -> tuple[Workload | None, str]:
    """The application's loop as umprof's workload, and how it was read (see the module's docstring); None where it
    moves no data umprof can model (no copies and no managed memory), with why. ``one_pass``: the whole run as one
    pass over everything it copies, its data written before and read after (a loop whose host does not touch what it
    moves); ``one_dataset`` (with ``one_pass``): over one dataset, what its steady iteration copies each way, that
    every iteration carries out and back again unchanged, every kernel of the run working on it."""
    m = _moved(app, one_pass, one_dataset)
    if m.b_in + m.b_out <= 0:
        return None, _nothing_moved(app)
    total = max(PAGE_BYTES, math.ceil((m.b_in + m.b_out) / PAGE_BYTES) * PAGE_BYTES)
    looped = not one_pass and app.loop is not None
    writes, reads, gpu_writes = _shares(m, total, looped)
    # the copies' granularity: how many copies an iteration makes each way (the more of either)
    copies = max(1, int(round(max(m.per.get("h2d_copies", 0), m.per.get("d2h_copies", 0))))) if m.explicit else 1
    # the kernels' own time where the data was on the GPU as they ran (copies, prefetches); where they read it across
    # the link or migrated it on faults, their time is not their own
    kernel_s = float(m.per.get("kernel_s", 0.0)) if app.strategy in RESIDENT else 0.0
    # copies both ways are an input and an output: the host writes one and reads the other (split), as the buffer
    # (their sum) already counts them; managed memory's pages say nothing of it, and are read in place
    split = m.explicit and m.b_in > 0 and m.b_out > 0
    writes = round(writes, 6)
    reads = min(round(reads, 6), 1.0 - writes) if split else round(reads, 6)
    python = is_python(app)
    w = Workload(bytes=int(total), name=app.name.rsplit("/", 1)[-1] or "application", iterations=int(m.iterations),
                 host_writes=writes, gpu_writes=round(gpu_writes, 6), host_reads=reads,
                 copies=copies if app.strategy != "pinned-pipelined" else 1, kernel_s=kernel_s,
                 host_pages="numpy" if python else "malloc", first_write="stores",
                 host_reader="numpy" if python else "words", split=split)
    return w, _read_as(app, m, w, copies, total, looped, one_pass, one_dataset)


def _read_as(app: Application, m: Moved, w: Workload, copies: int, total: int, looped: bool, one_pass: bool,
             one_dataset: bool) -> str:
    """How the workload was read from the trace, in words."""
    prefix, its = ("" if m.explicit else "um_"), m.iterations
    return (f"{'copies' if m.explicit else 'unified-memory migrations'}: {format_size(m.b_in)} in and "
            f"{format_size(m.b_out)} out at most in an iteration make the buffer ({format_size(total)}); each steady "
            f"iteration moves {format_size(m.per.get(prefix + 'h2d_bytes', 0))} in and "
            f"{format_size(m.per.get(prefix + 'd2h_bytes', 0))} out"
            + (f" in {copies} copies each way" if copies > 1 else "")
            + (f"; kernels {format_time(w.kernel_s)} per iteration" if w.kernel_s else "")
            + f"; {its} iteration{'s' if its != 1 else ''}"
            + ("" if looped else ", its data written once (the first write)")
            + (f"; read as one dataset that its {app.loop.iterations} iterations carry out and back unchanged: its "
               "host does not touch the data in the loop" if one_dataset else
               f"; read as one pass over everything its {app.loop.iterations} iterations copy: its host does not "
               "touch the data in the loop" if one_pass else "")
            + ("; its pageable memory priced as a C program's malloc'd pages" if w.host_pages == "malloc" else
               "; its pageable memory priced as numpy's arrays (a Python program)")
            + "; its first write as stores word by word (a program computing its data)"
            + ("; its host's reads back word by word (compiled code's loop)" if w.host_reader == "words" else "")
            + ("; the host writes the input and reads the output apart" if w.split else ""))
