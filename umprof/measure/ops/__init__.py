"""Ops: what is measured, built from timed phases, over the axes each op declares.

The machinery (:class:`Op`, :class:`CaseRun`, :class:`RunContext`, the registry) lives in
:mod:`.base`; each module here registers its ops when imported, one family per module:
``transfer``, ``lifecycle``, ``loop``, ``um``, ``access``, ``matrix``, ``reduction``, and the
streams family (seed 003 and nvbandwidth's): ``overlap``, ``staging``, ``bidirectional``, ``latency``.
"""

from umprof.measure.ops import (  # noqa: E402,F401  (registration)
    access,
    bidirectional,
    latency,
    lifecycle,
    loop,
    matrix,
    overlap,
    reduction,
    staging,
    transfer,
    um,
)
from umprof.measure.ops.base import CaseRun, Op, RunContext, get_op, op_names, register  # noqa: F401
