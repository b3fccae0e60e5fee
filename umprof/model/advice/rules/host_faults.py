"""The host's stalls on managed pages faulting back from the GPU, as the trace measured them (less its own slowing, and
less what the model prices of the current way's host accesses): the current way's, and kept by every way whose pages
sit on the GPU after its kernels (``keeps_stalls``)."""

from __future__ import annotations

from umprof.core.units import format_size, format_time
from umprof.model import ties
from umprof.model.advice import thresholds as th
from umprof.model.advice.changes import is_python
from umprof.model.advice.read import Reading, host_s
from umprof.model.advice.result import Limit
from umprof.model.advice.rules import Adjustment
from umprof.model.application import Application
from umprof.model.calibration import kind
from umprof.model.predict import Prediction
from umprof.model.workload import Workload

# besides on-demand managed memory (managed, prefer-gpu), the way whose pages sit on the GPU after its kernels, where
# the host's touches fault them back (keeps_stalls): accessed-by leaves pages where they are, but the GPU's access
# counters move those it keeps reading to it (a host sampling records of a managed array: 1.38-1.51x as written
# under accessed-by on all five runs that timed both, one H100's and four H200s' of 2026-11-27 and -12-01: it saved
# none of the host's stalls)
ACCESS_COUNTED = "managed-advise-accessed-by-gpu"


def keeps_stalls(strategy: str) -> bool:
    """Whether the way leaves the pages on the GPU after its kernels, so that the host's touches fault them back."""
    return kind(strategy) == "on-demand" or strategy == ACCESS_COUNTED


def adjust(app: Application, r: Reading) -> Adjustment:
    """The host's stalls as priced untraced (``fault_stall_s``): added to its time now; and every other way that keeps
    them spends at least them on its host accesses, whatever the calibration prices those at (``kept_s``)."""
    stall_s = fault_stall_s(app, r.host_now)
    ways = {p.strategy: kept_s(app, p) for p in r.ranked if p is not r.base and keeps_stalls(p.strategy)}
    return Adjustment("host_faults", seconds=stall_s, now_s=stall_s, ways={s: v for s, v in ways.items() if v > 0})


def kept_s(app: Application, p: Prediction) -> float:
    """What a way that keeps the host's stalls adds to its predicted time: the stalls as spent untraced beyond what
    the calibration prices its host accesses at (``host_s``). Where the current way's host accesses are priced above
    the stalls (a host read as rewriting the pages that come back), no stall is added to it, and the ways that keep
    them would otherwise be priced by the calibration's access pattern alone: a host sampling records of a managed
    array on an H100 was priced 83 ms of host accesses under accessed-by, against 201 ms of stalls measured."""
    return max(0.0, untraced_stalls_s(app) - host_s(p))


def fault_stall_s(app: Application, host_now: float) -> float:
    """The application's host stalls on managed pages faulting back from the GPU over its loop, as it spends them
    untraced: what its trace measured (``Application.host_faults``) times th.TRACED_FAULT_SHARE, less the current way's
    host accesses the model prices (``host_now``, which holds its priced faults); 0 where that is nothing.

    The model prices the host's faults by the bytes it reads or writes, as the calibration's loop makes them, a run
    of the buffer; a host that samples a managed array between kernels touches a word here and there, and each
    touch waits for its page alone. A host reading 2048 records of a 256 MiB array each
    step spent 2.14 s of its 3.05 s traced loop on an H200 so, where its reads were priced in microseconds and
    copies in its place measured 1.07-1.34 s faster untraced."""
    return max(0.0, untraced_stalls_s(app) - host_now)


def untraced_stalls_s(app: Application) -> float:
    """The host's stalls on managed pages faulting back, as the program spends them untraced: what its trace measured
    times th.TRACED_FAULT_SHARE."""
    return app.host_faults.seconds * th.TRACED_FAULT_SHARE


def stall_limit(app: Application, stall_s: float, keeping: list[str], kept: dict[str, float]) -> list[Limit]:
    """What the host's stalls on pages faulting back from the GPU were priced at, from what, and which ways
    (``keeping``) keep them; ``kept``: what each way that keeps them had added (``kept_s``)."""
    h = app.host_faults
    if stall_s <= 0 and not kept:
        return []
    untraced = untraced_stalls_s(app)
    priced = (f"priced at {format_time(stall_s)} beyond the host accesses already priced for its way" if stall_s > 0
              else f"priced at {format_time(untraced)}, within the host accesses already priced for its way")
    text = (f"its host waited {format_time(h.seconds)} of the traced loop on managed pages faulting back from the GPU "
            f"({h.stretches} stretches without GPU work; {app.um['cpu_faults']} CPU page faults traced): {priced} "
            f"({th.TRACED_FAULT_SHARE:.0%} of it untraced, as a traced fault measured against an untraced one on an "
            "H200); kept by the ways that leave the pages on the GPU after its kernels "
            f"({', '.join(keeping)}; accessed-by as the GPU's access counters move them there), each priced to spend "
            "at least that on its host accesses, and saved by every other")
    return [Limit("host-fault-stalls", text)]


def touches_unseen_limit(app: Application, w: Workload, stall_s: float, one_pass: bool) -> list[Limit]:
    """Where a managed loop's host is read as rewriting the pages that come back to it every iteration, and its
    stalls lie within that rewrite's price (``stall_s`` 0): a line saying that its trace cannot tell that from a host
    touching a few words of each page, and what to try then; else none.

    A CPU page fault brings back a block of pages around the touch (about 320-340 KiB a fault in every H200 trace
    of the judged programs, the host's touches sparse or dense), so a trace holds the pages that moved, not the
    words the host touched. A host reading and updating a float every 32 KiB of a 256 MiB field each step brought back
    254 MiB a step in about 760 faults, and was read as a host rewriting half its field: its copies were priced as
    moving that much, and the pick measured 21.5% and 34.5% behind copies of only the touched cells, registered in
    place, on two H200 runs of 2026-12-02, which saved 1.5-1.8 s where 0.7 s had been predicted."""
    loop = app.loop
    if one_pass or loop is None or stall_s > 0 or not ties.is_managed(app.strategy) or w.host_writes <= 0:
        return []
    back, faults = float(loop.per_iteration.get("um_d2h_bytes", 0.0)), app.um["cpu_faults"] / loop.iterations
    if back <= 0 or faults < 1:
        return []
    how = ("the array page-locked in place, one pycuda.driver.Memcpy2D each way gathering words at a stride"
           if is_python(app) else
           "the buffer page-locked with cudaHostRegister, one cudaMemcpy2D each way gathering words at a stride")
    text = (f"its host's page faults brought {format_size(back)} back an iteration (about {faults:.0f} CPU faults, "
            f"{format_size(back / faults)} each), read as the host rewriting {w.host_writes:.0%} of the buffer, as its "
            "time between kernels allows: a trace shows the pages that move, not the words the host touches; if it "
            f"touches only a few words of each, copies of only those ({how}) would save more than any way here is "
            "predicted to")
    return [Limit("sparse-touches-unseen", text)]
