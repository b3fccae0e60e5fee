"""NVTX ranges in one domain, ``umprof``, so a run reads well in Nsight Systems.

Ranges nest scenario → case → phase. Each phase has its own category and color, the same
in umprof's runs and in applications annotated with this module::

    from umprof.nsight import nvtx

    with nvtx.phase("h2d"):
        cuda.memcpy_htod(dst, src)

    @nvtx.annotate("kernel")
    def step(...): ...

``umprof import-nsys`` reads these names back from a trace. Without the ``nvtx`` package
the calls do nothing, so annotated code runs anywhere.
"""

from __future__ import annotations

import functools
from contextlib import contextmanager

DOMAIN = "umprof"

# Phase names umprof understands, with one color each (0xRRGGBB).
PHASE_COLORS = {
    "alloc": 0x7F7F7F,
    "host_init": 0x8C564B,
    "h2d": 0x1F77B4,
    "prefetch": 0x17BECF,
    "kernel": 0x2CA02C,
    "d2h": 0xFF7F0E,
    "d2d": 0x9467BD,
    "host_turn": 0xDBDB8D,
    "host_read": 0xE377C2,
    "free": 0xBCBD22,
    "reset": 0xC7C7C7,
    "first": 0xAEC7E8,  # the loop op's first iteration
    "host_write": 0x98DF8A,
    "pipelined": 0xD62728,  # the overlap op's chunks on several streams, as one phase
    "both": 0xFF9896,  # bidirectional copies at once
    "latency": 0xC49C94,
    "p2p": 0x9EDAE5,  # GPU to GPU, one way
    "on_a": 0x2CA02C,  # a managed buffer touched by one GPU, then its peer, then the first again
    "on_b": 0xBCBD22,
    "back_on_a": 0x98DF8A,
}
# A range of this name holds work that is not a sample (a warm-up, the sample CUPTI counts):
# ``import-nsys`` leaves the phases inside it out, so a trace's instances are umprof's samples.
UNTIMED = "untimed"
SCOPE_COLORS = {"scenario": 0x393B79, "case": 0x637939, UNTIMED: 0xE0E0E0}
PHASES = tuple(PHASE_COLORS)

try:  # the nvtx package is optional: without it every range is a no-op
    import nvtx as _nvtx

    _domain = _nvtx.get_domain(DOMAIN)
except Exception:  # pragma: no cover - depends on the machine
    _nvtx = None
    _domain = None


def available() -> bool:
    """Whether ranges are really emitted (the ``nvtx`` package is importable)."""
    return _domain is not None


def _color(name: str, category: str | None) -> int:
    return PHASE_COLORS.get(category or name, SCOPE_COLORS.get(category or "", 0x4C4C4C))


@contextmanager
def range(message: str, category: str | None = None, color: int | None = None):
    """An NVTX push/pop range in the umprof domain (category: a phase name, 'scenario', 'case' or 'untimed')."""
    if _domain is None:
        yield
        return
    attrs = _domain.get_event_attributes(message=message, color=color if color is not None else _color(message, category),
                                         category=category)
    _domain.push_range(attrs)
    try:
        yield
    finally:
        _domain.pop_range()


def phase(name: str, detail: str | None = None):
    """A range for one phase of your own application (``h2d``, ``kernel``, ``d2h``, ...).

    The range is named ``name`` (or ``"name: detail"``) and carries ``name`` as its category,
    which is how ``umprof import-nsys`` attributes time to phases.
    """
    return range(f"{name}: {detail}" if detail else name, category=name)


def annotate(name: str, detail: str | None = None):
    """Decorator form of :func:`phase`."""

    def wrap(fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            with phase(name, detail):
                return fn(*args, **kwargs)

        return inner

    return wrap


def untimed(what: str):
    """A range around work whose phases are not samples (``untimed: warm-up``): ``umprof import-nsys``
    leaves them out of the breakdown, as umprof leaves them out of its figures."""
    return range(f"{UNTIMED}: {what}", category=UNTIMED)


def mark(message: str) -> None:
    """An instantaneous marker in the umprof domain."""
    if _domain is not None:
        _domain.mark(_domain.get_event_attributes(message=message))
