"""Strategies the prediction cannot tell apart, and how they are ordered then.

Where the top strategies are predicted within the prediction's own error of the fastest, the
figures do not decide; a second criterion does, and the answer says which: the change that touches
less code (CHANGE_COST; in a Python application, PYTHON_CHANGE_COST where it differs), then the one
that pins less host memory (memory the OS can no longer page, which the user's other processes lose),
then the predicted figure.
"""

from __future__ import annotations

from umprof.measure import strategies

CRITERION = "less code to change, then less host memory pinned"
# how much code a change touches, from none (0) to restructuring the loop (4). Page-locking a buffer
# in place is one call after its malloc; write-combined memory comes after pinned (the same change,
# and a host that ever reads it reads it very slowly).
CHANGE_COST = {"pageable": 0, "pinned": 1, "pageable-registered": 1, "write-combined": 1.5, "mapped": 2,
               "zero-copy": 2, "managed": 2, "system": 2, "managed-prefetch": 3, "managed-advise-read-mostly": 3,
               "managed-advise-prefer-gpu": 3, "managed-advise-prefer-host": 3, "managed-advise-accessed-by-gpu": 3,
               "pageable-staged": 4, "pinned-pipelined": 4}
UNKNOWN_COST = 5
# In Python: pinned memory is the allocator's own call (pycuda's pagelocked_empty), while page-locking an
# existing numpy array needs cuda-bindings' cuMemHostRegister and its import (pycuda 2026.1's
# register_host_memory raised SystemError on one). A pycuda loop page-locked in place ran a median 4% longer
# than with pinned memory (0-17% over six runs on H100 and H200 machines, 2026-11-25/26; its C peers alike
# within noise).
PYTHON_CHANGE_COST = {"pageable-registered": 1.25}


# CHANGE_COST counts from a program of malloc'd buffers and copies. A program written with managed memory has
# neither: another managed way is one call per buffer (a prefetch or an advice, or taking it out), while any
# way with copies needs device buffers and the copies written, on top of that way's own change.
MANAGED_TO_MANAGED = 1
MANAGED_TO_COPIES = 2


def is_managed(strategy: str | None) -> bool:
    """Whether ``strategy`` is managed memory (cudaMallocManaged), with or without prefetch and advice; an
    application's way umprof has no strategy for ("resident", none) is not."""
    return strategy in strategies.STRATEGIES and strategies.get(strategy).managed


def change_cost(strategy: str, python: bool = False, current: str | None = None) -> float:
    """How much code the change to ``strategy`` touches (CHANGE_COST), in an application written in Python
    (``python``) PYTHON_CHANGE_COST where it differs; from ``current`` where the application is known to use
    managed memory now (MANAGED_TO_MANAGED, MANAGED_TO_COPIES)."""
    if strategy == current:
        return 0.0
    own = PYTHON_CHANGE_COST[strategy] if python and strategy in PYTHON_CHANGE_COST else \
        CHANGE_COST.get(strategy, UNKNOWN_COST)
    if is_managed(current):
        return MANAGED_TO_MANAGED if is_managed(strategy) else own + MANAGED_TO_COPIES
    return own


def pinned_bytes(strategy: str, nbytes: int) -> int:
    """Host bytes the strategy page-locks for a buffer of ``nbytes``: all of it for pinned, write-combined,
    zero-copy, mapped and registered memory, the ring's slots for a staged plan, none otherwise."""
    if strategy == "pageable-staged":
        from umprof.measure.host_cpus import usable_cpus
        from umprof.measure.staging_ring import ring_shape

        return ring_shape(nbytes, len(usable_cpus())).pinned_bytes
    st = strategies.get(strategy)
    if getattr(st, "host_flags", None) is not None or st.over_link and not st.pages_migrate:
        return int(nbytes)
    return 0


def tie_key(strategy: str, nbytes: int, cost: float) -> tuple:
    """The order among tied strategies: less code to change, less memory pinned, then the figure."""
    return (change_cost(strategy), pinned_bytes(strategy, nbytes), cost)


def tied(costs: list[tuple[str, float]], error: float) -> list[str]:
    """The strategies (``(name, cost)``, any order) within ``error`` of the fastest, fastest first."""
    if not costs:
        return []
    ranked = sorted(costs, key=lambda c: c[1])
    best = ranked[0][1]
    return [name for name, cost in ranked if cost <= best * (1 + error)]


def within(spread: float, of: str = "") -> str:
    """How far apart tied figures are, in words: 'within 3%' (``of`` after it: 'within 3% of each other'), or 'less
    than 1% apart' (never 'within 0%')."""
    return f"within {spread:.0%}{of}" if spread >= 0.005 else "less than 1% apart"


def describe(names: list[str], spread: float, figure: str = "predicted") -> str:
    """'pinned, write-combined or pageable: within 3%, predicted'."""
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
    return f"{listed}: {within(spread)}, {figure}"
