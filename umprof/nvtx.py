"""``umprof.nvtx``: the documented import for annotating an application
(``from umprof import nvtx``). The module lives in :mod:`umprof.nsight.nvtx`; this name is
that very module, so both spellings share one state."""

import sys

from umprof.nsight import nvtx as _nvtx

sys.modules[__name__] = _nvtx
