"""Ops: what is measured, built from timed phases, over the axes each op declares.

The machinery (:class:`Op`, :class:`CaseRun`, :class:`RunContext`, the registry) lives in
:mod:`.base`; each module here registers its ops when imported, one family per module:
``transfer``, ``lifecycle``, ``loop``, ``um``, ``access``, ``matrix``, ``reduction``.
"""

from umprof.measure.ops import access, lifecycle, loop, matrix, reduction, transfer, um  # noqa: E402,F401  (registration)
from umprof.measure.ops.base import CaseRun, Op, RunContext, get_op, op_names, register  # noqa: F401
