"""Ops: what is measured, built from timed phases, over the axes each op declares.

The machinery (:class:`Op`, :class:`CaseRun`, :class:`RunContext`, the registry) lives in
:mod:`.base`; each module here registers its ops when imported, one family per module:
``transfer``, ``lifecycle``, ``loop``, ``um``, ``access``, ``matrix``, ``reduction``, and the
streams family (seed 003 and nvbandwidth's): ``overlap``, ``staging``, ``bidirectional``, ``latency``;
and the multi-GPU family, whose ops span the run's GPUs: ``p2p``, ``host_links``, ``um_peers``
(``legs`` times work spread over GPUs).
"""

from umprof.measure.ops import (  # noqa: E402,F401  (registration)
    access,
    bidirectional,
    host_links,
    latency,
    lifecycle,
    loop,
    matrix,
    overlap,
    p2p,
    reduction,
    staging,
    transfer,
    um,
    um_peers,
)
from umprof.measure.ops.base import CaseRun, Op, RunContext, get_op, op_names, register  # noqa: F401
